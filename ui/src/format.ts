// How the UI writes times, durations, costs and counts: one formatter for
// each, used by every screen, so a run reads the same in the list, its
// header and its stages.

import type { RunSummary } from './api/host';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * How long ago `iso` was, as a person says it: `just now`, `5 min ago`,
 * `3 h ago`, `yesterday`, `4 days ago`, then the date (`12 Mar 2026`).
 * A time in the (slightly) future reads as `just now`.
 */
export function relativeTime(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '—';
  const ago = now - t;
  if (ago < MINUTE) return 'just now';
  if (ago < HOUR) return `${Math.floor(ago / MINUTE)} min ago`;
  if (ago < DAY) return `${Math.floor(ago / HOUR)} h ago`;
  if (ago < 2 * DAY) return 'yesterday';
  if (ago < 7 * DAY) return `${Math.floor(ago / DAY)} days ago`;
  return new Date(t).toLocaleDateString('en-GB', { day: 'numeric', month: 'short', year: 'numeric' });
}

/**
 * The full local date and time of `iso`, to the second:
 * `12 Mar 2026, 10:04:05` (the runs list's tooltip, the run header, a
 * stage's start). `—` when there is no time; the text itself when it is
 * not one.
 */
export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return new Date(t).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });
}

/**
 * A duration, compact, as the CLI prints it (`weft ps`, the run progress):
 * `0.4s`, `12.3s`, `4m05s`, then `2h03m` and `3d04h`. `—` for a negative
 * or unknown one.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor((s % 86_400) / 3600))}h`;
}

/**
 * How long a run took (start to finish), or has been going for when it is
 * still live; null when that is unknown (never started, or interrupted
 * without a finish time).
 */
export function runDurationMs(run: RunSummary, now: number): number | null {
  if (!run.started_at) return null;
  const start = Date.parse(run.started_at);
  if (run.finished_at) return Date.parse(run.finished_at) - start;
  if (run.status === 'running' || run.status === 'blocked' || run.status === 'queued') return now - start;
  return null;
}

/**
 * A language-model cost as `weft cost` writes it: `$0.0104` under a cent,
 * else `$1.23`; calls without a price are named, never counted as $0:
 * `$1.23 + 2 unpriced`, or `unpriced (3 calls)` when no call had one.
 */
export function formatCost(llm: { cost: number; unpriced_calls?: number | undefined }): string {
  const dollars = llm.cost < 0.01 && llm.cost > 0 ? `$${llm.cost.toFixed(4)}` : `$${llm.cost.toFixed(2)}`;
  const unpriced = llm.unpriced_calls ?? 0;
  if (unpriced === 0) return dollars;
  if (llm.cost === 0) return `unpriced (${unpriced} ${unpriced === 1 ? 'call' : 'calls'})`;
  return `${dollars} + ${unpriced} unpriced`;
}

/** Token counts, compact: `950`, `8.2k`, `1.3M`. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}
