// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it } from 'vitest';

import type { Host, Spending, SpendingQuery } from '../api/host';
import { recorded } from '../api/fixtures/recorded';
import { makeTestHost } from '../api/testHost';
import { formatCost, formatTokens } from '../format';
import { cleanup, render as mount } from '../render.test-helper';
import { dayBars } from './chart';
import { SpendingScreen } from './SpendingScreen';

async function render(host: Host, today: Date): Promise<HTMLElement> {
  const container = await mount(<SpendingScreen host={host} today={today} />);
  await act(async () => {
    await new Promise((r) => setTimeout(r, 0));
  });
  return container;
}

const figures = (cost: number, tokens: number, unpriced_calls = 0) => ({
  stages: 1,
  calls: 1 + unpriced_calls,
  input_tokens: tokens,
  output_tokens: 0,
  cost,
  unpriced_calls,
});

/** Three days that spent in a week, one of them on a model without a price. */
const WEEK: Spending = {
  since: '2026-11-28T00:00:00.000Z',
  total: { ...figures(1.5, 6000, 1), stages: 3 },
  days: [
    { day: '2026-11-29', ...figures(1, 1000) },
    { day: '2026-12-01', ...figures(0.5, 2000) },
    { day: '2026-12-03', ...figures(0, 3000, 1) },
  ],
  models: [
    { provider: 'anthropic', model: 'claude-sonnet-4-5', ...figures(1.5, 3000) },
    { provider: 'custom', model: 'in-house', ...figures(0, 3000, 1) },
  ],
  runs: [{ run_id: '01RUNA0000000000000000000A', workflow_name: 'Fix', status: 'succeeded', created_at: '2026-12-03T10:00:00.000Z', ...figures(1.5, 6000, 1) }],
  runs_total: 1,
  stages: [],
};

/** A host whose spending is `spending`, noting each query asked. */
function hostWith(spending: Spending, asked: SpendingQuery[] = []): Host {
  return {
    ...makeTestHost(),
    spending: (query) => {
      asked.push(query);
      return Promise.resolve(spending);
    },
  };
}

