// Main-thread side of graph layout: a promise API over the Graphviz worker,
// with a result cache keyed by (dot, rankdir), cancellation of requests nobody
// waits for any more, and an in-process fallback where Workers do not exist
// (vitest under node) or fail to start.

import type { LayoutRequest, LayoutResponse } from './layout.worker';

/** Direction of rank flow: left to right, or top to bottom. */
export type Rankdir = 'LR' | 'TB';

/** The direction a graph is first shown in. */
export const DEFAULT_RANKDIR: Rankdir = 'TB';

export interface LayoutOptions {
  /** Aborting rejects the promise with an `AbortError` and, when no other
   * caller waits for the same layout, drops or stops the work. */
  signal?: AbortSignal;
}

/** Something that turns DOT text into SVG markup, one request at a time. */
export interface LayoutEngine {
  render(dot: string): Promise<string>;
  /** Stops the render in progress, if any; its promise may then never settle. */
  cancel(): void;
}

/**
 * Returns `dot` with `rankdir=<rankdir>` set on the root graph.
 *
 * The statement is appended just before the root graph's closing brace:
 * Graphviz keeps the last value assigned to a graph attribute, so this wins
 * over a `rankdir` the workflow sets itself (`graph [rankdir=LR]`), which a
 * statement placed after the opening brace would not. Braces inside strings,
 * HTML labels and comments are skipped. Text without a graph body is returned
 * unchanged so that Graphviz reports the syntax error.
 */
export function withRankdir(dot: string, rankdir: Rankdir): string {
  const body = rootBody(dot);
  if (!body) return dot;
  return `${dot.slice(0, body.close)}\nrankdir=${rankdir};\n${dot.slice(body.close)}`;
}

/**
 * The font Graphviz sizes labels with. Graphviz (in wasm) cannot ask the
 * browser how wide a text is: it estimates from built-in metrics of the font
 * it is told, and its default (Times) draws about a quarter wider than
 * estimated once the browser substitutes a serif it has. graph.css draws
 * every label in this family (or a fallback at most as wide), smaller than
 * `LABEL_FONT_SIZE` (12 to 13 px against 14), so a label, bold when its edge
 * was taken, always fits in the space Graphviz left for it.
 */
export const LABEL_FONT = 'DejaVu Sans';
/** The size Graphviz measures labels at; graph.css draws them smaller. */
export const LABEL_FONT_SIZE = 14;

/**
 * Space between neighbours in a rank, in inches (Graphviz's default is 0.25).
 * Edge labels are laid out as nodes of their own, so this is also what keeps
 * two labels, or a label and the next edge, apart on a small graph.
 */
export const NODE_SEP = 0.4;

/**
 * Returns `dot` with the view's layout defaults set first thing in the root
 * graph: node and edge labels in `LABEL_FONT` at `LABEL_FONT_SIZE`, and
 * `NODE_SEP`. A workflow setting its own `fontname`, `fontsize` or `nodesep`
 * still wins, as later statements do. Text without a graph body is returned
 * unchanged.
 */
export function withLayoutDefaults(dot: string): string {
  const body = rootBody(dot);
  if (!body) return dot;
  const font = `fontname="${LABEL_FONT}", fontsize=${LABEL_FONT_SIZE}`;
  const at = body.open + 1;
  return `${dot.slice(0, at)}\ngraph [nodesep=${NODE_SEP}]; node [${font}]; edge [${font}];\n${dot.slice(at)}`;
}

/**
 * Indexes of the `{` and `}` around the first top-level graph body, or null.
 * Braces inside strings, HTML labels and comments are skipped.
 */
function rootBody(dot: string): { open: number; close: number } | null {
  let open = -1;
  let depth = 0;
  let i = 0;
  const n = dot.length;
  let lineStart = true;
  while (i < n) {
    const c = dot[i];
    if (c === '"') {
      i += 1;
      while (i < n && dot[i] !== '"') i += dot[i] === '\\' ? 2 : 1;
      i += 1;
    } else if (c === '<') {
      // HTML-like label: angle brackets nest.
      let angle = 0;
      do {
        if (dot[i] === '<') angle += 1;
        else if (dot[i] === '>') angle -= 1;
        i += 1;
      } while (i < n && angle > 0);
    } else if (c === '/' && dot[i + 1] === '/') {
      while (i < n && dot[i] !== '\n') i += 1;
    } else if (c === '/' && dot[i + 1] === '*') {
      const close = dot.indexOf('*/', i + 2);
      i = close < 0 ? n : close + 2;
    } else if (c === '#' && lineStart) {
      // C-preprocessor output lines are comments in DOT.
      while (i < n && dot[i] !== '\n') i += 1;
    } else {
      if (c === '{') {
        if (depth === 0 && open < 0) open = i;
        depth += 1;
      } else if (c === '}') {
        depth -= 1;
        if (depth === 0 && open >= 0) return { open, close: i };
      }
      i += 1;
    }
    const prev = dot[i - 1];
    lineStart = prev === '\n' || (lineStart && (prev === ' ' || prev === '\t'));
  }
  return null;
}

