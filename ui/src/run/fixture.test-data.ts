// A small hand-written run for the run screen's unit tests, in wire types.
import type { Event, EventKind, QuestionRecord, RunView, StageRecord } from '../api/wire';

export const RUN = '01HRUNFAILED0000000000000';

const t = (s: number) => new Date(Date.UTC(2025, 0, 1, 12, 0, s)).toISOString();

export function stage(node: string, visit: number, rank: number, status: string, from: number, to: number | null, extra: Partial<StageRecord> = {}): StageRecord {
  return {
    run_id: RUN,
    node_id: node,
    visit,
    rank,
    handler: 'command',
    status,
    attempts: 1,
    started_at: t(from),
    finished_at: to === null ? null : t(to),
    duration_ms: to === null ? null : (to - from) * 1000,
    failure_reason: null,
    outcome: null,
    ...extra,
  };
}

let seq = 0;
export function ev(at: number, node: string | null, visit: number | null, kind: EventKind): Event {
  seq += 1;
  return { seq, ts: t(at), run_id: RUN, node_id: node, visit, ...kind } as Event;
}

export const GRAPH = `digraph Deploy {
  start [shape=Mdiamond]
  build [shape=parallelogram, script="make"]
  push [shape=parallelogram, script="push", timeout="30s"]
  approve [shape=hexagon, label="Ship it? [y]", timeout="15m", "human.default_choice"="[H] Hold"]
  exit [shape=Msquare]
  start -> build -> push
  push -> approve [label="[A] after push"]
  approve -> exit [label="[S] Ship"]
  approve -> build [label="[H] Hold"]
}`;

export const FAILED_STAGES: StageRecord[] = [
  stage('start', 1, 1, 'succeeded', 0, 0, { handler: 'start' }),
  stage('build', 1, 2, 'succeeded', 0, 10, { attempts: 2 }),
  stage('push', 1, 3, 'failed', 10, 12, {
    failure_reason: 'command exited with status 1: error: host unreachable',
    outcome: { status: 'failed', failure: { class: 'deterministic', message: 'command exited with status 1: error: host unreachable', retryable: false }, context_updates: { 'push.tries': 1 } },
  }),
];

export const FAILED_EVENTS: Event[] = [
  ev(0, 'start', 1, { event: 'stage.started', properties: { handler: 'start', attempt: 1 } }),
  ev(0, 'start', 1, { event: 'edge.selected', properties: { from_node: 'start', to_node: 'build', reason: 'unconditional' } }),
  ev(0, 'build', 1, { event: 'stage.started', properties: { handler: 'command', attempt: 1 } }),
  ev(4, 'build', 1, { event: 'stage.retrying', properties: { attempt: 1, delay_ms: 1000, reason: 'flaky' } }),
  ev(5, 'build', 1, { event: 'stage.started', properties: { handler: 'command', attempt: 2 } }),
  ev(10, 'build', 1, { event: 'edge.selected', properties: { from_node: 'build', to_node: 'push', reason: 'unconditional' } }),
  ev(10, 'push', 1, { event: 'stage.started', properties: { handler: 'command', attempt: 1 } }),
  ev(11, 'push', 1, { event: 'command.output', properties: { stream: 'stderr', text: 'error: host unreachable\n' } }),
  ev(12, 'push', 1, {
    event: 'stage.failed',
    properties: { status: 'failed', duration_ms: 2000, attempts: 1, outcome: { status: 'failed', failure: { class: 'deterministic', message: 'command exited with status 1: error: host unreachable', retryable: false } } },
  }),
  ev(12, null, null, { event: 'run.failed', properties: { reason: 'stage push failed and on_failure=exit stopped the run: command exited with status 1: error: host unreachable', duration_ms: 12000 } }),
];

