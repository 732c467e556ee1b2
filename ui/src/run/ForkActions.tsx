import { useState } from 'react';

import type { Host, RunSummary, StageRecord } from '../api';
import { routeHash } from '../app/route';
import { ActionStatus, useDaemonAction } from '../gates/daemonAction';

/** Statuses of a run executing now: the daemon refuses to fork it (`run.not_forkable`). */
const EXECUTING = new Set(['running', 'queued', 'blocked']);

/** Whether a fork is offered: the run is not executing now (the daemon's rule). */
export function canFork(run: RunSummary): boolean {
  return !EXECUTING.has(run.status);
}

/** Whether a rewind is offered: the run ended (succeeded or failed) and is not archived (the daemon's rule). */
export function canRewind(run: RunSummary): boolean {
  return (run.status === 'succeeded' || run.status === 'failed') && !run.archived;
}

/**
 * Forks or rewinds through the daemon (`run_fork`) and, once done, opens the
 * new run: it is `cancelled` until resumed, and its header offers Resume.
 */
export function useFork(host: Host) {
  const action = useDaemonAction(host);
  const fork = (run: string, target: string | null, rewind: boolean) =>
    action.run(rewind ? 'Rewinding' : 'Forking', async () => {
      const forked = await host.runFork(run, target, rewind);
      window.location.hash = routeHash({ screen: 'run', run: forked.run_id });
      const at = `${forked.from.node_id}@${forked.from.visit}`;
      return rewind
        ? `Rewound to ${at} as run ${forked.run_id}; run ${forked.source} is archived.`
        : `Forked at ${at} as run ${forked.run_id}.`;
    });
  return { state: action.state, busy: action.state.kind === 'busy', fork, startDaemon: action.startDaemon };
}

/**
 * A stage's checkpoint menu in the stage panel: "Fork from here" (a new run
 * from this stage visit's checkpoint, the source kept) and "Rewind to here"
 * (the same, and the source archived; asked to confirm). Shown for a stage
 * that is not running, of a run that is not executing.
 */
export function StageCheckpointMenu({ host, run, stage }: { host: Host; run: RunSummary; stage: StageRecord }) {
  const { state, busy, fork, startDaemon } = useFork(host);
  const [confirmRewind, setConfirmRewind] = useState(false);
  if (!canFork(run) || stage.status === 'running') return null;
  const target = `${stage.node_id}@${stage.visit}`;
  return (
    <div className="stage__menu" data-testid="stage-menu">
      <details>
        <summary>Checkpoint</summary>
        <div className="stage__menu-items">
          <button type="button" data-testid="fork-here" disabled={busy} onClick={() => void fork(run.id, target, false)} title="A new run from this stage's checkpoint; this run stays as it is">
            Fork from here
          </button>
          {canRewind(run) && (
            <button type="button" data-testid="rewind-here" disabled={busy} onClick={() => setConfirmRewind(true)} title="A new run from this stage's checkpoint; this run is archived">
              Rewind to here
            </button>
          )}
        </div>
      </details>
      {confirmRewind && (
        <div className="stage__confirm" role="alertdialog" aria-label="Rewind" data-testid="rewind-confirm">
          <span>
            Rewind to {target}? A new run starts from this checkpoint (resume it to continue), and run {run.id} is archived.
          </span>
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              setConfirmRewind(false);
              void fork(run.id, target, true);
            }}
          >
            Rewind
          </button>
          <button type="button" onClick={() => setConfirmRewind(false)}>
            Cancel
          </button>
        </div>
      )}
      <ActionStatus state={state} onStartDaemon={() => void startDaemon()} />
    </div>
  );
}
