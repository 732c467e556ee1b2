// Sample run graphs for the demo page and tests. Not used by the app itself.

import type { NodeState } from './decorate';

/** A small workflow in Fabro's DOT dialect: a start diamond, a parallel
 * fan-out and fan-in, a human gate, and a review loop back to `implement`.
 * It sets `rankdir=LR` itself, which the view's toggle must override. */
export const SAMPLE_WORKFLOW = `digraph implement_feature {
  graph [goal="Implement and review a feature", rankdir=LR]
  node [shape=box]

  start     [shape=Mdiamond, label="Start"]
  exit      [shape=Msquare, label="Exit"]
  plan      [label="Plan", prompt="Write a plan for {{ goal }}"]
  fan_out   [shape=component, label="Fan out"]
  tests     [label="Write tests"]
  docs      [label="Write docs"]
  implement [label="Implement"]
  fan_in    [shape=tripleoctagon, label="Fan in"]
  review    [shape=diamond, label="Review"]
  approve   [shape=hexagon, label="Approve?"]
  publish   [label="Publish"]

  start -> plan -> fan_out
  fan_out -> tests
  fan_out -> docs
  fan_out -> implement
  tests -> fan_in
  docs -> fan_in
  implement -> fan_in
  fan_in -> review
  review -> implement [label="changes requested", condition="outcome=fail"]
  review -> approve   [label="ok", condition="outcome=success"]
  approve -> publish  [label="[A] approve"]
  approve -> exit     [label="[R] reject"]
  publish -> exit
}
`;

export const SAMPLE_STATES: Record<string, NodeState> = {
  start: 'succeeded',
  plan: 'succeeded',
  fan_out: 'succeeded',
  tests: 'succeeded',
  docs: 'partially_succeeded',
  implement: 'retrying',
  fan_in: 'succeeded',
  review: 'failed',
  approve: 'waiting',
  publish: 'skipped',
};

export const SAMPLE_VISITS: Record<string, number> = {
  start: 1,
  plan: 1,
  fan_out: 1,
  tests: 1,
  docs: 1,
  implement: 2,
  fan_in: 1,
  review: 1,
};

export const SAMPLE_TAKEN_EDGES: Array<[string, string]> = [
  ['start', 'plan'],
  ['plan', 'fan_out'],
  ['fan_out', 'tests'],
  ['fan_out', 'docs'],
  ['fan_out', 'implement'],
  ['tests', 'fan_in'],
  ['docs', 'fan_in'],
  ['implement', 'fan_in'],
  ['fan_in', 'review'],
  ['review', 'implement'],
];

/** A small gate: a human question with three labelled answers and a loop
 * back, every edge taken (bold labels, the widest). Small graphs are where
 * Graphviz packs labels tightest, so this is where they would overlap. */
export const GATE_WORKFLOW = `digraph review {
  start  [shape=Mdiamond]
  exit   [shape=Msquare]
  review [shape=hexagon, label="Review the change?"]
  merge  [shape=parallelogram]
  rework [shape=box]
  drop   [shape=parallelogram]
  start -> review
  review -> merge  [label="[A] Approve"]
  review -> rework [label="[R] Request changes"]
  review -> drop   [label="[D] Drop"]
  rework -> review [label="again"]
  merge -> exit
  drop -> exit
}
`;

export const GATE_STATES: Record<string, NodeState> = {
  start: 'succeeded',
  review: 'waiting',
  rework: 'succeeded',
};

export const GATE_TAKEN_EDGES: Array<[string, string]> = [
  ['start', 'review'],
  ['review', 'merge'],
  ['review', 'rework'],
  ['review', 'drop'],
  ['rework', 'review'],
];

/** A ladder of `rungs` × 2 nodes (two chains with a rung between each pair),
 * for checking that big graphs stay responsive. */
export function ladderWorkflow(rungs: number): string {
  const lines = ['digraph ladder {', '  node [shape=box]'];
  for (let i = 0; i < rungs; i += 1) {
    if (i + 1 < rungs) lines.push(`  a${i} -> a${i + 1}; b${i} -> b${i + 1};`);
    lines.push(`  a${i} -> b${i};`);
  }
  lines.push('}');
  return lines.join('\n');
}

/** Run state for `ladderWorkflow(rungs)`: the first third done, then one running. */
export function ladderRun(rungs: number): {
  states: Record<string, NodeState>;
  visits: Record<string, number>;
  takenEdges: Array<[string, string]>;
} {
  const states: Record<string, NodeState> = {};
  const visits: Record<string, number> = {};
  const takenEdges: Array<[string, string]> = [];
  const done = Math.floor(rungs / 3);
  for (let i = 0; i < done; i += 1) {
    states[`a${i}`] = 'succeeded';
    states[`b${i}`] = i % 7 === 3 ? 'failed' : 'succeeded';
    visits[`a${i}`] = i % 5 === 0 ? 2 : 1;
    takenEdges.push([`a${i}`, `a${i + 1}`], [`a${i}`, `b${i}`]);
  }
  states[`a${done}`] = 'running';
  return { states, visits, takenEdges };
}
