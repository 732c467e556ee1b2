import { describe, expect, it } from 'vitest';

import type { Timeline, TimelineBar } from './derive';
import { runActionOf, stageOrder, stepStage } from './shortcuts';

const bar = (node: string, visit: number, start: number, attempt = 1): TimelineBar => ({
  node,
  visit,
  attempt,
  status: 'succeeded',
  start,
  end: start + 1,
  open: false,
  ticks: [],
});

describe('stage order', () => {
  it('orders visits by their first attempt, across lanes, the main line first on a tie', () => {
    const timeline: Timeline = {
      start: 0,
      end: 10,
      lanes: [
        { branch: null, bars: [bar('start', 1, 0), bar('fan', 1, 1), bar('join', 1, 6), bar('fan', 2, 8)] },
        { branch: 'a', bars: [bar('lint', 1, 2), bar('lint', 1, 3, 2)] },
        { branch: 'b', bars: [bar('test', 1, 1)] },
      ],
    };
    expect(stageOrder(timeline)).toEqual([
      { node: 'start', visit: 1 },
      { node: 'fan', visit: 1 },
      { node: 'test', visit: 1 },
      { node: 'lint', visit: 1 },
      { node: 'join', visit: 1 },
      { node: 'fan', visit: 2 },
    ]);
  });
});

describe('stepping between stages', () => {
  const order = [
    { node: 'a', visit: 1 },
    { node: 'b', visit: 1 },
    { node: 'a', visit: 2 },
  ];

  it('goes to the next and previous visit, and stays at either end', () => {
    expect(stepStage(order, { node: 'b', visit: 1 }, 1)).toEqual({ node: 'a', visit: 2 });
    expect(stepStage(order, { node: 'b', visit: 1 }, -1)).toEqual({ node: 'a', visit: 1 });
    expect(stepStage(order, { node: 'a', visit: 2 }, 1)).toBeNull();
    expect(stepStage(order, { node: 'a', visit: 1 }, -1)).toBeNull();
  });

  it('starts at the first (next) or the last (previous) from nothing or a stage that has not run', () => {
    expect(stepStage(order, null, 1)).toEqual({ node: 'a', visit: 1 });
    expect(stepStage(order, { node: 'later', visit: 1 }, -1)).toEqual({ node: 'a', visit: 2 });
    expect(stepStage([], null, 1)).toBeNull();
  });
});

describe('run keys', () => {
  it('opens the stage tabs with 1 to 6 and the run bar tabs with 7, 8, 9 and 0', () => {
    expect(['1', '2', '3', '4', '5', '6'].map(runActionOf)).toEqual([
      'stage:transcript',
      'stage:output',
      'stage:files',
      'stage:artifacts',
      'stage:routing',
      'stage:context',
    ]);
    expect(['7', '8', '9', '0'].map(runActionOf)).toEqual(['bar:timeline', 'bar:events', 'bar:retro', 'bar:cost']);
  });

  it('maps j, k, the arrows, g, / and ? and nothing else', () => {
    expect(['j', 'ArrowDown', 'k', 'ArrowUp', 'g', '/', '?'].map(runActionOf)).toEqual(['next', 'next', 'previous', 'previous', 'graph', 'search', 'help']);
    expect(runActionOf('J')).toBeNull();
    expect(runActionOf('toString')).toBeNull();
  });
});
