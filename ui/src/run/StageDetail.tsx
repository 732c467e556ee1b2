import { useMemo, useState, type ReactNode } from 'react';

import type { Event, Host, RunSummary, StageRecord } from '../api';
import type { StageTab } from '../app/route';
import { TabList, TabPanel, type TabSpec } from '../components/panes';
import { formatCost, formatDateTime, formatDuration, formatTokens } from '../format';
import { AgentFacts, TranscriptView } from './AgentTranscript';
import { STAGE_TAB_KEYS } from './shortcuts';
import { edgeReasonText, routingOf, stageContainers, stageFailureReason, type StageContainer } from './derive';
import { StageCheckpointMenu } from './ForkActions';
import { SteerBox } from './SteerBox';
import { agentTranscript, hasAgentEvents, type AgentTranscript } from './transcript';
import type { FilesLoad } from './useRun';

/** The stage files the Output tab shows beside its logs (stdout and stderr are the logs). */
type StageFile = 'response' | 'prompt' | 'script';

const FILE_NAMES: Record<StageFile, string> = {
  response: 'response.md',
  prompt: 'prompt.md',
  script: 'Command',
};

const TAB_NAMES: Record<StageTab, string> = {
  transcript: 'Transcript',
  output: 'Output',
  files: 'Files changed',
  artifacts: 'Artifacts',
  routing: 'Routing',
  context: 'Context',
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

type Outcome = Record<string, unknown>;

function outcomeOf(stage: StageRecord): Outcome | null {
  const o = stage.outcome;
  return o && typeof o === 'object' && !Array.isArray(o) ? (o as Outcome) : null;
}

function contextUpdates(stage: StageRecord): Record<string, unknown> | null {
  const updates = outcomeOf(stage)?.context_updates;
  return updates && typeof updates === 'object' && !Array.isArray(updates) ? (updates as Record<string, unknown>) : null;
}

/** True for an agent stage, or one that reported agent activity: it has a transcript. */
export function isAgentStage(stage: StageRecord, events: readonly Event[]): boolean {
  return stage.handler === 'agent' || hasAgentEvents(events, stage.node_id, stage.visit);
}

/** The stage panel's tabs for `stage`: Transcript only for an agent stage. */
export function stageTabsOf(agent: boolean): StageTab[] {
  return (Object.keys(TAB_NAMES) as StageTab[]).filter((t) => t !== 'transcript' || agent);
}

/** The tab to show: `wanted` when this stage has it, else Output. */
export function shownStageTab(wanted: StageTab, agent: boolean): StageTab {
  return wanted === 'transcript' && !agent ? 'output' : wanted;
}

/** The parts of the stage's work that are the run screen's (logs, changes, artifacts), drawn in their tabs. */
export type RunPanels = Partial<Record<'output' | 'files' | 'artifacts', ReactNode>>;

/**
 * The selected stage: a summary (status, timing, attempts, the container it
 * ran in, spend, why it failed; for an agent stage its facts and, while it
 * runs, a box to steer it; with `run` and `host`, its checkpoint menu) above
 * tabs: Transcript (agent stages), Output, Files changed, Artifacts,
 * Routing and Context. The run screen draws Output, Files changed and
 * Artifacts (`panels`); a tab without data says so.
 */
export function StageDetail({
  stage,
  files,
  events,
  host,
  run,
  tab = 'transcript',
  onTab,
  panels = {},
  onShowChanges,
}: {
  stage: StageRecord;
  files: FilesLoad;
  events: readonly Event[];
  host?: Host;
  /** The stage's run, for its checkpoint menu (fork, rewind; with `host`). */
  run?: RunSummary | undefined;
  /** The tab asked for (Output when this stage lacks it); an agent stage starts on its transcript. */
  tab?: StageTab;
  onTab?: (tab: StageTab) => void;
  panels?: RunPanels;
  /** Shows this stage's diff in the Files changed tab (a git-checkpointed run only). */
  onShowChanges?: (() => void) | undefined;
}) {
  const agent = isAgentStage(stage, events);
  const transcript = useMemo(
    () => (agent ? agentTranscript(events, stage.node_id, stage.visit) : null),
    [agent, events, stage.node_id, stage.visit],
  );
  // Without a run screen to keep it, the panel keeps its own tab.
  const [ownTab, setOwnTab] = useState<StageTab>(tab);
  const wanted = onTab ? tab : ownTab;
  const shown = shownStageTab(wanted, agent);
  const select = onTab ?? setOwnTab;
  const tabs: TabSpec<StageTab>[] = stageTabsOf(agent).map((t) => ({ id: t, label: TAB_NAMES[t], shortcut: STAGE_TAB_KEYS[t] }));

  return (
    <section className="stage" aria-label="Stage" data-testid="stage-detail" data-node={stage.node_id} data-visit={stage.visit}>
      <StageSummary stage={stage} events={events} host={host} run={run} transcript={transcript} onShowChanges={onShowChanges} />
      <TabList group="stage" label="Stage" tabs={tabs} selected={shown} onSelect={select} className="stage__tabs" />
      <TabPanel group="stage" selected={shown} className="stage__panel">
        {shown === 'transcript' && transcript ? (
          <TranscriptView transcript={transcript} stageRunning={stage.status === 'running'} />
        ) : shown === 'output' ? (
          <>
            {panels.output ?? <p className="muted">The output shows on the run screen.</p>}
            <StageFiles files={files} stageKey={`${stage.node_id}@${stage.visit}`} />
          </>
        ) : shown === 'files' ? (
          (panels.files ?? <p className="muted">The changes show on the run screen.</p>)
        ) : shown === 'artifacts' ? (
          (panels.artifacts ?? <p className="muted">The artifacts show on the run screen.</p>)
        ) : shown === 'routing' ? (
          <StageRouting stage={stage} events={events} />
        ) : (
          <StageContext stage={stage} files={files} />
        )}
      </TabPanel>
    </section>
  );
}

/** What is known of the stage at a glance, above its tabs. */
function StageSummary({
  stage,
  events,
  host,
  run,
  transcript,
  onShowChanges,
}: {
  stage: StageRecord;
  events: readonly Event[];
  host?: Host | undefined;
  run?: RunSummary | undefined;
  transcript: AgentTranscript | null;
  onShowChanges?: (() => void) | undefined;
}) {
  const key = `${stage.node_id}@${stage.visit}`;
  const reason = stageFailureReason(stage);
  const spend = stageSpendText(stage);
  const containers = useMemo(() => stageContainers(events, stage.node_id, stage.visit), [events, stage.node_id, stage.visit]);
  const retries = events.filter(
    (e) => e.event === 'stage.retrying' && e.node_id === stage.node_id && (e.visit ?? 1) === stage.visit,
  );
  return (
    <div className="stage__summary" data-testid="stage-summary">
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
        {host && run && <StageCheckpointMenu key={key} host={host} run={run} stage={stage} />}
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
    </div>
  );
}

/** The stage's response, prompt and command, one at a time, under its logs. */
function StageFiles({ files, stageKey }: { files: FilesLoad; stageKey: string }) {
  const ready = files.kind === 'ready' ? files.files : null;
  const available = (Object.keys(FILE_NAMES) as StageFile[]).filter((f) => !!ready?.[f]);
  const [picked, setPicked] = useState<{ key: string; file: StageFile } | null>(null);
  const chosen = picked?.key === stageKey ? picked.file : null;
  const shown = chosen && available.includes(chosen) ? chosen : (available[0] ?? null);
  if (files.kind === 'loading') return <p className="muted">Loading the stage's files…</p>;
  if (files.kind === 'failed') return <p className="error">Could not read the stage's files: {files.message}</p>;
  if (!shown) return null;
  return (
    <div className="stage__files" data-testid="stage-files">
      <div className="tabs" role="group" aria-label="Stage files">
        {available.map((f) => (
          <button key={f} type="button" aria-pressed={shown === f} onClick={() => setPicked({ key: stageKey, file: f })}>
            {FILE_NAMES[f]}
          </button>
        ))}
      </div>
      <pre className="stage__text" data-testid="stage-text">
        {ready?.[shown]}
        {ready?.truncated.includes(shown) && <span className="muted">{'\n'}(cut: only part of the file is shown)</span>}
      </pre>
    </div>
  );
}

/** Why the run went where it went after this stage: the outcome's wishes, then the edges taken. */
function StageRouting({ stage, events }: { stage: StageRecord; events: readonly Event[] }) {
  const routing = routingOf(events, stage.node_id, stage.visit);
  const o = outcomeOf(stage);
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const preferred = str(o?.preferred_label);
  const jump = str(o?.jump_to_node);
  const suggested = list(o?.suggested_next_ids);
  const notes = list(o?.notes);
  const asked = preferred || jump || suggested.length > 0 || notes.length > 0;
  if (routing.length === 0 && !asked) {
    return (
      <p className="muted" data-testid="routing-none">
        {stage.status === 'running' || stage.status === 'pending'
          ? 'The stage has not finished, so the run has not chosen where to go next.'
          : 'No routing decision was recorded after this stage (the run ended or stopped here).'}
      </p>
    );
  }
  return (
    <div data-testid="routing-panel">
      {asked && (
        <dl className="stage__facts" data-testid="routing-outcome">
          {typeof o?.status === 'string' && (
            <div>
              <dt>Outcome</dt>
              <dd>{o.status.replace('_', ' ')}</dd>
            </div>
          )}
          {preferred && (
            <div>
              <dt>Preferred label</dt>
              <dd>{preferred}</dd>
            </div>
          )}
          {jump && (
            <div>
              <dt>Asked to jump to</dt>
              <dd className="run-mono">{jump}</dd>
            </div>
          )}
          {suggested.length > 0 && (
            <div>
              <dt>Suggested next</dt>
              <dd className="run-mono">{suggested.join(', ')}</dd>
            </div>
          )}
          {notes.length > 0 && (
            <div>
              <dt>Notes</dt>
              <dd>{notes.join(' · ')}</dd>
            </div>
          )}
        </dl>
      )}
      {routing.length > 0 && (
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
      )}
    </div>
  );
}

/** The context values the stage set, and its status.json as written. */
function StageContext({ stage, files }: { stage: StageRecord; files: FilesLoad }) {
  const updates = contextUpdates(stage);
  const entries = updates ? Object.entries(updates) : [];
  const status = files.kind === 'ready' ? files.files.status : null;
  return (
    <div data-testid="context-panel">
      {entries.length > 0 ? (
        <table className="stage__context" data-testid="context-updates">
          <caption className="muted">Context values this stage set</caption>
          <tbody>
            {entries.map(([k, v]) => (
              <tr key={k}>
                <th scope="row" className="run-mono">
                  {k}
                </th>
                <td>
                  <pre className="run-mono">{typeof v === 'string' ? v : JSON.stringify(v, null, 2)}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted" data-testid="context-none">
          {stage.outcome ? 'This stage set no context values.' : 'The stage has not finished, so it has set no context values yet.'}
        </p>
      )}
      {status != null && (
        <details className="stage__status">
          <summary>status.json</summary>
          <pre className="stage__text">{JSON.stringify(status, null, 2)}</pre>
        </details>
      )}
    </div>
  );
}
