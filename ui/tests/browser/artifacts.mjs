// Browser test of the run screen's artifacts: the recorded release run
// (src/api/fixtures/recorded.json) captured one report of each preview kind;
// each is previewed as it should be (markdown rendered, JSON pretty-printed,
// an image, HTML in an empty sandbox, text as is), and "Reveal in folder"
// names where the file was written. Which run and paths to open are read
// from the fixtures, so regenerated fixtures need no edit here.
//
// Usage: npm run build && node tests/browser/artifacts.mjs
// Leaves a screenshot in test-results/artifacts.png.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { checkNoErrors, check, resultsDir, suite, uiDir } from './_harness.mjs';

const fixturesPath = join(uiDir, 'src/api/fixtures/recorded.json');
const fixtures = existsSync(fixturesPath) ? JSON.parse(readFileSync(fixturesPath, 'utf8')) : null;
const view = fixtures?.views.find((v) => v.artifacts.length > 0);
/** The recorded content of each of the run's paths. */
const contents = view ? Object.fromEntries(view.artifacts.map((a) => [a.path, fixtures.artifacts[`${view.run.id}/${a.path}`]])) : {};
const pathOf = (media) => Object.keys(contents).find((p) => contents[p]?.media === media);

const at = (base, hash) => new URL(`index.html${hash}`, base).href;
/** The run's Artifacts tab, on the stage that captured the first artifact. */
const first = view?.artifacts[0];
const artifactsHash = first ? `#/run/${view.run.id}/stage/${encodeURIComponent(first.node_id)}@${first.visit}/artifacts` : '';

/** Opens the run and clicks the artifact `path`'s preview button. */
async function openPreview(page, base, path) {
  if (!page.url().includes(view.run.id)) {
    await page.goto(at(base, artifactsHash), { waitUntil: 'load' });
  }
  const preview = page.getByTestId('artifact-preview');
  await preview.getByRole('button', { name: path, exact: true }).click();
  return preview;
}

await suite(
  'artifacts',
  [
    [
      'the run lists what it captured, with the stage that captured each',
      view &&
        (async (page, base, errors) => {
          await page.goto(at(base, artifactsHash), { waitUntil: 'load' });
          const table = page.getByTestId('artifacts');
          await table.waitFor();
          for (const a of view.artifacts) {
            const row = table.locator('tr', { hasText: a.path });
            check((await row.count()) === 1, `one row for ${a.path}`);
            check(((await row.textContent()) ?? '').includes(a.node_id), `${a.path}'s row names stage ${a.node_id}`);
          }
          checkNoErrors(errors);
        }),
    ],
    [
      'markdown is rendered, not shown as source',
      view &&
        (async (page, base, errors) => {
          const preview = await openPreview(page, base, pathOf('text/markdown'));
          const md = preview.getByTestId('artifact-markdown');
          await md.waitFor();
          const heading = (await md.locator('h1').textContent()) ?? '';
          const source = contents[pathOf('text/markdown')].text;
          check(source.startsWith(`# ${heading}`), `the markdown's first heading is an <h1> (got ${JSON.stringify(heading)})`);
          check((await md.locator('li').count()) >= 2, 'the list items are <li>s');
          checkNoErrors(errors);
        }),
    ],
    [
      'JSON is pretty-printed, an image is an image, HTML is sandboxed, text is text',
      view &&
        (async (page, base, errors) => {
          let preview = await openPreview(page, base, pathOf('application/json'));
          const json = (await preview.getByTestId('artifact-json').textContent()) ?? '';
          const parsed = JSON.parse(contents[pathOf('application/json')].text);
          check(json === JSON.stringify(parsed, null, 2), `pretty JSON (got ${JSON.stringify(json)})`);

          preview = await openPreview(page, base, pathOf('image/svg+xml'));
          const img = preview.getByTestId('artifact-image');
          await img.waitFor();
          await page.waitForFunction(() => {
            const i = document.querySelector('[data-testid=artifact-image]');
            return i instanceof HTMLImageElement && i.complete && i.naturalWidth > 0;
          });
          check((await img.getAttribute('src'))?.startsWith('data:image/svg+xml;base64,'), 'the image is a data URL');

          preview = await openPreview(page, base, pathOf('text/html'));
          const frame = preview.getByTestId('artifact-html');
          await frame.waitFor();
          check((await frame.getAttribute('sandbox')) === '', 'HTML runs in an empty sandbox');
          const heading = await page.frameLocator('[data-testid=artifact-html]').locator('h1').textContent();
          check(heading === 'Coverage', `the report renders inside the frame (got ${JSON.stringify(heading)})`);

          preview = await openPreview(page, base, pathOf('text/plain'));
          const text = (await preview.getByTestId('artifact-text').textContent()) ?? '';
          check(text === contents[pathOf('text/plain')].text, `text as captured (got ${JSON.stringify(text)})`);
          await page.screenshot({ path: join(resultsDir, 'artifacts.png'), fullPage: true });
          checkNoErrors(errors);
        }),
    ],
    [
      'reveal in folder names the file written under the run directory',
      view &&
        (async (page, base, errors) => {
          const path = pathOf('text/markdown');
          const preview = await openPreview(page, base, path);
          await preview.getByTestId('artifact-reveal').click();
          const said = (await preview.getByTestId('artifact-revealed').textContent()) ?? '';
          const file = `${view.run.run_dir}/artifacts/${path}`;
          check(said.includes(file), `says where the file is: ${file} (got ${JSON.stringify(said)})`);
          checkNoErrors(errors);
        }),
    ],
  ],
  { skipReason: 'the recorded fixtures have no run with artifacts' },
);
