import { useLayoutEffect, useMemo, useRef, useState } from 'react';

import type { JsonValue, Outcome, StageRecord } from '../api';
import { renderMarkdown } from '../artifacts/markdown';
import { formatCost, formatDuration, formatTokens } from '../format';
import type { AgentTranscript, Notice, ToolCall, ToolCallState, Turn } from './transcript';

/** The stage's outcome once it has one (a running stage has none). */
function outcomeOf(stage: StageRecord): Outcome | null {
  const o = stage.outcome;
  return o && typeof o === 'object' && !Array.isArray(o) ? (o as unknown as Outcome) : null;
}

/**
 * What an agent stage spent and wrote: the outcome's figures once the stage
 * has ended (they cover every attempt), the events' sums while it runs.
 */
export function AgentFacts({ stage, transcript }: { stage: StageRecord; transcript: AgentTranscript }) {
  const outcome = outcomeOf(stage);
  const llm = outcome?.llm;
  const spend = llm
    ? { calls: llm.calls, input_tokens: llm.usage.input, output_tokens: llm.usage.output, cost: llm.cost, priced: llm.calls > llm.unpriced_calls }
    : {
        calls: transcript.spend.calls,
        input_tokens: transcript.spend.inputTokens,
        output_tokens: transcript.spend.outputTokens,
        cost: transcript.spend.cost ?? 0,
        priced: transcript.spend.cost != null,
      };
  const files = outcome?.files_touched ?? transcript.filesTouched;
  return (
    <dl className="stage__facts" data-testid="agent-facts">
      <div>
        <dt>Model</dt>
        <dd data-testid="agent-spend">
          {spend.calls === 0
            ? 'no calls yet'
            : `${formatTokens(spend.input_tokens)} in · ${formatTokens(spend.output_tokens)} out · ${spend.priced ? formatCost(spend) : 'no price'} · ${spend.calls} ${spend.calls === 1 ? 'call' : 'calls'}`}
        </dd>
      </div>
      <div>
        <dt>Files touched</dt>
        <dd data-testid="files-touched">
          {files.length === 0 ? (
            <span className="muted">none</span>
          ) : (
            <ul className="stage__files">
              {files.map((f) => (
                <li key={f} className="run-mono">
                  {f}
                </li>
              ))}
            </ul>
          )}
        </dd>
      </div>
    </dl>
  );
}

const STATE_WORDS: Record<ToolCallState, string> = {
  running: 'running…',
  succeeded: '',
  failed: 'error',
  unfinished: 'no result',
};

/** The arguments as indented JSON (a string argument as itself). */
function argumentsText(args: JsonValue | null): string {
  if (args == null) return '(not recorded)';
  return JSON.stringify(args, null, 2);
}

/**
 * One tool call, collapsed to a line (tool, summary, duration, state);
 * expanded, its arguments and the start of its output. The body is built
 * only while open: a long session has hundreds of calls.
 */
function ToolCallRow({ call, stageRunning }: { call: ToolCall; stageRunning: boolean }) {
  const [open, setOpen] = useState(false);
  // A call still "running" in a stage that has ended lost its result (the
  // run's end event was not seen).
  const state: ToolCallState = call.state === 'running' && !stageRunning ? 'unfinished' : call.state;
  const more = call.outputBytes != null && call.preview != null && call.outputBytes > call.preview.length;
  return (
    <details className={`tool-call tool-call--${state}`} data-testid="tool-call" data-tool={call.tool} data-state={state} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        <span className="run-mono tool-call__tool">{call.tool}</span>
        <span className="tool-call__summary" title={call.summary}>
          {call.summary}
        </span>
        <span className="tool-call__time muted">{call.durationMs != null ? formatDuration(call.durationMs) : ''}</span>
        {STATE_WORDS[state] && <span className="tool-call__state">{STATE_WORDS[state]}</span>}
      </summary>
      {open && (
        <div className="tool-call__body">
          <div className="tool-call__label muted">Arguments</div>
          <pre className="stage__text" data-testid="tool-arguments">
            {argumentsText(call.arguments)}
          </pre>
          <div className="tool-call__label muted">{state === 'failed' ? 'Error' : 'Output'}</div>
          {call.preview != null ? (
            <pre className="stage__text" data-testid="tool-output">
              {call.preview}
              {more && <span className="muted">{`\n(the first part of ${call.outputBytes} bytes; the whole is in the stage's tools/ folder)`}</span>}
            </pre>
          ) : (
            <p className="muted">{state === 'running' ? 'No result yet.' : 'No result was recorded.'}</p>
          )}
          {call.touched.length > 0 && <p className="muted">Wrote {call.touched.join(', ')}</p>}
        </div>
      )}
    </details>
  );
}