function abortError(): DOMException {
  return new DOMException('The layout request was aborted', 'AbortError');
}

/** True for the rejection a cancelled `layout` call produces. */
export function isAbortError(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError';
}

interface Waiter {
  resolve(svg: string): void;
  reject(e: unknown): void;
}

interface Job {
  key: string;
  source: string;
  waiters: Set<Waiter>;
  cancelled: boolean;
}

/** How many finished layouts are kept; a run view needs few (two rankdirs,
 * a graph or two), and a 600-node SVG is about half a megabyte. */
const CACHE_LIMIT = 12;

/**
 * Queues layout requests onto one engine. Identical requests share one render;
 * finished results are cached (least recently used dropped first).
 */
export class LayoutClient {
  private readonly cache = new Map<string, string>();
  private readonly jobs = new Map<string, Job>();
  private readonly queue: Job[] = [];
  private running: Job | null = null;

  constructor(private readonly engine: LayoutEngine) {}

  layout(dot: string, rankdir: Rankdir, { signal }: LayoutOptions = {}): Promise<string> {
    const key = `${rankdir}\n${dot}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      this.cache.delete(key);
      this.cache.set(key, cached);
      return Promise.resolve(cached);
    }
    if (signal?.aborted) return Promise.reject(abortError());

    let job = this.jobs.get(key);
    if (!job) {
      job = { key, source: withRankdir(withLayoutDefaults(dot), rankdir), waiters: new Set(), cancelled: false };
      this.jobs.set(key, job);
      this.queue.push(job);
    }
    const current = job;
    return new Promise<string>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      current.waiters.add(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          if (!current.waiters.delete(waiter)) return;
          reject(abortError());
          if (current.waiters.size === 0) this.cancel(current);
        },
        { once: true },
      );
      this.pump();
    });
  }

  private cancel(job: Job): void {
    job.cancelled = true;
    this.jobs.delete(job.key);
    const queued = this.queue.indexOf(job);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (this.running === job) {
      this.running = null;
      this.engine.cancel();
      this.pump();
    }
  }

  private pump(): void {
    if (this.running) return;
    const job = this.queue.shift();
    if (!job) return;
    this.running = job;
    this.engine.render(job.source).then(
      (svg) => this.finish(job, (w) => w.resolve(svg), svg),
      (e: unknown) => this.finish(job, (w) => w.reject(e)),
    );
  }

  private finish(job: Job, settle: (w: Waiter) => void, svg?: string): void {
    if (job.cancelled) return;
    this.jobs.delete(job.key);
    if (this.running === job) this.running = null;
    if (svg !== undefined) {
      this.cache.set(job.key, svg);
      if (this.cache.size > CACHE_LIMIT) {
        const oldest = this.cache.keys().next();
        if (!oldest.done) this.cache.delete(oldest.value);
      }
    }
    for (const w of job.waiters) settle(w);
    this.pump();
  }
}

/** Runs Graphviz on the calling thread (loaded on first use). */
export function inProcessEngine(): LayoutEngine {
  return {
    render: async (dot) => (await import('./renderDot')).renderDot(dot),
    // A synchronous wasm call cannot be interrupted; the client ignores its result.
    cancel: () => {},
  };
}

/**
 * How long the layout worker may sit idle before it is ended. Its Graphviz
 * keeps the WebAssembly memory of the largest graph it laid out for as long
 * as it lives (WebAssembly memory never shrinks), in a web process that
 * holds most of the app's memory (docs/performance.md). A minute covers
 * going back and forth between runs; after that, the next graph pays
 * Graphviz's start again (about half a second, beside the run's own reads).
 */
export const WORKER_IDLE_MS = 60_000;

/**
 * Runs Graphviz in a dedicated worker. Cancelling terminates the worker (the
 * wasm call is synchronous and cannot be interrupted otherwise); the next
 * render starts a fresh one, as it does after the worker was ended for being
 * idle `idleMs`. If the worker script cannot be started at all, it switches
 * for good to `fallback`.
 */
export function workerEngine(
  spawn: () => Worker,
  fallback: () => LayoutEngine = inProcessEngine,
  idleMs: number = WORKER_IDLE_MS,
): LayoutEngine {
  let worker: Worker | null = null;
  let idle: ReturnType<typeof setTimeout> | null = null;
  let inProcess: LayoutEngine | null = null;
  let nextId = 1;
  let pending: { id: number; resolve(svg: string): void; reject(e: unknown): void; dot: string } | null =
    null;

  const useFallback = () => {
    inProcess ??= fallback();
    worker?.terminate();
    worker = null;
    const p = pending;
    pending = null;
    if (p) inProcess.render(p.dot).then(p.resolve, p.reject);
  };

  // The client sends the next render as soon as one settles, so a worker
  // with nothing pending when the timer fires has been idle all along.
  const endWhenIdle = () => {
    if (idle !== null) clearTimeout(idle);
    idle = setTimeout(() => {
      idle = null;
      if (pending) return;
      worker?.terminate();
      worker = null;
    }, idleMs);
  };

  const start = (): Worker | null => {
    let w: Worker;
    try {
      w = spawn();
    } catch {
      return null;
    }
    w.onmessage = (event: MessageEvent<LayoutResponse>) => {
      const msg = event.data;
      if (!pending || msg.id !== pending.id) return;
      const p = pending;
      pending = null;
      endWhenIdle();
      if ('svg' in msg) p.resolve(msg.svg);
      else p.reject(new Error(msg.error));
    };
    // Fires when the script cannot be loaded or evaluated; render errors come
    // back as messages instead.
    w.onerror = (event) => {
      event.preventDefault();
      useFallback();
    };
    return w;
  };

  return {
    render(dot) {
      if (inProcess) return inProcess.render(dot);
      if (idle !== null) {
        clearTimeout(idle);
        idle = null;
      }
      worker ??= start();
      if (!worker) {
        inProcess = fallback();
        return inProcess.render(dot);
      }
      const id = nextId++;
      const w = worker;
      return new Promise<string>((resolve, reject) => {
        pending = { id, resolve, reject, dot };
        const request: LayoutRequest = { id, dot };
        w.postMessage(request);
      });
    },
    cancel() {
      if (inProcess) return;
      if (pending) {
        worker?.terminate();
        worker = null;
        pending = null;
      }
    },
  };
}

let shared: LayoutClient | undefined;

function sharedClient(): LayoutClient {
  shared ??= new LayoutClient(
    typeof Worker === 'function'
      ? workerEngine(
          () => new Worker(new URL('./layout.worker.ts', import.meta.url), { type: 'module' }),
        )
      : inProcessEngine(),
  );
  return shared;
}

/**
 * Lays out `dot` in direction `rankdir` and resolves with the SVG markup.
 * Work runs in a Web Worker when the platform has them, in process otherwise.
 * Results are cached by (dot, rankdir). Rejects with Graphviz's message on
 * invalid DOT, and with an `AbortError` (see `isAbortError`) when `signal`
 * aborts first.
 */
export function layout(dot: string, rankdir: Rankdir, options?: LayoutOptions): Promise<string> {
  return sharedClient().layout(dot, rankdir, options);
}

/**
 * Starts the layout worker and its Graphviz ahead of need (the app calls it
 * once the runs list is up): instantiating the WebAssembly made the first
 * run opened after start lay its graph out about a second later than the
 * next ones (docs/performance.md). Lays out an empty graph; never rejects.
 */
export function warmLayout(): Promise<void> {
  return layout('digraph warm {}', 'TB').then(
    () => {},
    () => {},
  );
}

/**
 * Starts laying out `dot` in the default direction before a view needs it,
 * so the graph can appear as soon as its screen does (the run screen calls
 * this when the run's view arrives, while its events are still being read).
 * The result waits in the cache; never rejects.
 */
export function prefetchLayout(dot: string): void {
  if (dot) layout(dot, DEFAULT_RANKDIR).catch(() => {});
}
