// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import type { Event } from '../api';
import { BudgetWarnings, budgetWarnings } from './BudgetWarnings';
import { renderNow, rerender } from '../render.test-helper';
import { RUN } from './fixture.test-data';

function warning(seq: number, limit: string, message: string): Event {
  return {
    seq,
    ts: '2026-12-04T10:00:00.000Z',
    run_id: RUN,
    event: 'budget.warning',
    properties: { limit, max: 5, spent: 4.1, message },
  } as unknown as Event;
}

const notice = { seq: 2, ts: '2026-12-04T10:00:00.000Z', run_id: RUN, event: 'run.notice', properties: { message: 'hi' } } as unknown as Event;

describe('budget warnings', () => {
  it('keep the latest warning of each limit, in the order last warned', () => {
    const events = [
      warning(1, 'cost', 'the run has spent $4.00 of $5.00'),
      notice,
      warning(3, 'tokens', '80% of 1,000,000 tokens used'),
      warning(4, 'cost', 'the run has spent $4.50 of $5.00'),
    ];
    expect(budgetWarnings(events)).toEqual(['80% of 1,000,000 tokens used', 'the run has spent $4.50 of $5.00']);
  });

  it('show under the header only when there are any', () => {
    const container = renderNow(<BudgetWarnings events={[notice]} />);
    expect(container.querySelector('[aria-label="Budget warnings"]')).toBeNull();
    rerender(<BudgetWarnings events={[notice, warning(3, 'cost', 'the run has spent $4.00 of $5.00')]} />);
    const shown = container.querySelector('[aria-label="Budget warnings"]');
    expect(shown?.getAttribute('role')).toBe('status');
    expect(shown?.textContent).toContain('the run has spent $4.00 of $5.00');
  });
});
