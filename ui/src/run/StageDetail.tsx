import { useEffect, useMemo, useState } from 'react';

import type { Event, Host, RunSummary, StageRecord } from '../api';
import { formatCost, formatDateTime, formatDuration, formatTokens } from '../format';
import { AgentFacts, TranscriptView } from './AgentTranscript';
import { edgeReasonText, routingOf, stageContainers, stageFailureReason, type StageContainer } from './derive';
import { StageCheckpointMenu } from './ForkActions';
import { SteerBox } from './SteerBox';
import { agentTranscript, hasAgentEvents } from './transcript';
import type { FilesLoad } from './useRun';

type Tab = 'transcript' | 'response' | 'prompt' | 'script' | 'stdout' | 'stderr' | 'status' | 'context' | 'routing';

const TAB_NAMES: Record<Tab, string> = {
  transcript: 'Transcript',
  response: 'response.md',
  prompt: 'prompt.md',
  script: 'Command',
  stdout: 'stdout',
  stderr: 'stderr',
  status: 'status.json',
  context: 'Context updates',
  routing: 'Routing',
};

/**
 * The stage's language-model spend from its outcome (`outcome.llm`, what
 * `weft cost` sums), as `claude-haiku-4-5 · 12.4k in / 3.2k out · $0.05`;
 * null when it called no model.
 */
export function stageSpendText(stage: StageRecord): string | null {
  const o = stage.outcome;
  if (!o || typeof o !== 'object' || Array.isArray(o)) return null;
  const llm = o.llm;
  if (!llm || typeof llm !== 'object' || Array.isArray(llm)) return null;
  const usage = llm.usage && typeof llm.usage === 'object' && !Array.isArray(llm.usage) ? llm.usage : {};
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const calls = num(llm.calls);
  const cost = formatCost({ cost: num(llm.cost), unpriced_calls: num(llm.unpriced_calls) });
  const model = typeof llm.model === 'string' ? llm.model : 'model';
  return `${model} · ${formatTokens(num(usage.input))} in / ${formatTokens(num(usage.output))} out · ${cost} · ${calls} ${calls === 1 ? 'call' : 'calls'}`;
}

/**
 * Where the stage ran its commands, when in the run's container
 * (docs/sandbox.md): its id and image, and whether a resume after a crash
 * reused it. Nothing for a stage on the host.
 */
export function StageContainers({ containers, running }: { containers: readonly StageContainer[]; running: boolean }) {
  if (containers.length === 0) return null;
  return (
    <p className="muted stage__where" data-testid="stage-container">
      {containers.map((c, i) => (
        <span key={`${i}-${c.container}`} title={`on the engine at ${c.engine}`}>
          {i === 0 ? (running ? 'Runs in container ' : 'Ran in container ') : ', then in container '}
          <code className="run-mono">{c.container}</code> ({c.image}){c.reused ? ' (reused after a restart)' : ''}
        </span>
      ))}
    </p>
  );
}

function contextUpdates(stage: StageRecord): Record<string, unknown> | null {
  const o = stage.outcome;
  if (o && typeof o === 'object' && !Array.isArray(o) && o.context_updates && typeof o.context_updates === 'object') {
    return o.context_updates as Record<string, unknown>;
  }
  return null;
}

/**
 * The selected stage: status, timing, attempts, the container it ran in (a
 * sandboxed run) and its files, outcome and routing; for an agent stage also
 * its transcript, spend and files touched, and while it runs a box to steer
 * it (when `host` is given); with `run` too, its checkpoint menu (fork from
 * here, rewind to here).
 */
