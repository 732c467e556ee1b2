import { useCallback, useRef, useState } from 'react';

import { appError, type Host } from '../api';

/** Where a live action (cancel, resume, answer, ...) stands. */
export type ActionState =
  | { kind: 'idle' }
  | { kind: 'busy'; what: string }
  | { kind: 'done'; message: string }
  | { kind: 'daemon-down'; what: string }
  | { kind: 'failed'; message: string };

/**
 * Runs live actions through the daemon. When one rejects with
 * `daemon.not_running`, the state says so and `startDaemon` starts weftd
 * and retries the same action once.
 */
export function useDaemonAction(host: Host) {
  const [state, setState] = useState<ActionState>({ kind: 'idle' });
  const pending = useRef<(() => Promise<string>) | null>(null);

  const attempt = useCallback(async (what: string, action: () => Promise<string>) => {
    setState({ kind: 'busy', what });
    try {
      const message = await action();
      pending.current = null;
      setState({ kind: 'done', message });
      return true;
    } catch (e) {
      const err = appError(e);
      if (err.code === 'daemon.not_running') {
        pending.current = action;
        setState({ kind: 'daemon-down', what });
      } else {
        setState({ kind: 'failed', message: `${what} failed: ${err.message}` });
      }
      return false;
    }
  }, []);

  const startDaemon = useCallback(async () => {
    const retry = pending.current;
    const what = state.kind === 'daemon-down' ? state.what : 'The action';
    setState({ kind: 'busy', what: 'Starting the daemon' });
    try {
      await host.daemonStart();
    } catch (e) {
      setState({ kind: 'failed', message: `Could not start the daemon: ${appError(e).message}` });
      return false;
    }
    return retry ? attempt(what, retry) : (setState({ kind: 'done', message: 'The daemon is running.' }), true);
  }, [host, attempt, state]);

  return { state, run: attempt, startDaemon };
}

/** The outcome of the last live action, with "Start daemon" when it is down. */
export function ActionStatus({ state, onStartDaemon }: { state: ActionState; onStartDaemon: () => void }) {
  switch (state.kind) {
    case 'idle':
      return null;
    case 'busy':
      return (
        <p className="action-status" role="status">
          {state.what}…
        </p>
      );
    case 'done':
      return (
        <p className="action-status" role="status" data-testid="action-done">
          {state.message}
        </p>
      );
    case 'failed':
      return (
        <p className="action-status action-status--error" role="alert">
          {state.message}
        </p>
      );
    case 'daemon-down':
      return (
        <div className="action-status action-status--error" role="alert" data-testid="daemon-down">
          <span>
            {state.what} needs the Weft daemon (weftd), and it is not running. History still shows; start the
            daemon to act on the run.
          </span>
          <button type="button" onClick={onStartDaemon}>
            Start daemon
          </button>
        </div>
      );
  }
}
