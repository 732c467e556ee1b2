// A small hand-written agent stage for the unit tests of its panel and
// timeline ticks, in wire types (so tsc checks it against the generated
// events): one attempt, two turns, four tool calls (one failed), a steering
// notice, and the last call still running while the stage runs.
import type { Event, StageRecord } from '../api/wire';
import { ev, RUN, stage } from './fixture.test-data';

export const AGENT_NODE = 'fix';

/** The stage's events; `running` leaves out the end (the last call still open). */
export function agentEvents(running: boolean): Event[] {
  const n = AGENT_NODE;
  const events: Event[] = [
    ev(20, n, 1, { event: 'stage.started', properties: { handler: 'agent', attempt: 1 } }),
    ev(20, n, 1, { event: 'agent.turn.started', properties: { turn: 1 } }),
    ev(21, n, 1, { event: 'agent.text', properties: { turn: 1, text: 'I will **read** the failing test first.\n\n' } }),
    ev(21, n, 1, { event: 'agent.text', properties: { turn: 1, text: '- `src/lib.rs`\n- <script>alert(1)</script>\n' } }),
    ev(22, n, 1, {
      event: 'llm.completed',
      properties: { provider: 'anthropic', model: 'claude-sonnet-4-5', input_tokens: 2400, output_tokens: 120, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost: 0.0090, finish: 'tool_use', duration_ms: 1800 },
    }),
    ev(22, n, 1, { event: 'agent.turn.completed', properties: { turn: 1, tool_calls: 2, input_tokens: 2400, output_tokens: 120, duration_ms: 1800 } }),
    ev(22, n, 1, { event: 'agent.tool.started', properties: { call_id: 'toolu_1', tool: 'read_file', summary: 'src/lib.rs', arguments: { path: 'src/lib.rs' } } }),
    ev(22, n, 1, { event: 'agent.tool.started', properties: { call_id: 'toolu_2', tool: 'write_file', summary: 'src/main.rs', arguments: { path: 'src/main.rs', content: 'fn main() {}\n' } } }),
    ev(23, n, 1, { event: 'agent.tool.completed', properties: { call_id: 'toolu_1', tool: 'read_file', duration_ms: 4, is_error: false, preview: '1\tpub fn add(a: i32, b: i32) -> i32 {\n2\t    a - b\n3\t}\n', output_bytes: 44 } }),
    ev(23, n, 1, {
      event: 'agent.tool.completed',
      properties: { call_id: 'toolu_2', tool: 'write_file', duration_ms: 2, is_error: true, preview: 'src/main.rs exists and has not been read: read it before writing it', output_bytes: 66 },
    }),
    ev(24, n, 1, { event: 'agent.steered', properties: { text: 'Keep the public API unchanged.' } }),
    ev(24, n, 1, { event: 'agent.turn.started', properties: { turn: 2 } }),
    ev(25, n, 1, { event: 'agent.text', properties: { turn: 2, text: 'Fixing the sign and running the tests.' } }),
    ev(26, n, 1, {
      event: 'llm.completed',
      properties: { provider: 'anthropic', model: 'claude-sonnet-4-5', input_tokens: 3100, output_tokens: 90, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost: 0.0108, finish: 'tool_use', duration_ms: 1500 },
    }),
    ev(26, n, 1, { event: 'agent.turn.completed', properties: { turn: 2, tool_calls: 2, input_tokens: 3100, output_tokens: 90, duration_ms: 1500 } }),
    ev(26, n, 1, {
      event: 'agent.tool.started',
      properties: { call_id: 'toolu_3', tool: 'edit_file', summary: 'src/lib.rs', arguments: { path: 'src/lib.rs', old_string: 'a - b', new_string: 'a + b' } },
    }),
    ev(26, n, 1, { event: 'agent.tool.completed', properties: { call_id: 'toolu_3', tool: 'edit_file', duration_ms: 3, is_error: false, preview: 'Edited src/lib.rs (1 replacement)', output_bytes: 33, touched: ['src/lib.rs'] } }),
    ev(26, n, 1, { event: 'agent.tool.started', properties: { call_id: 'toolu_4', tool: 'shell', summary: 'cargo test', arguments: { command: 'cargo test' } } }),
  ];
  if (running) return events;
  return [
    ...events,
    ev(30, n, 1, { event: 'agent.tool.completed', properties: { call_id: 'toolu_4', tool: 'shell', duration_ms: 4000, is_error: false, preview: 'test result: ok. 3 passed', output_bytes: 25, touched: [] } }),
    ev(31, n, 1, {
      event: 'stage.completed',
      properties: {
        status: 'succeeded',
        duration_ms: 11_000,
        attempts: 1,
        outcome: { status: 'succeeded', files_touched: ['src/lib.rs'], llm: { provider: 'anthropic', model: 'claude-sonnet-4-5', calls: 2, usage: { input: 5500, output: 210, reasoning: 0, cache_read: 0, cache_write: 0 }, cost: 0.0198, unpriced_calls: 0 } },
      },
    }),
  ];
}

/** The stage's record: running, or succeeded with its outcome. */
export function agentStage(running: boolean): StageRecord {
  return stage(AGENT_NODE, 1, 4, running ? 'running' : 'succeeded', 20, running ? null : 31, {
    handler: 'agent',
    run_id: RUN,
    outcome: running
      ? null
      : {
          status: 'succeeded',
          files_touched: ['src/lib.rs'],
          llm: { provider: 'anthropic', model: 'claude-sonnet-4-5', calls: 2, usage: { input: 5500, output: 210, reasoning: 0, cache_read: 0, cache_write: 0 }, cost: 0.0198, unpriced_calls: 0 },
        },
  });
}
