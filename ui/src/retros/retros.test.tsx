// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import type { Host, Retro, RetroSummary } from '../api';
import { recorded } from '../api/fixtures/recorded';
import { makeTestHost } from '../api/testHost';
import { formatTokens } from '../format';
import { cleanup, render } from '../render.test-helper';
import { dollars, RetroPanel } from './RetroPanel';
import { RetrosScreen } from './RetrosScreen';

/** A retro as `weft retro --json` printed one from the e2e test's fake provider. */
const RETRO: Retro = {
  run_id: '01M8ZVK81MNX9B31N0V2K3HJBW',
  workflow_name: 'Build',
  run_status: 'succeeded',
  created_at: '2026-12-04T06:20:00.000Z',
  stages: [
    { node_id: 'start', visit: 1, handler: 'start', status: 'succeeded', duration_ms: 3, attempts: 1, retries: 0, cost: 0, tokens: 0 },
    {
      node_id: 'build',
      visit: 1,
      handler: 'command',
      status: 'failed',
      duration_ms: 12_300,
      attempts: 2,
      retries: 1,
      cost: 0.0123,
      tokens: 15_600,
      files_touched: ['src/main.rs'],
      failure_reason: 'command exited with status 3',
    },
  ],
  totals: {
    duration_ms: 12_400,
    cost: 0.0123,
    tokens: 15_600,
    retries: 1,
    files_touched: ['src/main.rs'],
    stages_completed: 1,
    stages_failed: 1,
  },
  narrative: {
    smoothness: 'bumpy',
    intent: 'Build the thing',
    outcome: 'It built on the second try',
    learnings: [{ category: 'repo', text: 'the build needs a compiler' }],
    friction_points: [{ kind: 'retry', description: 'the first build failed', stage: 'build' }],
    open_items: [{ kind: 'test_gap', description: 'nothing checks the build' }],
  },
};

const SUMMARIES: RetroSummary[] = [
  {
    run_id: RETRO.run_id,
    workflow_name: 'Build',
    run_status: 'succeeded',
    created_at: RETRO.created_at,
    smoothness: 'bumpy',
    friction_count: 1,
    duration_ms: 12_400,
    cost: 0.0123,
    tokens: 15_600,
  },
  {
    run_id: '01M8ZVK81MNX9B31N0V2K3HJBX',
    workflow_name: 'Deploy',
    run_status: 'failed',
    created_at: RETRO.created_at,
    friction_count: 0,
    duration_ms: null,
    cost: 0,
    tokens: 0,
    error: 'no API key',
  },
];

