// @vitest-environment happy-dom
import { beforeAll, describe, expect, it } from 'vitest';

import { decorate, indexSvg, splitEdgeTitle, type GraphIndex } from './decorate';
import { SAMPLE_STATES, SAMPLE_TAKEN_EDGES, SAMPLE_VISITS, SAMPLE_WORKFLOW } from './fixtures';
import { layout } from './layout';

let markup: string;

beforeAll(async () => {
  markup = await layout(SAMPLE_WORKFLOW, 'TB');
});

function mount(): { svg: SVGSVGElement; index: GraphIndex } {
  const host = document.createElement('div');
  host.innerHTML = markup;
  const svg = host.querySelector('svg');
  if (!svg) throw new Error('no svg');
  return { svg, index: indexSvg(svg) };
}

const node = (svg: Element, id: string) => {
  const g = svg.querySelector(`g.node[data-node-id="${id}"]`);
  if (!g) throw new Error(`no node ${id}`);
  return g;
};
const edge = (svg: Element, title: string) =>
  [...svg.querySelectorAll('g.edge')].find((g) => g.querySelector('title')?.textContent === title);

const sample = { states: SAMPLE_STATES, visits: SAMPLE_VISITS, takenEdges: SAMPLE_TAKEN_EDGES };

describe('indexSvg', () => {
  it('finds every node and edge of the workflow by the ids in their titles', () => {
    const { index } = mount();
    expect([...index.nodes.keys()].sort()).toEqual(
      ['approve', 'docs', 'exit', 'fan_in', 'fan_out', 'implement', 'plan', 'publish', 'review', 'start', 'tests'],
    );
    expect(index.edges.get('review\u0000implement')).toHaveLength(1);
    expect(index.edges.size).toBe(14);
  });
});

describe('decorate', () => {
  it('gives each node its latest state as data-state and class, pending by default', () => {
    const { svg, index } = mount();
    decorate(index, svg, sample);
    expect(node(svg, 'review').getAttribute('data-state')).toBe('failed');
    expect(node(svg, 'review').classList.contains('wf-state-failed')).toBe(true);
    expect(node(svg, 'approve').getAttribute('data-state')).toBe('waiting');
    expect(node(svg, 'exit').getAttribute('data-state')).toBe('pending');
  });

  it('marks state with a glyph as well as colour, and none for pending', () => {
    const { svg, index } = mount();
    decorate(index, svg, sample);
    expect(node(svg, 'review').querySelector('.wf-glyph text')?.textContent).toBe('✕');
    expect(node(svg, 'tests').querySelector('.wf-glyph text')?.textContent).toBe('✓');
    expect(node(svg, 'exit').querySelector('.wf-glyph')).toBeNull();
    expect(node(svg, 'review').getAttribute('aria-label')).toBe('review: Failed');
  });

  it('shows a node@n badge only from the second visit', () => {
    const { svg, index } = mount();
    decorate(index, svg, sample);
    expect(node(svg, 'implement').querySelector('.wf-badge')?.textContent).toBe('implement@2');
    expect(node(svg, 'plan').querySelector('.wf-badge')).toBeNull();
    expect(node(svg, 'implement').getAttribute('aria-label')).toBe('implement: Retrying, visit 2');
  });

  it('highlights exactly the edges the run took', () => {
    const { svg, index } = mount();
    decorate(index, svg, sample);
    expect(edge(svg, 'review->implement')?.getAttribute('data-taken')).toBe('true');
    expect(edge(svg, 'fan_out->docs')?.getAttribute('data-taken')).toBe('true');
    expect(edge(svg, 'review->approve')?.hasAttribute('data-taken')).toBe(false);
    expect(svg.querySelectorAll('g.edge[data-taken]')).toHaveLength(SAMPLE_TAKEN_EDGES.length);
    expect(svg.hasAttribute('data-has-taken')).toBe(true);
  });

  it('updates in place when the run moves on, leaving no stale marks', () => {
    const { svg, index } = mount();
    decorate(index, svg, sample);
    decorate(index, svg, {
      states: { ...SAMPLE_STATES, review: 'running', implement: 'succeeded' },
      visits: { ...SAMPLE_VISITS, implement: 3, review: 2 },
      takenEdges: [['start', 'plan']],
    });
    const review = node(svg, 'review');
    expect(review.getAttribute('data-state')).toBe('running');
    expect(review.classList.contains('wf-state-failed')).toBe(false);
    expect(review.querySelectorAll('.wf-glyph')).toHaveLength(1);
    expect(review.querySelector('.wf-glyph text')?.textContent).toBe('▶');
    expect(node(svg, 'implement').querySelectorAll('.wf-badge')).toHaveLength(1);
    expect(node(svg, 'implement').querySelector('.wf-badge')?.textContent).toBe('implement@3');
    expect(review.querySelector('.wf-badge')?.textContent).toBe('review@2');
    expect(svg.querySelectorAll('g.edge[data-taken]')).toHaveLength(1);
  });

  it('ignores state for ids that are not in the graph', () => {
    const { svg, index } = mount();
    expect(() =>
      decorate(index, svg, { states: { ghost: 'failed' }, visits: { ghost: 4 }, takenEdges: [['ghost', 'start']] }),
    ).not.toThrow();
    expect(svg.querySelectorAll('g.edge[data-taken]')).toHaveLength(0);
  });

  it('strips link targets a workflow could put on nodes', async () => {
    const host = document.createElement('div');
    host.innerHTML = await layout('digraph { a [URL="javascript:alert(1)"] }', 'TB');
    const svg = host.querySelector('svg');
    if (!svg) throw new Error('no svg');
    indexSvg(svg);
    for (const a of svg.querySelectorAll('a')) {
      expect(a.getAttribute('href')).toBeNull();
      expect(a.getAttribute('xlink:href')).toBeNull();
    }
  });
});

describe('splitEdgeTitle', () => {
  const ids = new Set(['a', 'b', 'x:y']);
  it('strips ports and compass points', () => {
    expect(splitEdgeTitle('a:out:e->b:w', ids)).toEqual(['a', 'b']);
  });
  it('keeps ids that contain a colon', () => {
    expect(splitEdgeTitle('x:y->a', ids)).toEqual(['x:y', 'a']);
  });
  it('reads undirected edges', () => {
    expect(splitEdgeTitle('a--b', ids)).toEqual(['a', 'b']);
  });
});
