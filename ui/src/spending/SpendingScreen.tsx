import { useEffect, useMemo, useState } from 'react';

import { appError, type AppError, type Host, type SpendFigures, type Spending } from '../api/host';
import { routeHash } from '../app/route';
import { formatCost, formatDateTime, formatTokens } from '../format';
import { dayBars, measureOf, type DayBar, type Measure } from './chart';
import './spending.css';

/** The windows offered, as the read model's `since` (`weft cost --since`). */
const WINDOWS: { since: string | null; label: string }[] = [
  { since: '7d', label: '7 days' },
  { since: '30d', label: '30 days' },
  { since: '90d', label: '90 days' },
  { since: null, label: 'All time' },
];

/** The chart's drawing box (SVG units; it scales to its width). */
const CHART_WIDTH = 720;
const CHART_HEIGHT = 160;

type Load = { kind: 'loading' } | { kind: 'ready'; spending: Spending } | { kind: 'failed'; error: AppError };

/** Tokens in and out: `12.4k in / 3.2k out`. */
function tokensText(spend: SpendFigures): string {
  return `${formatTokens(spend.input_tokens)} in / ${formatTokens(spend.output_tokens)} out`;
}

/** One bar's tooltip: the day and all its figures. */
function barTitle(bar: DayBar): string {
  if (bar.spend.stages === 0) return `${bar.day}: nothing spent`;
  return `${bar.day}: ${formatCost(bar.spend)}, ${tokensText(bar.spend)}, ${bar.spend.calls} ${bar.spend.calls === 1 ? 'call' : 'calls'}`;
}

/** Per-day bars as SVG (no chart library): height by cost or by tokens. */
export function DayChart({ bars, measure }: { bars: DayBar[]; measure: Measure }) {
  const max = Math.max(0, ...bars.map((b) => measureOf(b.spend, measure)));
  const slot = bars.length > 0 ? CHART_WIDTH / bars.length : CHART_WIDTH;
  const width = Math.max(1, slot * 0.8);
  return (
    <svg
      className="spending__chart"
      viewBox={`0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`}
      preserveAspectRatio="none"
      role="img"
      aria-label={`Spending per day by ${measure}`}
      data-testid="spending-chart"
    >
      <line x1={0} y1={CHART_HEIGHT - 0.5} x2={CHART_WIDTH} y2={CHART_HEIGHT - 0.5} className="spending__axis" />
      {bars.map((bar, i) => {
        const value = measureOf(bar.spend, measure);
        // A day that spent is at least a sliver tall, so it never looks like nothing.
        const height = max > 0 ? Math.max(value > 0 ? 2 : 0, (value / max) * (CHART_HEIGHT - 8)) : 0;
        return (
          <rect
            key={bar.day}
            data-testid="spend-bar"
            data-day={bar.day}
            data-value={value}
            className={bar.spend.unpriced_calls > 0 ? 'spending__bar spending__bar--unpriced' : 'spending__bar'}
            x={i * slot + (slot - width) / 2}
            y={CHART_HEIGHT - height}
            width={width}
            height={height}
          >
            <title>{barTitle(bar)}</title>
          </rect>
        );
      })}
    </svg>
  );
}

/**
 * The Spending screen: language-model spending over a window, from the same
 * read model as `weft cost` (so every figure matches it): totals, a bar per
 * day, and tables per model and per run. Read from the database, so it
 * works with the daemon stopped.
 */
