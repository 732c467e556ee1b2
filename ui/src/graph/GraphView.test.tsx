// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it, vi } from 'vitest';

import { renderNow, rerender, until } from '../render.test-helper';
import { SAMPLE_STATES, SAMPLE_TAKEN_EDGES, SAMPLE_VISITS, SAMPLE_WORKFLOW } from './fixtures';
import { GraphView, type GraphViewProps } from './GraphView';

let host: HTMLElement;

const props: GraphViewProps = {
  dot: SAMPLE_WORKFLOW,
  states: SAMPLE_STATES,
  visits: SAMPLE_VISITS,
  takenEdges: SAMPLE_TAKEN_EDGES,
};

async function render(p: GraphViewProps) {
  host = renderNow(<GraphView {...p} />);
  // The layout resolves asynchronously.
  await until(() => host.querySelector('svg g.node') !== null);
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
    rerender(<GraphView {...props} states={{ ...SAMPLE_STATES, review: 'succeeded' }} />);
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
    host = renderNow(<GraphView {...props} dot="digraph { a -> ; }" />);
    await until(() => q('[role=alert]') !== null);
    expect(q('[role=alert]')?.textContent).toMatch(/syntax error/);
  });
});
