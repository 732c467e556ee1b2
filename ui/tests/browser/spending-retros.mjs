// Browser test of the Spending and Retros pages over the recorded fixtures
// (src/api/fixtures/recorded.json): the Spending page, reached from the
// navigation, has a row per model the recorded runs called (an Anthropic and
// an OpenAI one) with the read model's figures; the Retros page lists the
// recorded retros, and a row's link opens the run, whose Retro section shows
// the narrative. Figures are read from the fixtures, so regenerated fixtures
// need no edit here.
//
// Usage: npm run build && node tests/browser/spending-retros.mjs
// Leaves screenshots in test-results/spending.png and test-results/retros.png.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { check, checkNoErrors, resultsDir, suite, uiDir } from './_harness.mjs';

const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const spending = fixtures?.spending;
const retros = fixtures?.retros ?? [];

const at = (base, hash) => new URL(`index.html${hash}`, base).href;

/** Dollars as the app shows a figure without unpriced calls (src/format.ts). */
const dollars = (cost) => (cost < 0.01 && cost > 0 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`);

/** The cells of each row of the table `testId`. */
async function rows(page, testId) {
  const table = page.getByTestId(testId);
  await table.locator('tbody tr').first().waitFor();
  return table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
}

await suite('spending-retros', [
  [
    'the Spending page, from the navigation, has a row per model with the recorded figures',
    spending?.models.length > 1 &&
      (async (page, base, errors) => {
        await page.goto(at(base, '#/runs'), { waitUntil: 'load' });
        await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Spending' }).click();
        const models = await rows(page, 'spending-models');
        check(models.length === spending.models.length, `one row per model: ${JSON.stringify(models)}`);
        for (const [i, m] of spending.models.entries()) {
          const row = models[i] ?? [];
          check(row[0] === m.model && row[1] === m.provider, `row ${i} names ${m.provider}/${m.model}: ${JSON.stringify(row)}`);
          check(row[2] === String(m.calls), `${m.model}: ${m.calls} calls, shown ${row[2]}`);
          check(row[4] === dollars(m.cost), `${m.model}: ${dollars(m.cost)}, shown ${row[4]}`);
        }
        const providers = new Set(models.map((r) => r[1]));
        check(providers.has('anthropic') && providers.has('openai'), `an Anthropic and an OpenAI model: ${[...providers]}`);
        const total = (await page.getByTestId('spending-cost').textContent()) ?? '';
        check(total === dollars(spending.total.cost), `total ${dollars(spending.total.cost)}, shown ${total}`);
        const runs = await rows(page, 'spending-runs');
        check(
          JSON.stringify(runs.map((r) => r[1])) === JSON.stringify(spending.runs.map((r) => r.workflow_name)),
          `a row per run that spent: ${JSON.stringify(runs.map((r) => r[1]))}`,
        );
        checkNoErrors(errors);
        await page.screenshot({ path: join(resultsDir, 'spending.png'), fullPage: true });
      }),
  ],
  [
    'the Retros page lists the recorded retros, and a row opens the run at its Retro section',
    retros.length > 0 &&
      (async (page, base, errors) => {
        await page.goto(at(base, '#/retros'), { waitUntil: 'load' });
        const listed = await rows(page, 'retros');
        check(listed.length === retros.length, `one row per retro: ${JSON.stringify(listed)}`);
        for (const [i, r] of retros.entries()) {
          const row = listed[i] ?? [];
          check(row[0] === (r.smoothness ?? 'no rating'), `${r.workflow_name} rated ${r.smoothness}: ${JSON.stringify(row)}`);
          check(row[2] === r.workflow_name, `row ${i} is ${r.workflow_name}: ${JSON.stringify(row)}`);
          check(row[4] === dollars(r.cost), `${r.workflow_name}: ${dollars(r.cost)}, shown ${row[4]}`);
          check(row[6] === String(r.friction_count), `${r.workflow_name}: ${r.friction_count} friction points, shown ${row[6]}`);
        }
        await page.screenshot({ path: join(resultsDir, 'retros.png') });

        const first = retros[0];
        const retro = fixtures.retro[first.run_id];
        await page.getByTestId('retros').locator(`tr[data-run-id="${first.run_id}"] a`).click();
        // The row's link opens the run with its Retro tab (`#/run/RUN/retro`).
        const section = page.getByRole('tabpanel', { name: 'Retro' });
        await section.getByTestId('retro').waitFor();
        const badge = await section.locator('.retro-badge').getAttribute('data-rating');
        check(badge === first.smoothness, `the Retro section's badge is ${first.smoothness}, got ${badge}`);
        const text = (await section.textContent()) ?? '';
        check(text.includes(retro.narrative.outcome), `the Retro section tells the outcome: ${text}`);
        for (const f of retro.narrative.friction_points) {
          check(text.includes(f.description), `the Retro section names the friction "${f.description}"`);
        }
        checkNoErrors(errors);
      }),
  ],
]);
