// @vitest-environment happy-dom
import { beforeEach, describe, expect, it } from 'vitest';

import { BAR_HEIGHT, DEFAULT_LAYOUT, GRAPH_WIDTH, readLayout } from './layout';

const set = (values: Record<string, string>) => {
  for (const [k, v] of Object.entries(values)) window.localStorage.setItem(`weft.layout.run.${k}`, v);
};

beforeEach(() => window.localStorage.clear());

describe('the run screen layout in localStorage', () => {
  it('is the default when nothing is stored', () => {
    expect(readLayout()).toEqual(DEFAULT_LAYOUT);
  });

  it('reads back valid values', () => {
    set({ graphWidth: '640', barHeight: '200', graphCollapsed: 'true', barCollapsed: 'true', stageTab: 'routing', barTab: 'cost' });
    expect(readLayout()).toEqual({ graphWidth: 640, barHeight: 200, graphCollapsed: true, barCollapsed: true, stageTab: 'routing', barTab: 'cost' });
  });

  it('falls back to the default for each garbage or hostile value', () => {
    set({
      graphWidth: '1e9',
      barHeight: '-5',
      graphCollapsed: 'yes',
      barCollapsed: '{"x":1}',
      stageTab: '__proto__',
      barTab: 'toString',
    });
    expect(readLayout()).toEqual(DEFAULT_LAYOUT);
    set({ graphWidth: String(GRAPH_WIDTH.max + 1), barHeight: String(BAR_HEIGHT.min - 1), stageTab: 'x'.repeat(100_000), barTab: 'Timeline' });
    expect(readLayout()).toEqual(DEFAULT_LAYOUT);
    set({ graphWidth: '300.5', barHeight: 'NaN' });
    expect(readLayout()).toEqual(DEFAULT_LAYOUT);
  });

  it('keeps a good value beside a bad one', () => {
    set({ graphWidth: 'wide', barHeight: '333' });
    expect(readLayout()).toEqual({ ...DEFAULT_LAYOUT, barHeight: 333 });
  });
});
