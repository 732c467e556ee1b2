import { describe, expect, it } from 'vitest';

import type { Event } from '../api/wire';
import { ev } from './fixture.test-data';
import { agentTranscript, hasAgentEvents, toolTicksByStage, TURN_TEXT_MAX, type Turn } from './transcript';

const started = (at: number, attempt = 1) => ev(at, 'fix', 1, { event: 'stage.started', properties: { handler: 'agent', attempt } });
const turnStarted = (at: number, turn: number) => ev(at, 'fix', 1, { event: 'agent.turn.started', properties: { turn } });
const text = (at: number, turn: number, t: string) => ev(at, 'fix', 1, { event: 'agent.text', properties: { turn, text: t } });
const turnDone = (at: number, turn: number, tool_calls: number) =>
  ev(at, 'fix', 1, { event: 'agent.turn.completed', properties: { turn, tool_calls, input_tokens: 1200, output_tokens: 80, duration_ms: 900 } });
const toolStarted = (at: number, call_id: string, tool: string, summary: string, args: Record<string, string>) =>
  ev(at, 'fix', 1, { event: 'agent.tool.started', properties: { call_id, tool, summary, arguments: args } });
const toolDone = (at: number, call_id: string, tool: string, is_error: boolean, preview: string, touched: string[] = []) =>
  ev(at, 'fix', 1, { event: 'agent.tool.completed', properties: { call_id, tool, duration_ms: 1000, is_error, preview, output_bytes: preview.length, touched } });

const turns = (events: Event[]) => agentTranscript(events, 'fix', 1).attempts.flatMap((a) => a.entries.filter((e): e is Turn => e.kind === 'turn'));

