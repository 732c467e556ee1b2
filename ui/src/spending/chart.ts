import type { DaySpend, SpendFigures, Spending } from '../api/host';

/** What a day's bar measures. */
export type Measure = 'cost' | 'tokens';

/** One bar of the per-day chart: a local day, and its spending (zero when nothing ran). */
export interface DayBar {
  day: string;
  spend: SpendFigures;
}

/** The most bars the chart draws (the latest days). */
export const MAX_BARS = 400;

const NOTHING: SpendFigures = { stages: 0, calls: 0, input_tokens: 0, output_tokens: 0, cost: 0, unpriced_calls: 0 };

/** `YYYY-MM-DD` of a local date. */
function dayKey(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

function parseDay(day: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  return m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null;
}

/**
 * One bar per local day from the window's first day (or the first day that
 * spent, for all time) to the last of `today` and the last day that spent,
 * days without spending at zero, so gaps show as gaps. At most `MAX_BARS`,
 * the latest.
 */
export function dayBars(spending: Spending, today: Date): DayBar[] {
  const byDay = new Map<string, DaySpend>(spending.days.map((d) => [d.day, d]));
  const first = spending.since ? new Date(Date.parse(spending.since)) : parseDay(spending.days[0]?.day ?? '');
  const lastSpent = parseDay(spending.days.at(-1)?.day ?? '');
  if (!first || Number.isNaN(first.getTime())) return [];
  const end = lastSpent && lastSpent > today ? lastSpent : today;
  const bars: DayBar[] = [];
  const cursor = new Date(first.getFullYear(), first.getMonth(), first.getDate());
  const endKey = dayKey(end);
  // Bounded: a window far in the past still draws at most MAX_BARS * 10 steps.
  for (let steps = 0; steps < MAX_BARS * 10; steps++) {
    const key = dayKey(cursor);
    bars.push({ day: key, spend: toFigures(byDay.get(key)) });
    if (key >= endKey) break;
    cursor.setDate(cursor.getDate() + 1);
  }
  return bars.slice(-MAX_BARS);
}

function toFigures(day: DaySpend | undefined): SpendFigures {
  if (!day) return NOTHING;
  const { stages, calls, input_tokens, output_tokens, cost, unpriced_calls } = day;
  return { stages, calls, input_tokens, output_tokens, cost, unpriced_calls };
}

/** A bar's value under `measure`. */
export function measureOf(spend: SpendFigures, measure: Measure): number {
  return measure === 'cost' ? spend.cost : spend.input_tokens + spend.output_tokens;
}
