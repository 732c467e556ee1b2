import { useEffect, useState } from 'react';

import type { AppError, Host, RunView } from '../api';
import { routeHash } from '../app/route';
import { ActionStatus, useDaemonAction } from '../gates/daemonAction';
import { formatCost, formatDateTime, formatDuration, formatTokens } from '../format';
import { ApplyDialog } from './ApplyDialog';
import { canFork, useFork } from './ForkActions';
import { containerShellCommand, type FailureSummary, type RunContainer } from './derive';
import type { LiveState } from './useRun';

const CANCELLABLE = new Set(['running', 'queued', 'blocked']);
const RESUMABLE = new Set(['interrupted', 'cancelled']);

/** How long the run took (or has taken so far). */
export function runDuration(view: RunView, now: number): string {
  const start = Date.parse(view.run.started_at ?? view.run.created_at);
  const end = view.run.finished_at ? Date.parse(view.run.finished_at) : now;
  return formatDuration(end - start);
}

export function StatusChip({ status }: { status: string }) {
  return (
    <span className={`run-chip run-chip--${status}`} data-testid="run-status">
      {status.replace('_', ' ')}
    </span>
  );
}

/** What became of the run's container, after its sandbox (`docker IMAGE`). */
function containerFate(container: RunContainer): string {
  switch (container.state) {
    case 'in_use':
      return `container ${container.container}`;
    case 'removed':
      return `container ${container.container} removed`;
    case 'kept':
      return `container ${container.container} kept`;
  }
}

/**
 * The top of the run screen: status, goal, workflow, timing, where its
 * commands run (a sandboxed run's image and container), what failed and
 * why, and the live actions (cancel, resume, re-run, archive; fork at the
 * latest checkpoint; apply, for a git-checkpointed run that is not going).
 */
