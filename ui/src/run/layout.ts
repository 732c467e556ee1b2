import { useCallback, useState } from 'react';

import { BAR_TABS, STAGE_TABS, type BarTab, type StageTab } from '../app/route';

/**
 * The run screen's layout as the user left it: the graph pane's width, the
 * run bar's height, which of them are collapsed and the last tabs. Kept in
 * localStorage under `weft.layout.run.*`, one key each, so that a value
 * another version wrote (or anyone typed) spoils only itself.
 */
export interface RunLayout {
  graphWidth: number;
  graphCollapsed: boolean;
  barHeight: number;
  barCollapsed: boolean;
  stageTab: StageTab;
  barTab: BarTab;
}

/** The graph pane's width in CSS pixels: narrow enough to read a node, no wider than a wide screen. */
export const GRAPH_WIDTH = { min: 200, max: 1_600, initial: 480 } as const;
/** The run bar's height in CSS pixels. */
export const BAR_HEIGHT = { min: 120, max: 1_000, initial: 280 } as const;

export const DEFAULT_LAYOUT: RunLayout = {
  graphWidth: GRAPH_WIDTH.initial,
  graphCollapsed: false,
  barHeight: BAR_HEIGHT.initial,
  barCollapsed: false,
  // An agent stage opens on its transcript, any other on its output.
  stageTab: 'transcript',
  barTab: 'timeline',
};

const PREFIX = 'weft.layout.run.';
/** Longer than any valid value: anything bigger is not read at all. */
const VALUE_CHARS_MAX = 16;

/** `n` held within `[min, max]`, whole pixels. */
export function clampSize(n: number, bounds: { min: number; max: number }): number {
  return Math.round(Math.min(bounds.max, Math.max(bounds.min, n)));
}

function readRaw(key: keyof RunLayout): string | null {
  try {
    const raw = window.localStorage.getItem(PREFIX + key);
    return raw !== null && raw.length <= VALUE_CHARS_MAX ? raw : null;
  } catch {
    // Storage can be off (private windows, policies): the defaults serve.
    return null;
  }
}

function readSize(key: 'graphWidth' | 'barHeight', bounds: { min: number; max: number }, fallback: number): number {
  const raw = readRaw(key);
  if (raw === null || !/^[0-9]{1,5}$/.test(raw)) return fallback;
  const n = Number(raw);
  // Out of bounds is not clamped but refused: it was not written by this screen.
  return n >= bounds.min && n <= bounds.max ? n : fallback;
}

function readFlag(key: 'graphCollapsed' | 'barCollapsed'): boolean {
  return readRaw(key) === 'true';
}

function readChoice<T extends string>(key: 'stageTab' | 'barTab', choices: readonly T[], fallback: T): T {
  const raw = readRaw(key);
  return choices.find((c) => c === raw) ?? fallback;
}

/** The stored layout, each value validated and bounded, a default for any that is missing or not valid. */
export function readLayout(): RunLayout {
  return {
    graphWidth: readSize('graphWidth', GRAPH_WIDTH, DEFAULT_LAYOUT.graphWidth),
    graphCollapsed: readFlag('graphCollapsed'),
    barHeight: readSize('barHeight', BAR_HEIGHT, DEFAULT_LAYOUT.barHeight),
    barCollapsed: readFlag('barCollapsed'),
    stageTab: readChoice('stageTab', STAGE_TABS, DEFAULT_LAYOUT.stageTab),
    barTab: readChoice('barTab', BAR_TABS, DEFAULT_LAYOUT.barTab),
  };
}

function write(layout: Partial<RunLayout>): void {
  try {
    for (const [key, value] of Object.entries(layout)) window.localStorage.setItem(PREFIX + key, String(value));
  } catch {
    // Full or refused storage: the layout still holds for this session.
  }
}

/**
 * The run screen's layout, read once and written back on each change;
 * `opened` (what a deep link names) wins over the stored values and is
 * remembered as the last choice.
 */
export function useRunLayout(opened: Partial<RunLayout> = {}): [RunLayout, (change: Partial<RunLayout>) => void] {
  const [layout, setLayout] = useState(() => {
    write(opened);
    return { ...readLayout(), ...opened };
  });
  const update = useCallback((change: Partial<RunLayout>) => {
    const bounded: Partial<RunLayout> = { ...change };
    if (bounded.graphWidth !== undefined) bounded.graphWidth = clampSize(bounded.graphWidth, GRAPH_WIDTH);
    if (bounded.barHeight !== undefined) bounded.barHeight = clampSize(bounded.barHeight, BAR_HEIGHT);
    write(bounded);
    setLayout((l) => ({ ...l, ...bounded }));
  }, []);
  return [layout, update];
}