export function StageDetail({
  stage,
  files,
  events,
  host,
  run,
  onShowChanges,
}: {
  stage: StageRecord;
  files: FilesLoad;
  events: readonly Event[];
  host?: Host;
  /** The stage's run, for its checkpoint menu (fork, rewind; with `host`). */
  run?: RunSummary | undefined;
  /** Shows this stage's diff in the run's Files Changed panel (a git-checkpointed run only). */
  onShowChanges?: (() => void) | undefined;
}) {
  const ready = files.kind === 'ready' ? files.files : null;
  const updates = contextUpdates(stage);
  const routing = routingOf(events, stage.node_id, stage.visit);
  // An agent stage (or one that reported agent activity) gets its transcript, first.
  const isAgent = stage.handler === 'agent' || hasAgentEvents(events, stage.node_id, stage.visit);
  const transcript = useMemo(
    () => (isAgent ? agentTranscript(events, stage.node_id, stage.visit) : null),
    [isAgent, events, stage.node_id, stage.visit],
  );
  const texts: Partial<Record<Tab, string | null | undefined>> = {
    response: ready?.response,
    prompt: ready?.prompt,
    script: ready?.script,
    stdout: ready?.stdout,
    stderr: ready?.stderr,
    status: ready?.status != null ? JSON.stringify(ready.status, null, 2) : null,
    context: updates && Object.keys(updates).length > 0 ? JSON.stringify(updates, null, 2) : null,
  };
  const available = (Object.keys(TAB_NAMES) as Tab[]).filter((t) =>
    t === 'routing' ? routing.length > 0 : t === 'transcript' ? transcript !== null : !!texts[t],
  );
  const [tab, setTab] = useState<Tab | null>(null);
  const key = `${stage.node_id}@${stage.visit}`;
  useEffect(() => setTab(null), [key]);
  const shown = tab && available.includes(tab) ? tab : (available[0] ?? null);
  const reason = stageFailureReason(stage);
  const spend = stageSpendText(stage);
  const containers = useMemo(() => stageContainers(events, stage.node_id, stage.visit), [events, stage.node_id, stage.visit]);
  const retries = events.filter(
    (e) => e.event === 'stage.retrying' && e.node_id === stage.node_id && (e.visit ?? 1) === stage.visit,
  );

  return (
    <section className="stage" aria-label="Stage" data-testid="stage-detail" data-node={stage.node_id}>
      <header className="stage__head">
        <h3>
          {stage.node_id}
          {stage.visit > 1 ? `@${stage.visit}` : ''}
        </h3>
        <span className={`run-chip run-chip--${stage.status}`}>{stage.status.replace('_', ' ')}</span>
        <span className="muted">
          {stage.handler} · started {formatDateTime(stage.started_at)} ·{' '}
          {stage.duration_ms != null ? formatDuration(stage.duration_ms) : 'running'}
          {stage.attempts > 0 ? ` · ${stage.attempts} ${stage.attempts === 1 ? 'attempt' : 'attempts'}` : ''}
          {stage.branch ? ` · branch ${stage.branch}` : ''}
        </span>
        {onShowChanges && (
          <button type="button" className="link" data-testid="stage-changes-link" onClick={onShowChanges}>
            Files changed
          </button>
        )}
        {host && run && <StageCheckpointMenu key={`${stage.node_id}@${stage.visit}`} host={host} run={run} stage={stage} />}
      </header>
      <StageContainers containers={containers} running={stage.status === 'running'} />
      {spend && !transcript && (
        <p className="muted" data-testid="stage-spend">
          {spend}
        </p>
      )}
      {reason && stage.status !== 'succeeded' && <p className="error">{reason}</p>}
      {retries.length > 0 && (
        <ul className="stage__retries">
          {retries.map((e) =>
            e.event === 'stage.retrying' ? (
              <li key={e.seq}>
                Attempt {e.properties.attempt} retried after {formatDuration(e.properties.delay_ms)}: {e.properties.reason}
              </li>
            ) : null,
          )}
        </ul>
      )}
      {transcript && <AgentFacts stage={stage} transcript={transcript} />}
      {transcript && host && stage.status === 'running' && <SteerBox key={key} host={host} runId={stage.run_id} node={stage.node_id} />}
      {files.kind === 'loading' && <p className="muted">Loading the stage's files…</p>}
      {files.kind === 'failed' && <p className="error">Could not read the stage's files: {files.message}</p>}
      {available.length > 0 && (
        <div className="tabs" role="tablist" aria-label="Stage files">
          {available.map((t) => (
            <button key={t} type="button" role="tab" aria-selected={shown === t} onClick={() => setTab(t)}>
              {TAB_NAMES[t]}
            </button>
          ))}
        </div>
      )}
      {shown === 'transcript' && transcript ? (
        <TranscriptView transcript={transcript} stageRunning={stage.status === 'running'} />
      ) : shown === 'routing' ? (
        <ul className="stage__routing" data-testid="routing">
          {routing.map((e) =>
            e.event === 'edge.selected' ? (
              <li key={e.seq}>
                Went to <strong>{e.properties.to_node}</strong>
                {e.properties.label ? ` by “${e.properties.label}”` : ''} because{' '}
                {edgeReasonText(e.properties.reason, e.properties.label, e.properties.condition)}.
              </li>
            ) : null,
          )}
        </ul>
      ) : shown ? (
        <pre className="stage__text" data-testid="stage-text">
          {texts[shown]}
          {ready?.truncated.includes(shown) && <span className="muted">{'\n'}(cut: only part of the file is shown)</span>}
        </pre>
      ) : (
        files.kind === 'ready' && <p className="muted">This stage left no files.</p>
      )}
    </section>
  );
}
