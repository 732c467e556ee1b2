// Web Worker that runs Graphviz off the main thread. Protocol: the page posts
// `LayoutRequest`s one at a time (the client in layout.ts queues), the worker
// answers each with a `LayoutResponse` carrying the same id. Cancelling a
// running layout means terminating the worker; there is no cancel message.

import { renderDot } from './renderDot';

export interface LayoutRequest {
  id: number;
  /** Complete DOT source, rankdir already applied. */
  dot: string;
}

export type LayoutResponse = { id: number; svg: string } | { id: number; error: string };

interface WorkerScope {
  onmessage: ((event: MessageEvent<LayoutRequest>) => void) | null;
  postMessage(message: LayoutResponse): void;
}

const scope = self as unknown as WorkerScope;

scope.onmessage = (event) => {
  const { id, dot } = event.data;
  renderDot(dot).then(
    (svg) => scope.postMessage({ id, svg }),
    (e: unknown) => scope.postMessage({ id, error: e instanceof Error ? e.message : String(e) }),
  );
};