describe('SpendingScreen', () => {
  it('draws a bar per day of the window, gaps at zero, taller for the day that cost more', async () => {
    const el = await render(hostWith(WEEK), new Date(2026, 11, 4, 12));
    const bars = [...el.querySelectorAll('[data-testid=spend-bar]')];
    const day = (d: string) => bars.find((b) => b.getAttribute('data-day') === d);
    expect(bars[0]?.getAttribute('data-day')).toBe(dayBars(WEEK, new Date(2026, 11, 4, 12))[0]?.day);
    expect(bars.at(-1)?.getAttribute('data-day')).toBe('2026-12-04');
    expect(Number(day('2026-11-30')?.getAttribute('height'))).toBe(0);
    const tall = Number(day('2026-11-29')?.getAttribute('height'));
    const short = Number(day('2026-12-01')?.getAttribute('height'));
    expect(tall).toBeGreaterThan(short);
    expect(short).toBeGreaterThan(0);
    expect(day('2026-12-03')?.getAttribute('class')).toContain('unpriced');
    expect(day('2026-12-03')?.textContent).toContain('unpriced (1 call)');

    // By tokens the last spending day is the tallest.
    const tokens = [...el.querySelectorAll('button')].find((b) => b.textContent === 'Tokens');
    await act(async () => tokens?.click());
    const heights = [...el.querySelectorAll('[data-testid=spend-bar]')].map((b) => Number(b.getAttribute('height')));
    expect(Math.max(...heights)).toBe(Number(el.querySelector('[data-day="2026-12-03"]')?.getAttribute('height')));
  });

  it('shows totals and tables per model and run, naming unpriced calls instead of counting them as free', async () => {
    const el = await render(hostWith(WEEK), new Date(2026, 11, 4, 12));
    expect(el.querySelector('[data-testid=spending-cost]')?.textContent).toBe('$1.50 + 1 unpriced');
    expect(el.querySelector('[data-testid=spending-unpriced]')?.textContent).toContain('1 call had no price');
    const models = [...el.querySelectorAll('[data-testid=spending-models] tbody tr')].map((r) => r.textContent);
    expect(models).toHaveLength(2);
    expect(models[0]).toContain('claude-sonnet-4-5');
    expect(models[1]).toContain('unpriced (1 call)');
    const run = el.querySelector('[data-testid=spending-runs] tbody a');
    expect(run?.getAttribute('href')).toBe('#/run/01RUNA0000000000000000000A');
  });

  it('asks for the last 30 days first, then the window chosen', async () => {
    const asked: SpendingQuery[] = [];
    const el = await render(hostWith(WEEK, asked), new Date(2026, 11, 4, 12));
    const all = [...el.querySelectorAll('button')].find((b) => b.textContent === 'All time');
    await act(async () => all?.click());
    await act(async () => {
      await new Promise((r) => setTimeout(r, 0));
    });
    expect(asked).toEqual([{ since: '30d' }, {}]);
  });

  it('shows the recorded runs spending, figure for figure as the read model gave it', async () => {
    const spending = recorded.spending;
    expect(spending).toBeDefined();
    if (!spending) return;
    const el = await render(makeTestHost(recorded), new Date());
    const bars = [...el.querySelectorAll('[data-testid=spend-bar]')];
    const spent = bars.filter((b) => Number(b.getAttribute('height')) > 0).map((b) => b.getAttribute('data-day'));
    expect(spent).toEqual(spending.days.map((d) => d.day));
    const rows = [...el.querySelectorAll('[data-testid=spending-models] tbody tr')];
    expect(rows).toHaveLength(spending.models.length);
    expect(rows[0]?.textContent).toContain(spending.models[0]?.model ?? '?');
    expect(el.querySelectorAll('[data-testid=spending-runs] tbody tr')).toHaveLength(spending.runs.length);
    expect(el.querySelector('[data-testid=spending-cost]')?.textContent).toBe(
      spending.total.cost < 0.01 ? `$${spending.total.cost.toFixed(4)}` : `$${spending.total.cost.toFixed(2)}`,
    );
  });

  it('shows a row per model of the recorded runs, an Anthropic and an OpenAI one, each with its own figures', async () => {
    const spending = recorded.spending;
    if (!spending) throw new Error('the recorded fixtures hold spending');
    // Recorded from prompt and agent stages on claude-haiku-4-5 and a prompt
    // stage on gpt-5.2 (tests/tests/it/ui_fixtures.rs).
    expect(spending.models.map((m) => m.provider).sort()).toEqual(['anthropic', 'openai']);
    const el = await render(makeTestHost(recorded), new Date());
    const rows = [...el.querySelectorAll('[data-testid=spending-models] tbody tr')].map((r) =>
      [...r.querySelectorAll('td')].map((c) => c.textContent),
    );
    expect(rows).toEqual(
      spending.models.map((m) => [
        m.model,
        m.provider,
        String(m.calls),
        `${formatTokens(m.input_tokens)} in / ${formatTokens(m.output_tokens)} out`,
        formatCost(m),
      ]),
    );
    const gpt = rows.find((r) => r[0] === 'gpt-5.2');
    // 4,300 tokens in and 780 out at $1.80 and $14.00 per million.
    expect(gpt).toEqual(['gpt-5.2', 'openai', '1', '4.3k in / 780 out', '$0.02']);
    // The total is the models' sum, as `weft cost` prints it.
    const sum = spending.models.reduce((a, m) => a + m.cost, 0);
    expect(spending.total.cost).toBeCloseTo(sum, 10);
    expect(el.querySelector('[data-testid=spending-cost]')?.textContent).toBe(formatCost(spending.total));
    const runs = [...el.querySelectorAll('[data-testid=spending-runs] tbody tr')].map((r) => r.querySelectorAll('td')[1]?.textContent);
    expect(runs).toEqual(spending.runs.map((r) => r.workflow_name));
    expect(runs).toContain('Triage');
  });

  it('says when nothing was spent, and why a read failed', async () => {
    const el = await render(makeTestHost(), new Date());
    expect(el.querySelector('[data-testid=spending-empty]')).not.toBeNull();
    cleanup();
    const refusing: Host = {
      ...makeTestHost(),
      spending: () => Promise.reject({ code: 'store.schema_too_old', message: 'start the daemon once' }),
    };
    const failed = await render(refusing, new Date());
    expect(failed.querySelector('.error')?.textContent).toContain('start the daemon once');
  });
});
