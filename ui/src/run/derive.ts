// Pure derivations of what the run screen shows from the run's stages,
// questions and events: graph decoration, the failure summary, timeline
// lanes and routing decisions. No React, no host: unit-tested on their own.

import type { EdgeReason, Event, QuestionRecord, RunView, StageRecord } from '../api/wire';
import type { NodeState } from '../graph/GraphView';
import { toolTicksByStage, type ToolTick } from './transcript';

/** Graph decoration: what `GraphView` takes besides the DOT text. */
export interface GraphDecoration {
  states: Record<string, NodeState>;
  visits: Record<string, number>;
  takenEdges: Array<[string, string]>;
}

const OUTCOME_STATES: Record<string, NodeState> = {
  succeeded: 'succeeded',
  failed: 'failed',
  partially_succeeded: 'partially_succeeded',
  skipped: 'skipped',
  running: 'running',
  // Stopped mid-way (the daemon died or the run was cancelled): it will run
  // again on resume, so it shows as not done rather than as a failure.
  interrupted: 'pending',
};

/**
 * Node states, visits and taken edges. The latest stage of each node (by
 * visit) gives its state; events recorded after the stages were read (live
 * ones) move it on: `stage.started` → running, `stage.retrying` → retrying,
 * `stage.completed`/`stage.failed` → the outcome's status,
 * `interview.started` → waiting. A node with a pending question (and no
 * later answer event) is waiting. Taken edges come from `edge.selected`.
 */
export function deriveGraph(
  stages: readonly StageRecord[],
  events: readonly Event[],
  questions: readonly QuestionRecord[],
): GraphDecoration {
  const latest = new Map<string, { visit: number; state: NodeState }>();
  const visits: Record<string, number> = {};
  const see = (node: string, visit: number, state: NodeState) => {
    const current = latest.get(node);
    if (!current || visit >= current.visit) latest.set(node, { visit, state });
    visits[node] = Math.max(visits[node] ?? 0, visit);
  };
  // A finished stage record is final for its visit; events only move on
  // visits the records show running or do not have yet (live ones).
  const finished = new Set<string>();
  for (const stage of [...stages].sort((a, b) => a.rank - b.rank)) {
    see(stage.node_id, stage.visit, OUTCOME_STATES[stage.status] ?? 'pending');
    if (stage.status !== 'running') finished.add(`${stage.node_id}@${stage.visit}`);
  }
  const live = (node: string | null | undefined, visit: number): node is string =>
    !!node && !finished.has(`${node}@${visit}`);

  const takenEdges: Array<[string, string]> = [];
  const takenKeys = new Set<string>();
  const closedQuestions = new Set<string>();
  for (const e of [...events].sort((a, b) => a.seq - b.seq)) {
    const node = e.node_id;
    const visit = e.visit ?? 1;
    switch (e.event) {
      case 'stage.started':
        if (live(node, visit)) see(node, visit, 'running');
        break;
      case 'stage.retrying':
        if (live(node, visit)) see(node, visit, 'retrying');
        break;
      case 'stage.completed':
      case 'stage.failed':
        if (live(node, visit)) see(node, visit, OUTCOME_STATES[e.properties.status] ?? 'failed');
        break;
      case 'interview.started':
        if (live(node, visit)) see(node, visit, 'waiting');
        break;
      case 'interview.completed':
      case 'interview.timeout':
      case 'interview.interrupted':
        closedQuestions.add(e.properties.question_id);
        if (live(node, visit) && latest.get(node)?.state === 'waiting') see(node, visit, 'running');
        break;
      case 'edge.selected': {
        const key = `${e.properties.from_node}\u0000${e.properties.to_node}`;
        if (!takenKeys.has(key)) {
          takenKeys.add(key);
          takenEdges.push([e.properties.from_node, e.properties.to_node]);
        }
        break;
      }
      default:
        break;
    }
  }
  for (const q of questions) {
    if (q.status === 'pending' && !closedQuestions.has(q.id)) see(q.node_id, q.visit, 'waiting');
  }

  const states: Record<string, NodeState> = {};
  for (const [node, { state }] of latest) states[node] = state;
  return { states, visits, takenEdges };
}