export function failedView(): RunView {
  return {
    run: {
      id: RUN,
      workflow_name: 'Deploy',
      archived: false,
      workflow_path: '/home/me/deploy.fabro',
      goal: 'Deploy the shop',
      status: 'failed',
      labels: [],
      run_dir: '/home/me/.weft/runs/x',
      work_dir: '/home/me/shop',
      created_at: t(0),
      started_at: t(0),
      finished_at: t(12),
      failure_reason: 'stage push failed and on_failure=exit stopped the run: command exited with status 1: error: host unreachable',
      last_seq: FAILED_EVENTS.length,
      node_count: 5,
    },
    inputs: { env: 'staging' },
    options: { dry_run: false, auto_approve: false, seed: null, artifacts: [], model: {} },
    edge_count: 5,
    stages: FAILED_STAGES,
    questions: [],
    graph_source: GRAPH,
    artifacts: [],
  };
}

export const QUESTION: QuestionRecord = {
  id: 'q1',
  run_id: 'run-waiting',
  node_id: 'approve',
  visit: 1,
  text: 'Ship the build?',
  options: ['[S] Ship', '[H] Hold', 'Later'],
  freeform: true,
  status: 'pending',
  answer: null,
  asked_at: t(20),
  answered_at: null,
};

/** An external agent's permission request put to a person (acp.permissions="ask"). */
export const PERMISSION_QUESTION: QuestionRecord = {
  id: 'q2',
  run_id: 'run-waiting',
  node_id: 'implement',
  visit: 1,
  text: 'claude asks permission: Run cargo publish',
  options: ['Always Allow', 'Allow', 'Reject'],
  freeform: false,
  status: 'pending',
  answer: null,
  asked_at: t(25),
  answered_at: null,
  permission: {
    agent: 'claude',
    tool_kind: 'execute',
    title: 'Run cargo publish',
    locations: ['/home/me/projects/shop/Cargo.toml'],
    command: 'cargo publish --dry-run',
    input: '{\n  "command": "cargo publish --dry-run",\n  "description": "Check the crate packages"\n}',
    options: [
      { label: 'Always Allow', kind: 'allow_always' },
      { label: 'Allow', kind: 'allow_once' },
      { label: 'Reject', kind: 'reject_once' },
    ],
  },
};

/** The container of the sandboxed run below, as `docker ps` shortens its id. */
export const CONTAINER = '3f2a9c1b7d4e';
export const SANDBOX_ENGINE = 'unix:///var/run/docker.sock';

const ready = (at: number, node: string, attach: string) =>
  ev(at, node, 1, { event: 'sandbox.ready', properties: { container: CONTAINER, image: 'weft-test:latest', engine: SANDBOX_ENGINE, attach } });

/**
 * The failed run above, run with `--sandbox docker`: build's first attempt
 * created the container and its retry found it running; weftd crashed before
 * push, whose resumed attempt reused it; the run's end kept it (`keep =
 * "on_failure"`). The start node ran nothing in it.
 */
export function sandboxedEvents(end: 'kept' | 'removed' = 'kept'): Event[] {
  const events = [...FAILED_EVENTS];
  const after = (event: string, node: string | null) => events.findIndex((e) => e.event === event && e.node_id === node) + 1;
  events.splice(after('stage.started', 'build'), 0, ready(0, 'build', 'created'));
  const retry = events.findIndex((e) => e.event === 'stage.started' && e.node_id === 'build' && e.properties.attempt === 2);
  events.splice(retry + 1, 0, ready(5, 'build', 'running'));
  events.splice(after('stage.started', 'push'), 0, ready(10, 'push', 'reused'));
  events.push(
    end === 'kept'
      ? ev(12, null, null, { event: 'sandbox.kept', properties: { engine: SANDBOX_ENGINE, container: CONTAINER } })
      : ev(12, null, null, { event: 'sandbox.removed', properties: { container: CONTAINER } }),
  );
  // In recording order, as the store numbers them.
  return events.map((e, i) => ({ ...e, seq: i + 1 }));
}

export function sandboxedView(): RunView {
  const view = failedView();
  view.run.sandbox = 'docker weft-test:latest';
  view.run.last_seq = sandboxedEvents().length;
  return view;
}