describe('agentTranscript', () => {
  it('joins the coalesced text chunks of a turn in order, and takes its tokens from the turn completion', () => {
    const [turn] = turns([started(0), turnStarted(0, 1), text(1, 1, 'I will read '), text(1, 1, '`src/lib.rs` '), text(2, 1, 'first.'), turnDone(2, 1, 0)]);
    expect(turn?.text).toBe('I will read `src/lib.rs` first.');
    expect([turn?.inputTokens, turn?.outputTokens, turn?.durationMs, turn?.done]).toEqual([1200, 80, 900, true]);
  });

  it('puts each tool call under the turn that asked for it, matched to its completion by call id', () => {
    const events = [
      started(0),
      turnStarted(0, 1),
      text(1, 1, 'Reading.'),
      turnDone(1, 1, 2),
      toolStarted(1, 'c1', 'read_file', 'src/lib.rs', { path: 'src/lib.rs' }),
      toolStarted(1, 'c2', 'grep', 'fn main', { pattern: 'fn main' }),
      toolDone(2, 'c2', 'grep', false, 'src/main.rs:1:fn main() {}'),
      toolDone(2, 'c1', 'read_file', false, '1\tpub fn add() {}'),
      turnStarted(3, 2),
      toolStarted(3, 'c3', 'edit_file', 'src/lib.rs', { path: 'src/lib.rs' }),
      toolDone(4, 'c3', 'edit_file', false, 'edited', ['src/lib.rs']),
    ];
    const [first, second] = turns(events);
    expect(first?.tools.map((c) => [c.callId, c.tool, c.state, c.preview])).toEqual([
      ['c1', 'read_file', 'succeeded', '1\tpub fn add() {}'],
      ['c2', 'grep', 'succeeded', 'src/main.rs:1:fn main() {}'],
    ]);
    expect(first?.tools[0]?.arguments).toEqual({ path: 'src/lib.rs' });
    expect(second?.tools.map((c) => c.callId)).toEqual(['c3']);
    expect(agentTranscript(events, 'fix', 1).filesTouched).toEqual(['src/lib.rs']);
  });

  it('shows a call without a completion as running while the attempt goes on', () => {
    const [turn] = turns([started(0), turnStarted(0, 1), toolStarted(1, 'c1', 'shell', 'cargo test', { command: 'cargo test' })]);
    expect(turn?.tools[0]?.state).toBe('running');
    expect(turn?.tools[0]?.endedAt).toBeNull();
  });

  it('marks a call the attempt ended without completing as unfinished', () => {
    const events = [
      started(0),
      turnStarted(0, 1),
      toolStarted(1, 'c1', 'shell', 'sleep 100', { command: 'sleep 100' }),
      ev(5, null, null, { event: 'run.cancelled', properties: { reason: 'cancelled by the user', duration_ms: 5000 } }),
    ];
    expect(turns(events)[0]?.tools[0]?.state).toBe('unfinished');
  });

  it('shows a failed call as failed, with its error output, and counts none of its paths as touched', () => {
    const events = [
      started(0),
      turnStarted(0, 1),
      toolStarted(1, 'c1', 'write_file', 'src/lib.rs', { path: 'src/lib.rs' }),
      toolDone(2, 'c1', 'write_file', true, 'src/lib.rs exists and was not read: read it first', ['src/lib.rs']),
    ];
    const call = turns(events)[0]?.tools[0];
    expect([call?.state, call?.preview, call?.durationMs]).toEqual(['failed', 'src/lib.rs exists and was not read: read it first', 1000]);
    expect(call?.touched).toEqual([]);
    expect(agentTranscript(events, 'fix', 1).filesTouched).toEqual([]);
  });

  it('starts a new transcript for each attempt, and the same call id in a later attempt is a new call', () => {
    const events = [
      started(0, 1),
      turnStarted(0, 1),
      toolStarted(1, 'c1', 'shell', 'make', { command: 'make' }),
      ev(2, 'fix', 1, { event: 'stage.retrying', properties: { attempt: 1, delay_ms: 10, reason: 'llm.overloaded' } }),
      started(3, 2),
      turnStarted(3, 1),
      toolStarted(4, 'c1', 'shell', 'make', { command: 'make' }),
      toolDone(5, 'c1', 'shell', false, 'ok'),
    ];
    const t = agentTranscript(events, 'fix', 1);
    expect(t.attempts.map((a) => [a.attempt, a.ended])).toEqual([
      [1, true],
      [2, false],
    ]);
    const states = t.attempts.map((a) => a.entries.flatMap((e) => (e.kind === 'turn' ? e.tools.map((c) => c.state) : [])));
    expect(states).toEqual([['unfinished'], ['succeeded']]);
  });

  it('keeps compaction, loop detection and steering as notices in the order they happened', () => {
    const events = [
      started(0),
      turnStarted(0, 1),
      turnDone(1, 1, 0),
      ev(1, 'fix', 1, { event: 'agent.steered', properties: { text: 'Use the new API' } }),
      ev(2, 'fix', 1, { event: 'agent.compaction', properties: { original_turns: 30, preserved_turns: 6, estimated_tokens: 150_000, context_window: 200_000 } }),
      turnStarted(2, 2),
      ev(3, 'fix', 1, { event: 'agent.loop_detected', properties: { pattern_len: 1, tools: ['read_file'] } }),
    ];
    const kinds = agentTranscript(events, 'fix', 1).attempts[0]?.entries.map((e) => e.kind);
    expect(kinds).toEqual(['turn', 'steered', 'compaction', 'turn', 'loop_detected']);
  });

  it('cuts a runaway turn text at TURN_TEXT_MAX and says so', () => {
    const chunk = 'x'.repeat(100_000);
    const events = [started(0), turnStarted(0, 1), text(1, 1, chunk), text(1, 1, chunk), text(1, 1, chunk), text(2, 1, 'tail')];
    const [turn] = turns(events);
    expect(turn?.text.length).toBe(TURN_TEXT_MAX);
    expect(turn?.textCut).toBe(true);
  });

  it('sums the stage’s model calls, ignoring other stages', () => {
    const llm = (node: string, cost: number | null) =>
      ev(1, node, 1, {
        event: 'llm.completed',
        properties: { provider: 'openai', model: 'gpt-5', input_tokens: 1000, output_tokens: 50, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost, finish: 'stop', duration_ms: 100 },
      });
    const spend = agentTranscript([started(0), llm('fix', 0.01), llm('fix', null), llm('other', 5)], 'fix', 1).spend;
    expect(spend).toEqual({ calls: 2, inputTokens: 2000, outputTokens: 100, cost: 0.01 });
  });

  it('ignores the agent events of other stages and visits', () => {
    const other = ev(1, 'fix', 2, { event: 'agent.turn.started', properties: { turn: 1 } });
    expect(agentTranscript([other], 'fix', 1).attempts).toEqual([]);
    expect(hasAgentEvents([other], 'fix', 1)).toBe(false);
    expect(hasAgentEvents([other], 'fix', 2)).toBe(true);
  });
});

describe('toolTicksByStage', () => {
  it('gives each tool call its start, end and error state, per stage', () => {
    const events = [
      toolStarted(1, 'c1', 'shell', 'cargo test', { command: 'cargo test' }),
      toolDone(3, 'c1', 'shell', true, 'exit 101'),
      toolStarted(4, 'c2', 'read_file', 'README.md', { path: 'README.md' }),
    ];
    const ticks = toolTicksByStage(events).get('fix@1') ?? [];
    const at = (e: Event) => Date.parse(e.ts);
    expect(ticks).toEqual([
      { tool: 'shell', summary: 'cargo test', start: at(events[0]!), end: at(events[1]!), failed: true },
      { tool: 'read_file', summary: 'README.md', start: at(events[2]!), end: null, failed: false },
    ]);
  });
});
