import { BAR_TABS, STAGE_TABS, type BarTab, type StageTab } from '../app/route';
import type { Timeline } from './derive';

/** What a run screen shortcut does: a move, or opening a stage tab or a run bar tab. */
export type RunAction = 'next' | 'previous' | 'graph' | 'search' | 'help' | `stage:${StageTab}` | `bar:${BarTab}`;

/** The digit that opens each stage tab: 1–6 in the tabs' order. */
export const STAGE_TAB_KEYS: Readonly<Record<StageTab, string>> = Object.fromEntries(
  STAGE_TABS.map((t, i) => [t, String(i + 1)]),
) as Record<StageTab, string>;

/** The digit that opens each run bar tab: 7, 8, 9 and 0, in the tabs' order. */
export const BAR_TAB_KEYS: Readonly<Record<BarTab, string>> = Object.fromEntries(
  BAR_TABS.map((t, i) => [t, String((i + 7) % 10)]),
) as Record<BarTab, string>;

/** One line of the shortcuts list: the keys (as shown) and what they do. */
export interface Shortcut {
  keys: readonly string[];
  what: string;
}

/** The run screen's own keys (`KeyboardEvent.key`), besides a question's accelerators. */
const ACTIONS: Readonly<Record<string, RunAction>> = {
  j: 'next',
  ArrowDown: 'next',
  k: 'previous',
  ArrowUp: 'previous',
  g: 'graph',
  '/': 'search',
  '?': 'help',
  ...Object.fromEntries(STAGE_TABS.map((t) => [STAGE_TAB_KEYS[t], `stage:${t}` as const])),
  ...Object.fromEntries(BAR_TABS.map((t) => [BAR_TAB_KEYS[t], `bar:${t}` as const])),
};

/** The run screen's shortcuts as the `?` list shows them, in that order (docs/app.md lists the same). */
export const RUN_SHORTCUTS: readonly Shortcut[] = [
  { keys: ['j', '↓'], what: 'Next stage, in timeline order' },
  { keys: ['k', '↑'], what: 'Previous stage' },
  { keys: ['g'], what: 'Go to the graph (focuses the selected node)' },
  { keys: ['/'], what: 'Open the Output tab and search every log of the run' },
  { keys: STAGE_TABS.map((t) => STAGE_TAB_KEYS[t]), what: 'Stage tabs: Transcript, Output, Files changed, Artifacts, Routing, Context' },
  { keys: BAR_TABS.map((t) => BAR_TAB_KEYS[t]), what: 'Run bar tabs: Timeline, Events, Retro, Cost (opens the bar)' },
  { keys: ['?'], what: 'Show or hide this list' },
  { keys: ['Esc'], what: 'Close this list' },
];

/** The action of a key press, by its `KeyboardEvent.key`; null for any other key. */
export function runActionOf(key: string): RunAction | null {
  return Object.hasOwn(ACTIONS, key) ? (ACTIONS[key] ?? null) : null;
}

/** A stage visit: the unit j and k move between. */
export interface StageRef {
  node: string;
  visit: number;
}

/**
 * The stage visits in timeline order: by when their first attempt started,
 * a tie going to the lane drawn first (the main line, then branches).
 */
export function stageOrder(timeline: Timeline): StageRef[] {
  const first = new Map<string, { ref: StageRef; start: number; lane: number }>();
  timeline.lanes.forEach((lane, laneIndex) => {
    for (const bar of lane.bars) {
      const key = `${bar.node}@${bar.visit}`;
      const seen = first.get(key);
      if (!seen || bar.start < seen.start) first.set(key, { ref: { node: bar.node, visit: bar.visit }, start: bar.start, lane: laneIndex });
    }
  });
  return [...first.values()].sort((a, b) => a.start - b.start || a.lane - b.lane).map((s) => s.ref);
}

/**
 * The visit `step` places after (1) or before (-1) `current` in `order`.
 * From no visit, or one not in the timeline (a node that has not run),
 * j starts at the first and k at the last; at either end it stays (null).
 */
export function stepStage(order: readonly StageRef[], current: StageRef | null, step: 1 | -1): StageRef | null {
  if (order.length === 0) return null;
  const at = current ? order.findIndex((s) => s.node === current.node && s.visit === current.visit) : -1;
  if (at < 0) return (step === 1 ? order[0] : order.at(-1)) ?? null;
  return order[at + step] ?? null;
}
