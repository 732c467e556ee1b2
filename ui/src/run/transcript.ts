// An agent stage's transcript, derived from the run's `agent.*` events alone
// (docs/agents.md, "Events"), so it reads the same live and from history:
// turns with their assistant text and tool calls, the notices between them,
// what the stage spent and which files it wrote. No React, no host.

import type { Event, JsonValue } from '../api/wire';

/**
 * The most assistant text kept per turn. Text arrives in coalesced chunks and
 * a runaway model could stream megabytes into one turn; the rest is in the
 * stage's `transcript.jsonl` and `response.md`.
 */
export const TURN_TEXT_MAX = 256 * 1024;

/** Where a tool call stands. */
export type ToolCallState =
  /** Started, no result yet, and its attempt is still going. */
  | 'running'
  | 'succeeded'
  /** The tool answered with an error (the model's to handle). */
  | 'failed'
  /** Started, but its attempt ended (retry, failure, cancel, crash) without a result. */
  | 'unfinished';

/** One tool call: `agent.tool.started` and, once it came, its `agent.tool.completed`. */
export interface ToolCall {
  callId: string;
  tool: string;
  /** One short line: the command, the path, the pattern (empty if only the completion was seen). */
  summary: string;
  /** The arguments as recorded (long strings cut by the engine); null if only the completion was seen. */
  arguments: JsonValue | null;
  state: ToolCallState;
  /** Epoch ms of the start (or of the completion, when the start was not seen). */
  startedAt: number;
  /** Epoch ms of the completion; null while running. */
  endedAt: number | null;
  durationMs: number | null;
  /** The start of the output; null until completed. */
  preview: string | null;
  outputBytes: number | null;
  /** Paths the call wrote (successful writes only). */
  touched: string[];
  /** The seq of the event that opened the row. */
  seq: number;
}

/** A model turn: its streamed text, the tool calls it asked for, its tokens. */
export interface Turn {
  kind: 'turn';
  seq: number;
  turn: number;
  /** The `agent.text` chunks joined, at most `TURN_TEXT_MAX` characters. */
  text: string;
  /** True when `text` was cut at `TURN_TEXT_MAX`. */
  textCut: boolean;
  tools: ToolCall[];
  /** From `agent.turn.completed`; null until then. */
  inputTokens: number | null;
  outputTokens: number | null;
  durationMs: number | null;
  done: boolean;
}

/** Small inline notices between turns. */
export type Notice =
  | { kind: 'compaction'; seq: number; originalTurns: number; preservedTurns: number; estimatedTokens: number; contextWindow: number }
  | { kind: 'loop_detected'; seq: number; patternLen: number; tools: string[] }
  | { kind: 'steered'; seq: number; text: string };

export type TranscriptEntry = Turn | Notice;

/** The transcript of one attempt of the stage (a retry starts a new session). */
export interface AttemptTranscript {
  attempt: number;
  entries: TranscriptEntry[];
  /** A stage or run event closed the attempt. */
  ended: boolean;
}

/** What the stage spent on models, summed from its `llm.completed` events. */
export interface EventSpend {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** US dollars over the priced calls; null when no call was priced. */
  cost: number | null;
}

export interface AgentTranscript {
  attempts: AttemptTranscript[];
  spend: EventSpend;
  /** Paths written by successful tool calls, sorted, each once. */
  filesTouched: string[];
}

const time = (ts: string) => {
  const t = Date.parse(ts);
  return Number.isNaN(t) ? 0 : t;
};

/** Run-level events that end whatever attempt is open. */
const RUN_ENDS = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.interrupted']);

/**
 * The transcript of stage `node`@`visit` from the run's events, in seq
 * order. Attempts split at `stage.started`; `agent.text` chunks are joined
 * per turn; a tool call is matched to its completion by `call_id` (the
 * latest open call with that id) and belongs to the turn open when it
 * started. A call the attempt ended without completing is `unfinished`.
 */