/** A turn: its Markdown text (escaped by `renderMarkdown`), then its tool calls. */
function TurnView({ turn, stageRunning }: { turn: Turn; stageRunning: boolean }) {
  const html = useMemo(() => renderMarkdown(turn.text), [turn.text]);
  const tokens =
    turn.inputTokens != null
      ? ` · ${formatTokens(turn.inputTokens)} in · ${formatTokens(turn.outputTokens ?? 0)} out · ${formatDuration(turn.durationMs ?? 0)}`
      : '';
  return (
    <li className="transcript__turn" data-testid="agent-turn" data-turn={turn.turn}>
      <div className="transcript__turn-head muted">
        {turn.turn > 0 ? `Turn ${turn.turn}` : 'Tool calls'}
        {tokens}
      </div>
      {turn.text && (
        // Safe: renderMarkdown escapes every piece of the source; no raw HTML gets through.
        <div className="transcript__text" data-testid="agent-text" dangerouslySetInnerHTML={{ __html: html }} />
      )}
      {turn.textCut && <p className="muted">(The rest of this turn's text is in response.md and transcript.jsonl.)</p>}
      {turn.tools.length > 0 && (
        <div className="transcript__tools">
          {turn.tools.map((call) => (
            <ToolCallRow key={`${call.callId}#${call.seq}`} call={call} stageRunning={stageRunning} />
          ))}
        </div>
      )}
    </li>
  );
}

/** A compaction, loop warning or steering message, as one short line. */
function noticeText(n: Notice): string {
  switch (n.kind) {
    case 'compaction':
      return `Compacted: ${n.originalTurns} earlier turns summarised, the last ${n.preservedTurns} kept (about ${formatTokens(n.estimatedTokens)} of a ${formatTokens(n.contextWindow)}-token window).`;
    case 'loop_detected':
      return `Loop detected: ${n.tools.join(', ')} repeated; the model was warned.`;
    case 'steered':
      return `Steered: “${n.text}”`;
  }
}

/** How close to the bottom (px) counts as "following" the live transcript. */
const FOLLOW_SLACK_PX = 24;

/**
 * The transcript of an agent stage, attempt by attempt (earlier attempts
 * folded away): turns with their text and tool calls, and notices between
 * them. While the reader is at the bottom, new entries keep it there.
 */
export function TranscriptView({ transcript, stageRunning }: { transcript: AgentTranscript; stageRunning: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  const following = useRef(true);
  const size = transcript.attempts.reduce((n, a) => n + a.entries.length, 0);
  const lastText = transcript.attempts.at(-1)?.entries.at(-1);
  const tail = lastText?.kind === 'turn' ? lastText.text.length + lastText.tools.length : 0;
  useLayoutEffect(() => {
    const el = box.current;
    if (el && following.current) el.scrollTop = el.scrollHeight;
  }, [size, tail]);
  if (transcript.attempts.length === 0) {
    return <p className="muted">{stageRunning ? 'The agent has not started its first turn yet.' : 'This stage recorded no agent activity.'}</p>;
  }
  const several = transcript.attempts.length > 1;
  return (
    <div
      className="transcript"
      data-testid="agent-transcript"
      ref={box}
      onScroll={(e) => {
        const el = e.currentTarget;
        following.current = el.scrollHeight - el.scrollTop - el.clientHeight < FOLLOW_SLACK_PX;
      }}
    >
      {transcript.attempts.map((a, i) => {
        const last = i === transcript.attempts.length - 1;
        const entries = (
          <ol className="transcript__entries">
            {a.entries.map((entry) =>
              entry.kind === 'turn' ? (
                <TurnView key={`t${entry.seq}`} turn={entry} stageRunning={stageRunning && last} />
              ) : (
                <li key={`n${entry.seq}`} className={`transcript__notice transcript__notice--${entry.kind}`} data-testid="agent-notice" data-kind={entry.kind}>
                  {noticeText(entry)}
                </li>
              ),
            )}
          </ol>
        );
        return several ? (
          <details key={a.attempt} className="transcript__attempt" open={last}>
            <summary>Attempt {a.attempt}</summary>
            {entries}
          </details>
        ) : (
          <div key={a.attempt}>{entries}</div>
        );
      })}
    </div>
  );
}