/** What failed and why, for the top of a failed run's screen. */
export interface FailureSummary {
  /** The failing stage, when a stage failed (not, say, a stalled run). */
  node: string | null;
  visit: number | null;
  /** The stage's failure reason in plain words. */
  reason: string;
  /** The run's own reason when it says something the stage's does not. */
  runReason: string | null;
}

/** The failure reason of a stage: its recorded reason, else its outcome's. */
export function stageFailureReason(stage: StageRecord): string | null {
  if (stage.failure_reason) return stage.failure_reason;
  const outcome = stage.outcome;
  if (outcome && typeof outcome === 'object' && !Array.isArray(outcome)) {
    const failure = outcome.failure;
    if (failure && typeof failure === 'object' && !Array.isArray(failure) && typeof failure.message === 'string') {
      return failure.message;
    }
  }
  return null;
}

/**
 * For a failed run: the last failed stage (in execution order) and its
 * reason; without one, the run's reason alone. Null for any other status.
 */
export function failureSummary(view: RunView): FailureSummary | null {
  if (view.run.status !== 'failed') return null;
  const runReason = view.run.failure_reason;
  const failedStage = [...view.stages].sort((a, b) => b.rank - a.rank).find((s) => s.status === 'failed');
  if (!failedStage) {
    return { node: null, visit: null, reason: runReason ?? 'The run failed without a recorded reason.', runReason: null };
  }
  const reason = stageFailureReason(failedStage) ?? runReason ?? 'no reason was recorded';
  return {
    node: failedStage.node_id,
    visit: failedStage.visit,
    reason,
    runReason: runReason && runReason !== reason ? runReason : null,
  };
}

/** One bar of the timeline: an attempt of a stage. */
export interface TimelineBar {
  node: string;
  visit: number;
  attempt: number;
  status: string;
  start: number;
  end: number;
  /** Still running: `end` is "now". */
  open: boolean;
  /** An agent stage's tool calls during this attempt, in start order. */
  ticks: ToolTick[];
}

/** A lane: the main line, or one parallel branch. */
export interface TimelineLane {
  branch: string | null;
  bars: TimelineBar[];
}

export interface Timeline {
  lanes: TimelineLane[];
  start: number;
  end: number;
}

const time = (ts: string | null | undefined) => (ts ? Date.parse(ts) : NaN);

/**
 * Timeline lanes: one bar per attempt of each stage (attempts split at
 * `stage.started` / `stage.retrying` events; one bar when there are none),
 * the main line first, then each parallel branch in order of appearance.
 * An agent stage's tool calls become ticks on the bar of the attempt they
 * started in.
 */
export function timelineOf(stages: readonly StageRecord[], events: readonly Event[], now: number): Timeline {
  const ticks = toolTicksByStage(events);
  const marks = new Map<string, Array<{ t: number; kind: 'start' | 'retry'; attempt: number }>>();
  for (const e of events) {
    if ((e.event !== 'stage.started' && e.event !== 'stage.retrying') || !e.node_id) continue;
    const key = `${e.node_id}@${e.visit ?? 1}`;
    const list = marks.get(key) ?? [];
    list.push({ t: time(e.ts), kind: e.event === 'stage.started' ? 'start' : 'retry', attempt: e.properties.attempt });
    marks.set(key, list);
  }
  const lanes: TimelineLane[] = [];
  const laneOf = (branch: string | null) => {
    let lane = lanes.find((l) => l.branch === branch);
    if (!lane) {
      lane = { branch, bars: [] };
      if (branch === null) lanes.unshift(lane);
      else lanes.push(lane);
    }
    return lane;
  };
  let min = Infinity;
  let max = -Infinity;
  for (const stage of [...stages].sort((a, b) => a.rank - b.rank)) {
    const begin = time(stage.started_at);
    if (Number.isNaN(begin)) continue;
    const open = stage.status === 'running' || !stage.finished_at;
    const finish = open ? Math.max(now, begin) : time(stage.finished_at);
    const lane = laneOf(stage.branch ?? null);
    const starts = (marks.get(`${stage.node_id}@${stage.visit}`) ?? [])
      .filter((m) => !Number.isNaN(m.t))
      .sort((a, b) => a.t - b.t);
    const bounds = starts.filter((m) => m.kind === 'start');
    const stageTicks = ticks.get(`${stage.node_id}@${stage.visit}`) ?? [];
    if (bounds.length <= 1) {
      lane.bars.push({ node: stage.node_id, visit: stage.visit, attempt: Math.max(stage.attempts, 1), status: stage.status, start: begin, end: finish, open, ticks: stageTicks });
    } else {
      bounds.forEach((b, i) => {
        const last = i === bounds.length - 1;
        const next = bounds[i + 1]?.t ?? finish;
        const retry = starts.find((m) => m.kind === 'retry' && m.t >= b.t && (last || m.t <= next));
        const end = last ? finish : (retry?.t ?? next);
        // A call belongs to the attempt it started in: from this start to the next.
        const until = last ? Infinity : next;
        lane.bars.push({
          node: stage.node_id,
          visit: stage.visit,
          attempt: b.attempt || i + 1,
          status: last ? stage.status : 'retried',
          start: b.t,
          end: Math.max(end, b.t),
          open: last && open,
          ticks: stageTicks.filter((t) => (i === 0 || t.start >= b.t) && t.start < until),
        });
      });
    }
    min = Math.min(min, begin);
    max = Math.max(max, finish);
  }
  if (!Number.isFinite(min)) return { lanes: [], start: now, end: now };
  return { lanes, start: min, end: Math.max(max, min + 1) };
}