export function SpendingScreen({ host, today }: { host: Host; today?: Date }) {
  const [now] = useState(() => today ?? new Date());
  const [since, setSince] = useState<string | null>('30d');
  const [measure, setMeasure] = useState<Measure>('cost');
  const [load, setLoad] = useState<Load>({ kind: 'loading' });

  useEffect(() => {
    let live = true;
    setLoad({ kind: 'loading' });
    host.spending(since ? { since } : {}).then(
      (spending) => live && setLoad({ kind: 'ready', spending }),
      (e: unknown) => live && setLoad({ kind: 'failed', error: appError(e) }),
    );
    return () => {
      live = false;
    };
  }, [host, since]);

  const spending = load.kind === 'ready' ? load.spending : null;
  const bars = useMemo(() => (spending ? dayBars(spending, now) : []), [spending, now]);
  const total = spending?.total;

  return (
    <section className="spending" aria-label="Spending">
      <header className="spending__head">
        <h2>Spending</h2>
        <div className="spending__windows" role="group" aria-label="Window">
          {WINDOWS.map((w) => (
            <button key={w.label} type="button" aria-pressed={since === w.since} onClick={() => setSince(w.since)}>
              {w.label}
            </button>
          ))}
        </div>
      </header>
      {load.kind === 'loading' && <p className="muted">Reading the spending…</p>}
      {load.kind === 'failed' && <p className="error">Could not read the spending: {load.error.message}</p>}
      {spending && total && total.stages === 0 && (
        <p className="muted" data-testid="spending-empty">
          No language-model calls in this window.
        </p>
      )}
      {spending && total && total.stages > 0 && (
        <>
          <dl className="spending__totals" data-testid="spending-total">
            <div>
              <dt>Cost</dt>
              <dd data-testid="spending-cost">{formatCost(total)}</dd>
            </div>
            <div>
              <dt>Tokens</dt>
              <dd>{tokensText(total)}</dd>
            </div>
            <div>
              <dt>Calls</dt>
              <dd>
                {total.calls} in {total.stages} {total.stages === 1 ? 'stage' : 'stages'} of {spending.runs_total}{' '}
                {spending.runs_total === 1 ? 'run' : 'runs'}
              </dd>
            </div>
          </dl>
          {total.unpriced_calls > 0 && (
            <p className="muted" data-testid="spending-unpriced">
              {total.unpriced_calls} {total.unpriced_calls === 1 ? 'call' : 'calls'} had no price (a model missing from the
              catalog): their tokens are counted, their cost is not.
            </p>
          )}
          <div className="spending__chart-head">
            <h3>Per day</h3>
            <div role="group" aria-label="Bar height">
              <button type="button" aria-pressed={measure === 'cost'} onClick={() => setMeasure('cost')}>
                Cost
              </button>
              <button type="button" aria-pressed={measure === 'tokens'} onClick={() => setMeasure('tokens')}>
                Tokens
              </button>
            </div>
          </div>
          <DayChart bars={bars} measure={measure} />
          {bars.length > 0 && (
            <p className="spending__range muted">
              {bars[0]?.day} – {bars.at(-1)?.day}
            </p>
          )}
          <h3>Per model</h3>
          <table className="spending__table" data-testid="spending-models">
            <thead>
              <tr>
                <th>Model</th>
                <th>Provider</th>
                <th className="num">Calls</th>
                <th className="num">Tokens</th>
                <th className="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {spending.models.map((m) => (
                <tr key={`${m.provider}/${m.model}`}>
                  <td>{m.model}</td>
                  <td>{m.provider}</td>
                  <td className="num">{m.calls}</td>
                  <td className="num">{tokensText(m)}</td>
                  <td className="num">{formatCost(m)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h3>Per run</h3>
          <table className="spending__table" data-testid="spending-runs">
            <thead>
              <tr>
                <th>Run</th>
                <th>Workflow</th>
                <th>Created</th>
                <th className="num">Calls</th>
                <th className="num">Tokens</th>
                <th className="num">Cost</th>
              </tr>
            </thead>
            <tbody>
              {spending.runs.map((r) => (
                <tr key={r.run_id}>
                  <td className="run-mono">
                    <a href={routeHash({ screen: 'run', run: r.run_id })}>{r.run_id.slice(0, 10)}</a>
                  </td>
                  <td>{r.workflow_name}</td>
                  <td>{formatDateTime(r.created_at)}</td>
                  <td className="num">{r.calls}</td>
                  <td className="num">{tokensText(r)}</td>
                  <td className="num">{formatCost(r)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {spending.runs.length < spending.runs_total && (
            <p className="muted">
              The latest {spending.runs.length} of {spending.runs_total} runs; the totals count all (`weft cost --by run
              --limit N` lists more).
            </p>
          )}
        </>
      )}
    </section>
  );
}
