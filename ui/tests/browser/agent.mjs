// Browser test of an agent stage's panel and timeline ticks: serves the built
// UI (dist/) with `vite preview`, opens it in Debian's Chromium through
// playwright-core against the test host, and opens the agent run of the
// recorded fixtures (src/api/fixtures/recorded.json, recorded from a real
// agent session against the fake LLM server). Everything checked is read
// from the fixture's own events, so a re-recording needs no edit here. An
// agent the recording left running (its model call unanswered) shows the
// steering box; the test host models `steer_stage` as weftd would once the
// agent takes the message.
//
// Usage: npm run build && node tests/browser/agent.mjs
// Leaves a screenshot in test-results/run-agent.png.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { check, checkNoErrors, resultsDir, suite, uiDir } from './_harness.mjs';

const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const view = fixtures?.views.find((v) => v.stages.some((s) => s.handler === 'agent' && s.status === 'succeeded'));
const stage = view?.stages.find((s) => s.handler === 'agent' && s.status === 'succeeded');
const events = (view && fixtures.events[view.run.id].filter((e) => e.node_id === stage.node_id && (e.visit ?? 1) === stage.visit)) ?? [];
const of = (kind) => events.filter((e) => e.event === kind);
// An agent left working in the daemon when the history was dumped.
const liveView = fixtures?.views.find((v) => v.run.status === 'running' && v.stages.some((s) => s.handler === 'agent' && s.status === 'running'));
const liveStage = liveView?.stages.find((s) => s.handler === 'agent' && s.status === 'running');

const at = (base, hash) => new URL(`index.html${hash}`, base).href;

