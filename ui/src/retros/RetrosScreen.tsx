import { useEffect, useState } from 'react';

import { appError, type Host, type RetroSummary } from '../api';
import { routeHash } from '../app/route';
import { formatDuration, formatTokens, relativeTime } from '../format';
import { RetroBadge } from './RetroBadge';
import { dollars } from './RetroPanel';
import './retros.css';

type Load = { kind: 'loading' } | { kind: 'ready'; retros: RetroSummary[] } | { kind: 'failed'; message: string };

/** Every run's retro, newest first (`retros`, from the database): rating, duration, cost, friction. */
export function RetrosScreen({ host }: { host: Host }) {
  const [load, setLoad] = useState<Load>({ kind: 'loading' });
  useEffect(() => {
    let live = true;
    host.retros().then(
      (retros) => live && setLoad({ kind: 'ready', retros }),
      (e: unknown) => live && setLoad({ kind: 'failed', message: appError(e).message }),
    );
    return () => {
      live = false;
    };
  }, [host]);

  if (load.kind === 'loading') return <p className="muted">Loading retros…</p>;
  if (load.kind === 'failed') {
    return (
      <p className="error" role="alert">
        Could not read the retros: {load.message}
      </p>
    );
  }
  if (load.retros.length === 0) {
    return <p className="muted">No retros yet. Enable them with <code>weft run --retro</code> or <code>retros = true</code>.</p>;
  }
  const now = Date.now();
  return (
    <table className="retros" data-testid="retros">
      <thead>
        <tr>
          <th>Rating</th>
          <th>Run</th>
          <th>Workflow</th>
          <th>Duration</th>
          <th>Cost</th>
          <th>Tokens</th>
          <th>Friction</th>
          <th>Made</th>
        </tr>
      </thead>
      <tbody>
        {load.retros.map((r) => (
          <tr key={r.run_id} data-run-id={r.run_id}>
            <td>
              <RetroBadge smoothness={r.smoothness} />
            </td>
            <td>
              <a href={routeHash({ screen: 'run', run: r.run_id, bar: 'retro' })}>{r.run_id.slice(0, 10)}</a>
            </td>
            <td>{r.workflow_name}</td>
            <td>{r.duration_ms != null ? formatDuration(r.duration_ms) : '—'}</td>
            <td>{dollars(r.cost)}</td>
            <td>{formatTokens(r.tokens)}</td>
            <td>{r.friction_count}</td>
            <td title={r.created_at}>{relativeTime(r.created_at, now)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