describe('retros in the app', () => {
  it('the Retro tab shows the rating, the story, friction, open items and the stages', async () => {
    const host: Host = { ...makeTestHost(), runRetro: () => Promise.resolve(RETRO) };
    const page = await render(<RetroPanel host={host} runId={RETRO.run_id} />);
    expect(page.querySelector('.retro-badge')?.getAttribute('data-rating')).toBe('bumpy');
    const text = page.textContent ?? '';
    expect(text).toContain('It built on the second try');
    expect(text).toContain('the build needs a compiler');
    expect(text).toContain('the first build failed (stage build)');
    expect(text).toContain('nothing checks the build');
    expect(text).toContain('$0.01 · 15.6k tokens');
    const rows = [...page.querySelectorAll('.retro__stages tbody tr')];
    expect(rows.map((r) => r.querySelector('td')?.textContent)).toEqual(['start@1', 'build@1']);
    expect(rows[1]?.getAttribute('title')).toBe('command exited with status 3');
  });

  it('a retro without its narrative says why, and a run without one says how to get one', async () => {
    const failed: Retro = { ...RETRO, narrative: null, error: 'no API key for provider `openai`' };
    const host: Host = { ...makeTestHost(), runRetro: () => Promise.resolve(failed) };
    const page = await render(<RetroPanel host={host} runId={RETRO.run_id} />);
    expect(page.querySelector('.retro-badge')?.getAttribute('data-rating')).toBe('none');
    expect(page.textContent).toContain('No narrative: no API key');
    cleanup();

    const none = await render(<RetroPanel host={{ ...makeTestHost(), runRetro: () => Promise.resolve(null) }} runId={RETRO.run_id} />);
    expect(none.querySelector('[data-testid="retro-none"]')?.textContent).toContain('weft retro RUN --generate');
  });

  it('the Retros list shows a row per retro with its rating, cost and friction count, linking to the run', async () => {
    const host: Host = { ...makeTestHost(), retros: () => Promise.resolve(SUMMARIES) };
    const page = await render(<RetrosScreen host={host} />);
    const rows = [...page.querySelectorAll('table.retros tbody tr')];
    expect(rows).toHaveLength(2);
    const cells = (row: Element) => [...row.querySelectorAll('td')].map((c) => c.textContent);
    expect(cells(rows[0]!).slice(0, 7)).toEqual(['bumpy', '01M8ZVK81M', 'Build', '12.4s', '$0.01', '15.6k', '1']);
    expect(cells(rows[1]!).slice(0, 7)).toEqual(['no rating', '01M8ZVK81M', 'Deploy', '—', '$0.00', '0', '0']);
    expect(rows[0]?.querySelector('a')?.getAttribute('href')).toBe(`#/run/${RETRO.run_id}/retro`);
  });

  it('the Retros page lists the recorded retros, newest first, figure for figure', async () => {
    const retros = recorded.retros ?? [];
    // Recorded with `--retro`: the triage run (smooth) after the failed deploy.
    expect(retros.map((r) => `${r.workflow_name} ${r.smoothness}`)).toEqual(['Triage smooth', 'Deploy failed']);
    const page = await render(<RetrosScreen host={makeTestHost(recorded)} />);
    const rows = [...page.querySelectorAll('table.retros tbody tr')];
    const cells = (row: Element) => [...row.querySelectorAll('td')].map((c) => c.textContent);
    expect(rows.map((r) => cells(r).slice(0, 7))).toEqual(
      retros.map((r) => [
        r.smoothness,
        r.run_id.slice(0, 10),
        r.workflow_name,
        `${((r.duration_ms ?? 0) / 1000).toFixed(1)}s`,
        dollars(r.cost),
        formatTokens(r.tokens),
        String(r.friction_count),
      ]),
    );
    // The triage run's own figures: its prompt stage's 4,300 + 780 tokens on gpt-5.2.
    expect(cells(rows[0]!)[4]).toBe('$0.02');
    expect(cells(rows[0]!)[5]).toBe('5.1k');
    expect(rows[1]?.querySelector('a')?.getAttribute('href')).toBe(`#/run/${retros[1]?.run_id}/retro`);
  });

  it('the Retro section shows a recorded run\'s retro, and a recorded run without one says so', async () => {
    const summary = recorded.retros?.[0];
    if (!summary) throw new Error('the recorded fixtures hold a retro');
    const retro = recorded.retro?.[summary.run_id];
    if (!retro?.narrative) throw new Error('the triage run has its retro with a narrative');
    const host = makeTestHost(recorded);
    const page = await render(<RetroPanel host={host} runId={summary.run_id} />);
    expect(page.querySelector('.retro-badge')?.getAttribute('data-rating')).toBe('smooth');
    const text = page.textContent ?? '';
    expect(text).toContain(retro.narrative.outcome);
    expect(text).toContain('coupon totals are rounded per line, not per order');
    expect(text).toContain('two reports describe the same timeout in different words (stage triage)');
    expect(text).toContain('merge the duplicate timeout reports');
    expect(text).toContain(`${dollars(retro.totals.cost)} · ${formatTokens(retro.totals.tokens)} tokens`);
    const rows = [...page.querySelectorAll('.retro__stages tbody tr')];
    expect(rows.map((r) => r.querySelector('td')?.textContent)).toEqual(retro.stages.map((s) => `${s.node_id}@${s.visit}`));
    const triage = rows.find((r) => r.querySelector('td')?.textContent === 'triage@1');
    expect(triage?.querySelectorAll('td')[4]?.textContent).toBe('5.1k');
    cleanup();

    const other = recorded.views.find((v) => v.run.workflow_name === 'Release');
    if (!other) throw new Error('the recorded fixtures hold the release run');
    const none = await render(<RetroPanel host={host} runId={other.run.id} />);
    expect(none.querySelector('[data-testid="retro-none"]')).not.toBeNull();
  });

  it('the Retros list says so when there are none', async () => {
    const page = await render(<RetrosScreen host={makeTestHost()} />);
    expect(page.textContent).toContain('No retros yet');
  });
});