await suite(
  'agent',
  [
    [
      'the recorded history has an agent run with turns and tool calls, one of them failed',
      async () => {
        check(!!stage, 'recorded.json should hold a succeeded agent stage: re-record the fixtures (docs/app.md)');
        check(of('agent.turn.started').length >= 2, 'the agent stage should have several turns');
        check(of('agent.tool.started').length >= 2, 'the agent stage should have called tools');
        check(
          of('agent.tool.completed').some((e) => e.properties.is_error),
          'one tool call should have failed (the read-before-write refusal), so the error row shows',
        );
      },
    ],
    [
      "an agent stage's panel: its turns as Markdown, a row per tool call, spend and files touched",
      stage &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/runs/${view.run.id}/node/${stage.node_id}`), { waitUntil: 'load' });
          await page.waitForFunction((id) => document.querySelector('[data-testid=stage-detail]')?.getAttribute('data-node') === id, stage.node_id);
          const tab = page.locator('[data-testid=stage-detail] [role=tab][aria-selected=true]');
          check((await tab.textContent()) === 'Transcript', 'an agent stage should open on its transcript');

          const turns = page.getByTestId('agent-turn');
          await turns.first().waitFor();
          const turnNumbers = [...new Set(of('agent.turn.started').map((e) => e.properties.turn))];
          check((await turns.count()) === turnNumbers.length, `one entry per turn (${turnNumbers.length}), got ${await turns.count()}`);

          // The first turn's text: the recorded chunks joined, as Markdown.
          const firstText = of('agent.text').filter((e) => e.properties.turn === turnNumbers[0]).map((e) => e.properties.text).join('');
          const rendered = (await page.getByTestId('agent-text').first().textContent()) ?? '';
          const plain = firstText.replace(/[`*]/g, '');
          check(rendered.replace(/\s+/g, ' ').trim() === plain.replace(/\s+/g, ' ').trim(), `turn 1 should read ${JSON.stringify(plain)} (got ${JSON.stringify(rendered)})`);
          if (firstText.includes('`')) {
            check((await page.getByTestId('agent-text').first().locator('code').count()) > 0, 'inline code in the text should be rendered as code');
          }

          // One row per tool call, in order, with the failed one marked.
          const started = of('agent.tool.started');
          const rows = page.getByTestId('tool-call');
          check((await rows.count()) === started.length, `one row per tool call (${started.length}), got ${await rows.count()}`);
          const tools = await rows.evaluateAll((els) => els.map((el) => [el.dataset.tool, el.dataset.state]));
          const done = new Map(of('agent.tool.completed').map((e) => [e.properties.call_id, e.properties]));
          const want = started.map((e) => [e.properties.tool, done.get(e.properties.call_id)?.is_error ? 'failed' : 'succeeded']);
          check(JSON.stringify(tools) === JSON.stringify(want), `tool rows ${JSON.stringify(tools)} should be ${JSON.stringify(want)}`);

          // Expanding the failed call shows its arguments and its error.
          const failedIndex = want.findIndex(([, state]) => state === 'failed');
          const failedRow = rows.nth(failedIndex);
          await failedRow.locator('summary').click();
          const args = JSON.parse((await failedRow.getByTestId('tool-arguments').textContent()) ?? 'null');
          check(JSON.stringify(args) === JSON.stringify(started[failedIndex].properties.arguments), `the expanded row should show the call's arguments (got ${JSON.stringify(args)})`);
          const output = (await failedRow.getByTestId('tool-output').textContent()) ?? '';
          const preview = done.get(started[failedIndex].properties.call_id).preview;
          check(output.startsWith(preview), `the expanded row should show the error ${JSON.stringify(preview)} (got ${JSON.stringify(output)})`);

          // Spend and files touched from the outcome.
          const outcome = stage.outcome;
          const spend = (await page.getByTestId('agent-spend').textContent()) ?? '';
          check(spend.includes(`${outcome.llm.calls} calls`), `the spend should count ${outcome.llm.calls} model calls (got ${JSON.stringify(spend)})`);
          const files = await page.locator('[data-testid=files-touched] li').allTextContents();
          check(JSON.stringify(files) === JSON.stringify(outcome.files_touched), `files touched ${JSON.stringify(files)} should be ${JSON.stringify(outcome.files_touched)}`);

          // The stage has ended: no steering box.
          check((await page.getByTestId('steer-box').count()) === 0, 'a finished stage should offer no steering');
          await page.getByTestId('stage-detail').screenshot({ path: join(resultsDir, 'run-agent.png') });
          checkNoErrors(errors);
        }),
    ],
    [
      "the agent stage's timeline bar carries a tick per tool call, the tool and summary in its tooltip",
      stage &&
        (async (page, base, errors) => {
          await page.goto(at(base, `#/runs/${view.run.id}`), { waitUntil: 'load' });
          const ticks = page.locator(`[data-testid=tool-tick][data-node="${stage.node_id}"]`);
          await ticks.first().waitFor();
          const started = of('agent.tool.started');
          const titles = await ticks.evaluateAll((els) => els.map((el) => el.getAttribute('title')));
          check(titles.length === started.length, `one tick per call (${started.length}), got ${titles.length}`);
          started.forEach((e, i) => {
            const want = `${stage.node_id}: ${e.properties.tool} ${e.properties.summary}`.trim();
            check(titles[i]?.startsWith(want), `tick ${i} should say ${JSON.stringify(want)} (got ${JSON.stringify(titles[i])})`);
          });
          // Each tick lies within its bar.
          const inside = await page.evaluate((node) => {
            const bar = document.querySelector(`.timeline__bar[data-node="${node}"]`)?.getBoundingClientRect();
            return [...document.querySelectorAll(`[data-testid=tool-tick][data-node="${node}"]`)].every((t) => {
              const r = t.getBoundingClientRect();
              return bar && r.left >= bar.left - 1 && r.left <= bar.right + 1 && r.top >= bar.top && r.bottom <= bar.bottom + 1;
            });
          }, stage.node_id);
          check(inside, 'every tick should lie on its stage bar');
          await page.getByTestId('timeline').screenshot({ path: join(resultsDir, 'run-agent-timeline.png') });
          checkNoErrors(errors);
        }),
    ],
    [
      'a running agent stage: its transcript so far, and a steering message that lands in it',
      async (page, base, errors) => {
        check(!!liveStage, 'recorded.json should hold a running agent stage: re-record the fixtures (docs/app.md)');
        await page.goto(at(base, `#/runs/${liveView.run.id}`), { waitUntil: 'load' });
        // The panel follows the run to its running stage.
        await page.waitForFunction((id) => document.querySelector('[data-testid=stage-detail]')?.getAttribute('data-node') === id, liveStage.node_id);
        const liveEvents = fixtures.events[liveView.run.id].filter((e) => e.node_id === liveStage.node_id);
        const calls = liveEvents.filter((e) => e.event === 'agent.tool.started').length;
        await page.getByTestId('agent-turn').first().waitFor();
        check((await page.getByTestId('tool-call').count()) === calls, `one row per tool call so far (${calls})`);

        const message = 'Leave the imports alone; only fix the typo.';
        const box = page.getByTestId('steer-box');
        await box.getByRole('textbox').fill(message);
        await box.getByRole('button', { name: 'Send to the agent' }).click();
        await box.getByTestId('action-done').waitFor();
        const notice = page.locator('[data-testid=agent-notice][data-kind=steered]');
        await notice.waitFor();
        check((await notice.textContent()) === `Steered: “${message}”`, `the transcript should show the steering message (got ${JSON.stringify(await notice.textContent())})`);
        check((await box.getByRole('textbox').inputValue()) === '', 'the box should be empty once the message was sent');
        await page.getByTestId('stage-detail').screenshot({ path: join(resultsDir, 'run-agent-steer.png') });
        checkNoErrors(errors);
      },
    ],
  ],
  { skipReason: 'recorded.json has no agent run' },
);