export function agentTranscript(events: readonly Event[], node: string, visit: number): AgentTranscript {
  const attempts: AttemptTranscript[] = [];
  const spend: EventSpend = { calls: 0, inputTokens: 0, outputTokens: 0, cost: null };
  const touched = new Set<string>();
  let current: AttemptTranscript | null = null;
  let turn: Turn | null = null;
  let open = new Map<string, ToolCall>();

  const attempt = (n: number | null): AttemptTranscript => {
    if (current && n === null) return current;
    closeAttempt();
    current = { attempt: n ?? attempts.length + 1, entries: [], ended: false };
    attempts.push(current);
    turn = null;
    open = new Map();
    return current;
  };
  const closeAttempt = () => {
    if (!current || current.ended) return;
    current.ended = true;
    for (const call of open.values()) call.state = 'unfinished';
    open.clear();
  };
  const turnOf = (n: number, seq: number): Turn => {
    const a = attempt(null);
    if (turn && turn.turn === n) return turn;
    const found = a.entries.find((e): e is Turn => e.kind === 'turn' && e.turn === n);
    if (found) return (turn = found);
    const fresh: Turn = { kind: 'turn', seq, turn: n, text: '', textCut: false, tools: [], inputTokens: null, outputTokens: null, durationMs: null, done: false };
    a.entries.push(fresh);
    return (turn = fresh);
  };
  /** The turn a tool call belongs to: the open one, else a turn 0 for calls seen before any turn. */
  const turnForTool = (seq: number): Turn => turn ?? turnOf(0, seq);

  for (const e of [...events].sort((a, b) => a.seq - b.seq)) {
    if (RUN_ENDS.has(e.event)) {
      closeAttempt();
      continue;
    }
    if (e.node_id !== node || (e.visit ?? 1) !== visit) continue;
    switch (e.event) {
      case 'stage.started':
        attempt(e.properties.attempt);
        break;
      case 'stage.retrying':
      case 'stage.completed':
      case 'stage.failed':
        closeAttempt();
        break;
      case 'agent.turn.started':
        turnOf(e.properties.turn, e.seq);
        break;
      case 'agent.text': {
        const t = turnOf(e.properties.turn, e.seq);
        if (t.textCut) break;
        const room = TURN_TEXT_MAX - t.text.length;
        if (e.properties.text.length > room) {
          t.text += e.properties.text.slice(0, room);
          t.textCut = true;
        } else {
          t.text += e.properties.text;
        }
        break;
      }
      case 'agent.turn.completed': {
        const t = turnOf(e.properties.turn, e.seq);
        t.inputTokens = e.properties.input_tokens;
        t.outputTokens = e.properties.output_tokens;
        t.durationMs = e.properties.duration_ms;
        t.done = true;
        break;
      }
      case 'agent.tool.started': {
        const call: ToolCall = {
          callId: e.properties.call_id,
          tool: e.properties.tool,
          summary: e.properties.summary,
          arguments: e.properties.arguments,
          state: 'running',
          startedAt: time(e.ts),
          endedAt: null,
          durationMs: null,
          preview: null,
          outputBytes: null,
          touched: [],
          seq: e.seq,
        };
        turnForTool(e.seq).tools.push(call);
        open.set(call.callId, call);
        break;
      }
      case 'agent.tool.completed': {
        const p = e.properties;
        let call = open.get(p.call_id);
        if (call) {
          open.delete(p.call_id);
        } else {
          // The start was not seen (a page of history cut it off): a row from the completion alone.
          call = { callId: p.call_id, tool: p.tool, summary: '', arguments: null, state: 'running', startedAt: time(e.ts) - p.duration_ms, endedAt: null, durationMs: null, preview: null, outputBytes: null, touched: [], seq: e.seq };
          turnForTool(e.seq).tools.push(call);
        }
        call.state = p.is_error ? 'failed' : 'succeeded';
        call.endedAt = time(e.ts);
        call.durationMs = p.duration_ms;
        call.preview = p.preview;
        call.outputBytes = p.output_bytes;
        call.touched = p.is_error ? [] : (p.touched ?? []);
        for (const path of call.touched) touched.add(path);
        break;
      }
      case 'agent.compaction':
        attempt(null).entries.push({
          kind: 'compaction',
          seq: e.seq,
          originalTurns: e.properties.original_turns,
          preservedTurns: e.properties.preserved_turns,
          estimatedTokens: e.properties.estimated_tokens,
          contextWindow: e.properties.context_window,
        });
        turn = null;
        break;
      case 'agent.loop_detected':
        attempt(null).entries.push({ kind: 'loop_detected', seq: e.seq, patternLen: e.properties.pattern_len, tools: e.properties.tools });
        break;
      case 'agent.steered':
        attempt(null).entries.push({ kind: 'steered', seq: e.seq, text: e.properties.text });
        turn = null;
        break;
      case 'llm.completed':
        spend.calls += 1;
        spend.inputTokens += e.properties.input_tokens;
        spend.outputTokens += e.properties.output_tokens;
        if (e.properties.cost != null) spend.cost = (spend.cost ?? 0) + e.properties.cost;
        break;
      default:
        break;
    }
  }
  return { attempts, spend, filesTouched: [...touched].sort() };
}

/** Whether the events hold any agent activity for `node`@`visit`. */
export function hasAgentEvents(events: readonly Event[], node: string, visit: number): boolean {
  return events.some((e) => e.event.startsWith('agent.') && e.node_id === node && (e.visit ?? 1) === visit);
}

/** A tool call's span on the timeline. */
export interface ToolTick {
  tool: string;
  summary: string;
  start: number;
  /** The completion; for a call still running, null (the bar's end). */
  end: number | null;
  failed: boolean;
}

/**
 * Every stage's tool calls as timeline ticks, keyed `node@visit`, in one
 * pass over the events (the timeline draws all stages at once). Pairing as
 * in `agentTranscript`: a completion closes the latest open call with its id.
 */
export function toolTicksByStage(events: readonly Event[]): Map<string, ToolTick[]> {
  const byStage = new Map<string, ToolTick[]>();
  const open = new Map<string, ToolTick>();
  for (const e of events) {
    if (!e.node_id || (e.event !== 'agent.tool.started' && e.event !== 'agent.tool.completed')) continue;
    const key = `${e.node_id}@${e.visit ?? 1}`;
    const callKey = `${key}\u0000${e.properties.call_id}`;
    if (e.event === 'agent.tool.started') {
      const tick: ToolTick = { tool: e.properties.tool, summary: e.properties.summary, start: time(e.ts), end: null, failed: false };
      const list = byStage.get(key) ?? [];
      list.push(tick);
      byStage.set(key, list);
      open.set(callKey, tick);
    } else {
      const tick = open.get(callKey);
      if (!tick) continue;
      open.delete(callKey);
      tick.end = time(e.ts);
      tick.failed = e.properties.is_error;
    }
  }
  return byStage;
}
