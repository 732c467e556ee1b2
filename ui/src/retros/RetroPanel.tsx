import { useEffect, useState } from 'react';

import { appError, type Host, type Retro } from '../api';
import { formatDuration, formatTokens } from '../format';
import { RetroBadge } from './RetroBadge';
import './retros.css';

type Load = { kind: 'loading' } | { kind: 'ready'; retro: Retro | null } | { kind: 'failed'; message: string };

/** Dollars: `$0.0104` under a cent, else `$1.23`. */
export function dollars(cost: number): string {
  return cost < 0.01 && cost > 0 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`;
}

/**
 * A run's retrospective (`run_retro`, read from the database): rating,
 * intent and outcome, learnings, friction, open items and per-stage figures.
 * Read again when `refresh` changes (the run's last event: the retro is
 * written after the run's end).
 */
export function RetroPanel({ host, runId, refresh }: { host: Host; runId: string; refresh?: number }) {
  const [load, setLoad] = useState<Load>({ kind: 'loading' });
  useEffect(() => {
    let live = true;
    host.runRetro(runId).then(
      (retro) => live && setLoad({ kind: 'ready', retro }),
      (e: unknown) => live && setLoad({ kind: 'failed', message: appError(e).message }),
    );
    return () => {
      live = false;
    };
  }, [host, runId, refresh]);

  if (load.kind === 'loading') return <p className="muted">Loading the retro…</p>;
  if (load.kind === 'failed') return <p className="muted">Could not read the retro: {load.message}</p>;
  const retro = load.retro;
  if (!retro) {
    return (
      <p className="muted" data-testid="retro-none">
        No retro for this run. Retros are written when a run ends with <code>weft run --retro</code>,{' '}
        <code>[run] retros = true</code> or <code>retros = true</code> in settings.toml;{' '}
        <code>weft retro RUN --generate</code> makes one now.
      </p>
    );
  }
  const n = retro.narrative;
  const t = retro.totals;
  return (
    <div className="retro" data-testid="retro">
      <p className="retro__summary">
        <RetroBadge smoothness={n?.smoothness} />{' '}
        <span>{t.duration_ms != null ? formatDuration(t.duration_ms) : '—'}</span> ·{' '}
        <span>{dollars(t.cost)}</span> · <span>{formatTokens(t.tokens)} tokens</span> ·{' '}
        <span>
          {t.stages_completed} completed, {t.stages_failed} failed, {t.retries} retries
        </span>
      </p>
      {!n && retro.error && <p className="retro__error">No narrative: {retro.error}</p>}
      {n && (
        <>
          <dl className="retro__story">
            <dt>Intent</dt>
            <dd>{n.intent}</dd>
            <dt>Outcome</dt>
            <dd>{n.outcome}</dd>
          </dl>
          <RetroList title="Learnings" items={n.learnings.map((l) => ({ kind: l.category, text: l.text }))} />
          <RetroList
            title="Friction"
            items={n.friction_points.map((f) => ({ kind: f.kind, text: f.stage ? `${f.description} (stage ${f.stage})` : f.description }))}
          />
          <RetroList title="Open items" items={n.open_items.map((o) => ({ kind: o.kind, text: o.description }))} />
        </>
      )}
      <table className="retro__stages">
        <thead>
          <tr>
            <th>Stage</th>
            <th>Status</th>
            <th>Duration</th>
            <th>Attempts</th>
            <th>Tokens</th>
            <th>Cost</th>
            <th>Files</th>
          </tr>
        </thead>
        <tbody>
          {retro.stages.map((s) => (
            <tr key={`${s.node_id}@${s.visit}`} title={s.failure_reason ?? undefined}>
              <td>
                {s.node_id}@{s.visit}
              </td>
              <td>{s.status}</td>
              <td>{s.duration_ms != null ? formatDuration(s.duration_ms) : '—'}</td>
              <td>{s.attempts}</td>
              <td>{formatTokens(s.tokens)}</td>
              <td>{dollars(s.cost)}</td>
              <td>{s.files_touched?.length ?? 0}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RetroList({ title, items }: { title: string; items: { kind: string; text: string }[] }) {
  if (items.length === 0) return null;
  return (
    <section className="retro__list" aria-label={title}>
      <h4>{title}</h4>
      <ul>
        {items.map((item, i) => (
          <li key={i}>
            <span className="retro__kind">{item.kind}</span> {item.text}
          </li>
        ))}
      </ul>
    </section>
  );
}