export function RunHeader({
  host,
  view,
  failure,
  live,
  now,
  container = null,
  onJumpToStage,
  onActed,
}: {
  host: Host;
  view: RunView;
  failure: FailureSummary | null;
  live: LiveState;
  now: number;
  /** The run's container, from its sandbox events (`runContainer`). */
  container?: RunContainer | null;
  onJumpToStage: (node: string, visit: number) => void;
  onActed: () => void;
}) {
  const { run } = view;
  const action = useDaemonAction(host);
  const forking = useFork(host);
  const busy = action.state.kind === 'busy' || forking.busy;
  const [applying, setApplying] = useState(false);
  useEffect(() => setApplying(false), [run.id]);

  const cancel = () =>
    action.run('Cancelling', async () => {
      const r = await host.runCancel(run.id);
      onActed();
      return `Cancel requested (the run is ${r.status}).`;
    });
  const resume = () =>
    action.run('Resuming', async () => {
      const r = await host.runResume(run.id);
      onActed();
      return `Resumed (the run is ${r.status}).`;
    });
  const archive = () =>
    action.run(run.archived ? 'Unarchiving' : 'Archiving', async () => {
      const r = await host.runArchive(run.id, !run.archived);
      onActed();
      return r.archived ? 'Archived: the runs list hides it unless you show archived runs.' : 'Back in the runs list.';
    });
  const rerun = () =>
    action.run('Re-running', async () => {
      if (!run.workflow_path) throw { code: 'run.no_workflow_path', message: 'this run has no workflow file to re-run' } satisfies AppError;
      const inputs: Record<string, string> = {};
      for (const [k, v] of Object.entries(view.inputs)) inputs[k] = typeof v === 'string' ? v : JSON.stringify(v);
      const started = await host.runStart({
        workflow: { path: run.workflow_path },
        work_dir: run.work_dir,
        goal: run.goal,
        inputs,
        dry_run: view.options.dry_run,
        auto_approve: view.options.auto_approve,
        labels: run.labels,
        artifacts: view.options.artifacts,
        model: view.options.model,
      });
      window.location.hash = routeHash({ screen: 'run', run: started.run_id });
      return `Started run ${started.run_id}.`;
    });

  return (
    <header className="run-header" data-testid="run-header">
      <div className="run-header__top">
        <StatusChip status={run.status} />
        <h2 className="run-header__goal">{run.goal || run.workflow_name}</h2>
      </div>
      <dl className="run-header__facts">
        <div>
          <dt>Workflow</dt>
          <dd>{run.workflow_name}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>{formatDateTime(run.started_at ?? run.created_at)}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{runDuration(view, now)}</dd>
        </div>
        <div>
          <dt>Run</dt>
          <dd className="run-mono">{run.id}</dd>
        </div>
        {view.git && (
          <div data-testid="run-git">
            <dt>Git</dt>
            <dd className="run-mono" title={`${view.git.run_branch} from ${view.git.base_sha}${view.git.repo ? ` in ${view.git.repo}` : ''}`}>
              {view.git.run_branch} from {view.git.base_sha.slice(0, 8)}
            </dd>
          </div>
        )}
        {(run.sandbox || container) && (
          <div data-testid="run-sandbox">
            <dt>Sandbox</dt>
            <dd title={container && container.state !== 'removed' ? `on the engine at ${container.engine}` : undefined}>
              {[run.sandbox, container && containerFate(container)].filter(Boolean).join(' · ')}
            </dd>
          </div>
        )}
        {run.llm && (
          <div>
            <dt>LLM</dt>
            <dd data-testid="run-spend">
              {run.llm.calls} {run.llm.calls === 1 ? 'call' : 'calls'}, {formatTokens(run.llm.input_tokens)} in /{' '}
              {formatTokens(run.llm.output_tokens)} out, {formatCost(run.llm)}
            </dd>
          </div>
        )}
      </dl>
      {container?.state === 'kept' && (
        <p className="muted run-header__note" data-testid="run-sandbox-kept">
          The run's container was kept: <code className="run-mono">{containerShellCommand(container.engine, container.container)}</code>{' '}
          opens a shell in it.
        </p>
      )}
      {failure && (
        <div className="run-failure" role="alert" data-testid="failure-summary">
          <p>
            {failure.node ? (
              <>
                Failed at <strong>{failure.node}</strong>
                {failure.visit && failure.visit > 1 ? `@${failure.visit}` : ''}: {failure.reason}
              </>
            ) : (
              <>Failed: {failure.reason}</>
            )}
          </p>
          {failure.runReason && <p className="muted">The run stopped because: {failure.runReason}</p>}
          {failure.node && (
            <button type="button" data-testid="jump-to-failure" onClick={() => onJumpToStage(failure.node!, failure.visit ?? 1)}>
              Show the failed stage
            </button>
          )}
        </div>
      )}
      <div className="run-header__actions">
        {CANCELLABLE.has(run.status) && (
          <button type="button" disabled={busy} onClick={() => void cancel()}>
            Cancel
          </button>
        )}
        {RESUMABLE.has(run.status) && (
          <button type="button" disabled={busy} onClick={() => void resume()}>
            Resume
          </button>
        )}
        <button type="button" disabled={busy || !run.workflow_path} onClick={() => void rerun()} title={run.workflow_path ?? 'no workflow file recorded'}>
          Re-run with the same inputs
        </button>
        <button type="button" disabled={busy} onClick={() => void archive()}>
          {run.archived ? 'Unarchive' : 'Archive'}
        </button>
        {canFork(run) && (
          <button type="button" data-testid="fork-run" disabled={busy} onClick={() => void forking.fork(run.id, null, false)} title="A new run from this run's latest checkpoint; this run stays as it is">
            Fork
          </button>
        )}
        {view.git && !CANCELLABLE.has(run.status) && (
          <button type="button" data-testid="apply-run" disabled={busy || applying} onClick={() => setApplying(true)} title={`Merge ${view.git.run_branch} (or apply its final.patch) into the checkout it started from`}>
            Apply…
          </button>
        )}
        <span className="muted run-header__live" data-testid="live-state">
          {live.kind === 'live' && 'Live'}
          {live.kind === 'connecting' && 'Connecting…'}
          {live.kind === 'off' && (live.daemonDown ? 'Not live: the daemon is not running (history only)' : `Not live: ${live.message}`)}
        </span>
      </div>
      {RESUMABLE.has(run.status) && run.failure_reason && (
        <p className="muted" data-testid="run-stopped-reason">
          {run.failure_reason}
        </p>
      )}
      {applying && <ApplyDialog host={host} view={view} onClose={() => setApplying(false)} />}
      <ActionStatus state={action.state} onStartDaemon={() => void action.startDaemon()} />
      <ActionStatus state={forking.state} onStartDaemon={() => void forking.startDaemon()} />
    </header>
  );
}