/** Why an edge was chosen, in plain words. */
export function edgeReasonText(reason: EdgeReason, label?: string | null, condition?: string | null): string {
  switch (reason) {
    case 'jump':
      return 'the stage asked to jump straight to it';
    case 'condition':
      return condition ? `its condition \`${condition}\` held` : 'its condition held';
    case 'preferred_label':
      return label ? `its label “${label}” was the preferred label` : 'its label was the preferred label';
    case 'suggested_next':
      return 'the stage suggested it as the next node';
    case 'unconditional':
      return 'it was the unconditional way on';
    case 'retry_target':
      return 'the stage failed and it is the retry target';
    case 'goal_gate_retry':
      return 'a goal gate was not met, so the run went back to retry';
  }
}

/** The `edge.selected` events that left stage `node`@`visit`. */
export function routingOf(events: readonly Event[], node: string, visit: number) {
  return events.flatMap((e) =>
    e.event === 'edge.selected' && e.properties.from_node === node && (e.visit == null || e.visit === visit)
      ? [e]
      : [],
  );
}

/**
 * The stage the run screen shows until the user picks one, so the panel
 * follows the run: the failed stage of a failed run, otherwise the stage
 * that started last (the running one while the run goes on, the last to run
 * once it has ended). The start and exit nodes do no work, so they are
 * shown only while nothing else has started. A stage restarted on resume
 * keeps its rank but starts anew, so start times order them, rank breaking
 * ties.
 */
export function followedStage(view: RunView): StageRecord | undefined {
  const failure = failureSummary(view);
  const failed = failure?.node
    ? view.stages.find((s) => s.node_id === failure.node && s.visit === failure.visit)
    : undefined;
  if (failed) return failed;
  const started = (s: StageRecord) => time(s.started_at);
  const latestFirst = [...view.stages].sort((a, b) => (started(b) || 0) - (started(a) || 0) || b.rank - a.rank);
  return latestFirst.find((s) => s.handler !== 'start' && s.handler !== 'exit') ?? latestFirst[0];
}

/** The latest stage (highest visit) of `node`. */
export function latestStage(stages: readonly StageRecord[], node: string): StageRecord | undefined {
  return stages.filter((s) => s.node_id === node).sort((a, b) => b.visit - a.visit)[0];
}

/**
 * The stage just before `node`@`visit` in execution order: the work that led
 * to a gate's question.
 */
export function stageBefore(stages: readonly StageRecord[], node: string, visit: number): StageRecord | undefined {
  const sorted = [...stages].sort((a, b) => a.rank - b.rank);
  const at = sorted.findIndex((s) => s.node_id === node && s.visit === visit);
  const before = at < 0 ? sorted : sorted.slice(0, at);
  return before.filter((s) => s.handler !== 'conditional' && s.handler !== 'start').at(-1) ?? before.at(-1);
}

