import { useState } from 'react';

import { appError, type AppError, type Host, type RunApplied, type RunView } from '../api';

/** Files of a patched result listed by name; the rest are counted. */
const PATCHED_NAMED_MAX = 20;

type Mode = 'merge' | 'patch';

type ApplyState =
  | { kind: 'choosing' }
  | { kind: 'busy'; what: string }
  | { kind: 'applied'; result: RunApplied }
  | { kind: 'refused'; error: AppError; forced: boolean };

const short = (sha: string) => sha.slice(0, 8);

/** What applying did, in a sentence. */
export function appliedText(r: RunApplied): string {
  switch (r.action) {
    case 'up_to_date':
      return `Nothing to apply: ${r.branch} already has the run's work (at ${short(r.sha)}).`;
    case 'fast_forwarded':
      return `Fast-forwarded ${r.branch} from ${short(r.from)} to ${short(r.to)}${r.worktree_updated ? `; the checkout at ${r.repo} now has the run's work` : ' (not checked out: only the branch moved)'}.`;
    case 'merged':
      return `Merged ${r.run_branch} into ${r.branch} as commit ${short(r.commit)}${r.worktree_updated ? `; the checkout at ${r.repo} now has the run's work` : ' (not checked out: only the branch moved)'}.`;
    case 'patched':
      return `Patched ${r.files.length} ${r.files.length === 1 ? 'file' : 'files'} in the working tree at ${r.repo}; nothing is committed or staged.`;
  }
}

/**
 * Apply a git-checkpointed run (`run_apply`, the daemon's `run.apply`): merge
 * its branch into the branch checked out (the default) or apply its
 * final.patch to the working tree. Shows what happened, or the daemon's
 * refusal with the paths it names; a run that did not succeed is refused
 * with `apply.needs_force` first, and "Apply anyway" sends `force`.
 */
export function ApplyDialog({ host, view, onClose }: { host: Host; view: RunView; onClose: () => void }) {
  const [mode, setMode] = useState<Mode>('merge');
  const [state, setState] = useState<ApplyState>({ kind: 'choosing' });
  const busy = state.kind === 'busy';
  const git = view.git;

  const apply = async (force: boolean) => {
    setState({ kind: 'busy', what: mode === 'merge' ? 'Merging' : 'Applying the patch' });
    try {
      setState({ kind: 'applied', result: await host.runApply(view.run.id, mode === 'patch', force) });
    } catch (e) {
      setState({ kind: 'refused', error: appError(e), forced: force });
    }
  };
  // Starts weftd, then tries again what found it stopped (with the same `force`).
  const startDaemon = async (force: boolean) => {
    setState({ kind: 'busy', what: 'Starting the daemon' });
    try {
      await host.daemonStart();
    } catch (e) {
      setState({ kind: 'refused', error: appError(e), forced: force });
      return;
    }
    await apply(force);
  };

  return (
    <div className="apply-dialog" role="dialog" aria-label="Apply the run" data-testid="apply-dialog">
      <p>
        Bring the work of <span className="run-mono">{git?.run_branch}</span> into the checkout it started from
        {git?.repo ? (
          <>
            {' '}
            (<span className="run-mono">{git.repo}</span>)
          </>
        ) : null}
        .
      </p>
      <fieldset disabled={busy || state.kind === 'applied'}>
        <label>
          <input type="radio" name="apply-mode" value="merge" checked={mode === 'merge'} onChange={() => setMode('merge')} /> Merge
          the run's branch into the branch checked out (a fast-forward when it has not moved)
        </label>
        <label>
          <input type="radio" name="apply-mode" value="patch" checked={mode === 'patch'} onChange={() => setMode('patch')} /> As a
          patch to the working tree (nothing committed)
        </label>
      </fieldset>
      <div className="apply-dialog__buttons">
        {state.kind !== 'applied' && (
          <button type="button" data-testid="apply-confirm" disabled={busy} onClick={() => void apply(false)}>
            Apply
          </button>
        )}
        <button type="button" onClick={onClose} disabled={busy}>
          {state.kind === 'applied' ? 'Close' : 'Cancel'}
        </button>
      </div>
      {state.kind === 'busy' && (
        <p className="action-status" role="status">
          {state.what}…
        </p>
      )}
      {state.kind === 'applied' && (
        <div className="action-status" role="status" data-testid="apply-result">
          <p>{appliedText(state.result)}</p>
          {state.result.action === 'patched' && state.result.files.length > 0 && (
            <ul className="apply-dialog__paths run-mono">
              {state.result.files.slice(0, PATCHED_NAMED_MAX).map((f) => (
                <li key={f}>{f}</li>
              ))}
              {state.result.files.length > PATCHED_NAMED_MAX && (
                <li className="muted">and {state.result.files.length - PATCHED_NAMED_MAX} more</li>
              )}
            </ul>
          )}
        </div>
      )}
      {state.kind === 'refused' && (
        <div className="action-status action-status--error" role="alert" data-testid="apply-refused" data-code={state.error.code}>
          <p>Not applied: {state.error.message}</p>
          {state.error.paths && state.error.paths.length > 0 && (
            <ul className="apply-dialog__paths run-mono" data-testid="apply-paths">
              {state.error.paths.map((p) => (
                <li key={p}>{p}</li>
              ))}
            </ul>
          )}
          {state.error.code === 'apply.needs_force' && !state.forced && (
            <button type="button" data-testid="apply-anyway" onClick={() => void apply(true)}>
              Apply anyway
            </button>
          )}
          {state.error.code === 'daemon.not_running' && (
            <button type="button" onClick={() => void startDaemon(state.forced)}>
              Start daemon
            </button>
          )}
        </div>
      )}
    </div>
  );
}
