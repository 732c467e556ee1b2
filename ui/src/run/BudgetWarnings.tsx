import type { Event } from '../api';

/** The latest `budget.warning` of each limit the run neared, in order. */
export function budgetWarnings(events: readonly Event[]): string[] {
  const latest = new Map<string, string>();
  for (const e of events) {
    if (e.event !== 'budget.warning') continue;
    const { limit, message } = e.properties as { limit: string; message: string };
    latest.delete(limit);
    latest.set(limit, message);
  }
  return [...latest.values()];
}

/**
 * A warning under the run's header while it nears a spending limit
 * (docs/llm.md, "Budgets"): the engine records `budget.warning` once per
 * limit; at the limit itself the run asks its question like a gate.
 */
export function BudgetWarnings({ events }: { events: readonly Event[] }) {
  const warnings = budgetWarnings(events);
  if (warnings.length === 0) return null;
  return (
    <div className="budget-warnings" role="status" aria-label="Budget warnings">
      {warnings.map((w) => (
        <p key={w}>⚠ {w}</p>
      ))}
    </div>
  );
}