/** A node attribute from DOT text, for the few the screen shows (`timeout`). */
export function nodeAttribute(dot: string, node: string, name: string): string | null {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // `node [ ... ]` as a node statement (not the target of `a -> node [ ... ]`),
  // its attribute list read up to the `]` outside quotes.
  const stmt = new RegExp(
    `(?:^|[;{\\s])(?<!->\\s*)"?${esc(node)}"?\\s*\\[((?:[^\\]"]|"(?:[^"\\\\]|\\\\.)*")*)\\]`,
    'm',
  ).exec(dot);
  if (!stmt) return null;
  const attr = new RegExp(`(?:^|[,;\\s])"?${esc(name)}"?\\s*=\\s*("((?:[^"\\\\]|\\\\.)*)"|[^,;\\s\\]]+)`).exec(stmt[1] ?? '');
  if (!attr) return null;
  return attr[2] !== undefined ? attr[2].replace(/\\"/g, '"') : (attr[1] ?? null);
}

/** A container a stage visit ran in (its `sandbox.ready` events). */
export interface StageContainer {
  /** The short id, as `docker ps` shows it. */
  container: string;
  image: string;
  engine: string;
  /** Some attempt found it left by an earlier process: a resume after a crash. */
  reused: boolean;
}

/**
 * Where stage `node`@`visit` ran its commands: each container its attempts
 * ran in, in order (one, almost always: attempts and a resume use the run's
 * container). Empty for a stage that ran on the host, or that ran nothing in
 * the run's container (a start node, an agent that never used `shell`).
 */
export function stageContainers(events: readonly Event[], node: string, visit: number): StageContainer[] {
  const found: StageContainer[] = [];
  const ready = events
    .flatMap((e) => (e.event === 'sandbox.ready' && e.node_id === node && (e.visit ?? 1) === visit ? [e] : []))
    .sort((a, b) => a.seq - b.seq);
  for (const e of ready) {
    const { container, image, engine, attach } = e.properties;
    const last = found.at(-1);
    if (last && last.container === container) {
      last.reused ||= attach === 'reused';
    } else {
      found.push({ container, image, engine, reused: attach === 'reused' });
    }
  }
  return found;
}

/** The engine the daemon uses when neither the settings nor `DOCKER_HOST` name one. */
export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';

/**
 * The command that opens a shell in a kept container: `DOCKER_HOST` is named
 * when the engine is not the default one, since a plain `docker` would look
 * for the container in the wrong place.
 */
export function containerShellCommand(engine: string, container: string): string {
  const exec = `docker exec -it ${container} sh`;
  return engine && engine !== DEFAULT_DOCKER_HOST ? `DOCKER_HOST=${engine} ${exec}` : exec;
}

/**
 * What became of the run's container, from its latest sandbox event: `in
 * use` while stages run in it (the run goes on, or stopped without cleaning
 * up, as a crashed daemon does), `removed` or `kept` once the run ended.
 * Null when no stage ran in one.
 */
export type RunContainer =
  | { state: 'in_use'; container: string; engine: string }
  | { state: 'removed'; container: string }
  | { state: 'kept'; container: string; engine: string };

export function runContainer(events: readonly Event[]): RunContainer | null {
  let latest: RunContainer | null = null;
  let seq = -Infinity;
  for (const e of events) {
    // A resumed run readies its container again after an earlier end.
    if (e.seq < seq) continue;
    switch (e.event) {
      case 'sandbox.ready':
        latest = { state: 'in_use', container: e.properties.container, engine: e.properties.engine };
        break;
      case 'sandbox.removed':
        latest = { state: 'removed', container: e.properties.container };
        break;
      case 'sandbox.kept':
        latest = { state: 'kept', container: e.properties.container, engine: e.properties.engine };
        break;
      default:
        continue;
    }
    seq = e.seq;
  }
  return latest;
}

/** Failure-like events the events list always shows. */
export const ALERT_EVENTS = new Set(['stage.failed', 'run.failed', 'llm.retry', 'llm.failover']);

