// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import type { RunSummary } from './api/host';
import { formatDateTime, formatCost, formatDuration, formatTokens, relativeTime, runDurationMs } from './format';

const NOW = Date.parse('2026-12-02T17:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();

describe('relativeTime', () => {
  it('reads as a person would say it', () => {
    expect(relativeTime(ago(20_000), NOW)).toBe('just now');
    expect(relativeTime(ago(5 * 60_000), NOW)).toBe('5 min ago');
    expect(relativeTime(ago(3 * 3_600_000 + 59_000), NOW)).toBe('3 h ago');
    expect(relativeTime(ago(30 * 3_600_000), NOW)).toBe('yesterday');
    expect(relativeTime(ago(4 * 86_400_000), NOW)).toBe('4 days ago');
  });

  it('gives the date for anything older than a week', () => {
    expect(relativeTime('2026-03-12T10:00:00Z', NOW)).toBe('12 Mar 2026');
  });

  it('shows a clock skewed slightly into the future as just now, and bad input as a dash', () => {
    expect(relativeTime(ago(-5_000), NOW)).toBe('just now');
    expect(relativeTime('not a time', NOW)).toBe('—');
  });
});

describe('formatDateTime', () => {
  it('has the date and the time to the second', () => {
    const text = formatDateTime('2026-03-12T10:04:05Z');
    expect(text).toContain('2026');
    expect(text).toContain('Mar');
    expect(text).toMatch(/\d{2}:\d{2}:\d{2}/);
  });

  it('shows a dash for no time and the text itself for one it cannot read', () => {
    expect(formatDateTime(null)).toBe('—');
    expect(formatDateTime(undefined)).toBe('—');
    expect(formatDateTime('soon')).toBe('soon');
  });
});

describe('formatDuration', () => {
  it('is compact at every scale', () => {
    expect(formatDuration(0)).toBe('0.0s');
    expect(formatDuration(400)).toBe('0.4s');
    expect(formatDuration(12_345)).toBe('12.3s');
    expect(formatDuration(4 * 60_000 + 5_000)).toBe('4m05s');
    expect(formatDuration(2 * 3_600_000 + 3 * 60_000)).toBe('2h03m');
    expect(formatDuration(3 * 86_400_000 + 4 * 3_600_000)).toBe('3d04h');
  });
  it('reads as the CLI prints it (weft ps, the run progress)', () => {
    // daemon/src/cli/progress.rs `seconds`: `12.3s`, `2m05s`.
    expect(formatDuration(125_000)).toBe('2m05s');
    expect(formatDuration(59_940)).toBe('59.9s');
  });

  it('shows a dash for nonsense', () => {
    expect(formatDuration(-1)).toBe('—');
    expect(formatDuration(Number.NaN)).toBe('—');
  });
});

describe('runDurationMs', () => {
  const run = (over: Partial<RunSummary>): RunSummary => ({
    id: '01M8VVD80HQ8MPZSGVDFRQ4VSS',
    archived: false,
    workflow_name: 'Ship',
    workflow_path: null,
    goal: null,
    status: 'succeeded',
    labels: [],
    run_dir: '/home/me/.weft/runs/x',
    work_dir: '/home/me',
    created_at: ago(10_000),
    started_at: ago(10_000),
    finished_at: ago(4_000),
    failure_reason: null,
    last_seq: 1,
    node_count: 3,
    ...over,
  });

  it('is start to finish for a finished run', () => {
    expect(runDurationMs(run({}), NOW)).toBe(6_000);
  });
  it('counts up to now while the run is live or waiting at a gate', () => {
    expect(runDurationMs(run({ status: 'blocked', finished_at: null }), NOW)).toBe(10_000);
  });
  it('is unknown for a run that never started or was interrupted', () => {
    expect(runDurationMs(run({ started_at: null }), NOW)).toBeNull();
    expect(runDurationMs(run({ status: 'interrupted', finished_at: null }), NOW)).toBeNull();
  });
});

describe('formatCost and formatTokens', () => {
  it('keeps sub-cent costs visible', () => {
    expect(formatCost({ cost: 0.01036 })).toBe('$0.01');
    expect(formatCost({ cost: 0.00042 })).toBe('$0.0004');
    expect(formatCost({ cost: 1.5 })).toBe('$1.50');
    expect(formatCost({ cost: 0 })).toBe('$0.00');
  });
  it('names calls without a price instead of counting them as free, as weft cost does', () => {
    expect(formatCost({ cost: 1.5, unpriced_calls: 2 })).toBe('$1.50 + 2 unpriced');
    expect(formatCost({ cost: 0, unpriced_calls: 1 })).toBe('unpriced (1 call)');
    expect(formatCost({ cost: 0, unpriced_calls: 0 })).toBe('$0.00');
  });
  it('abbreviates token counts', () => {
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(8_200)).toBe('8.2k');
    expect(formatTokens(1_250_000)).toBe('1.3M');
  });
});
