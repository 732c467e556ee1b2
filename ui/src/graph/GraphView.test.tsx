// @vitest-environment happy-dom
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { SAMPLE_STATES, SAMPLE_TAKEN_EDGES, SAMPLE_VISITS, SAMPLE_WORKFLOW } from './fixtures';
import { GraphView, type GraphViewProps } from './GraphView';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
let host: HTMLDivElement;

afterEach(() => {
  act(() => root?.unmount());
  host?.remove();
});

const props: GraphViewProps = {
  dot: SAMPLE_WORKFLOW,
  states: SAMPLE_STATES,
  visits: SAMPLE_VISITS,
  takenEdges: SAMPLE_TAKEN_EDGES,
};

async function render(p: GraphViewProps) {
  host = document.createElement('div');
  document.body.append(host);
  root = createRoot(host);
  act(() => root?.render(<GraphView {...p} />));
  await until(() => host.querySelector('svg g.node') !== null);
}

/** Lets time pass inside act (the layout resolves asynchronously) until `ready`. */
async function until(ready: () => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the graph');
    await act(() => new Promise((resolve) => setTimeout(resolve, 10)));
  }
}

const q = (sel: string) => host.querySelector(sel);

describe('GraphView', () => {
  it('lays out the workflow and decorates it', async () => {
    await render(props);
    expect(q('g.node[data-node-id="review"]')?.getAttribute('data-state')).toBe('failed');
    expect(q('g.node[data-node-id="implement"] .wf-badge')?.textContent).toBe('implement@2');
    expect(host.querySelectorAll('g.edge[data-taken]')).toHaveLength(SAMPLE_TAKEN_EDGES.length);
  });

  it('re-decorates on a state change without laying out again', async () => {
    await render(props);
    const svg = q('svg');
    act(() => root?.render(<GraphView {...props} states={{ ...SAMPLE_STATES, review: 'succeeded' }} />));
    expect(q('svg')).toBe(svg);
    expect(q('g.node[data-node-id="review"]')?.getAttribute('data-state')).toBe('succeeded');
  });

  it('zoom buttons scale the canvas within the 0.1–8 clamp', async () => {
    await render(props);
    const canvas = q('[data-testid=graph-canvas]') as HTMLElement;
    const zoomIn = q('[data-testid=graph-zoom-in]') as HTMLButtonElement;
    for (let i = 0; i < 40; i += 1) act(() => zoomIn.click());
    expect(canvas.style.transform).toContain('scale(8)');
    expect(zoomIn.disabled).toBe(true);
  });

  it('selects a node activated from the keyboard', async () => {
    const onSelectNode = vi.fn();
    await render({ ...props, onSelectNode });
    const approve = q('g.node[data-node-id="approve"]');
    expect(approve?.getAttribute('tabindex')).toBe('0');
    act(() => {
      approve?.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    });
    expect(onSelectNode).toHaveBeenCalledWith('approve');
  });

  it('says why when the DOT cannot be laid out', async () => {
    host = document.createElement('div');
    document.body.append(host);
    root = createRoot(host);
    act(() => root?.render(<GraphView {...props} dot="digraph { a -> ; }" />));
    await until(() => q('[role=alert]') !== null);
    expect(q('[role=alert]')?.textContent).toMatch(/syntax error/);
  });
});
