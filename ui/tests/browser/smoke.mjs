// Browser smoke test: serves the built UI (dist/) with `vite preview` on a free
// port, opens it in Debian's Chromium through playwright-core, and checks that
// the page shows the app name and the version the *test host* reports. It
// proves the bundle loads outside Tauri and that the api module picked the
// test host (there is no `__TAURI_INTERNALS__` in a plain browser).
//
// Usage: npm run build && npm run test:browser
// Leaves a screenshot in test-results/browser-smoke.png.

import { join } from 'node:path';

import { resultsDir, suite } from './_harness.mjs';

const screenshotPath = join(resultsDir, 'browser-smoke.png');

// Must equal TEST_APP_VERSION in src/api/testHost.ts.
const FIXTURE_VERSION = '0.0.0-test';

await suite(
  'smoke',
  [
    [
      'the app name, the test host\'s version and the logo show',
      async (page, url, pageErrors) => {
        await page.goto(url, { waitUntil: 'load' });

        // The name is static; the version arrives asynchronously from the host, so
        // wait for it rather than reading the first frame.
        const heading = (await page.locator('h1').textContent())?.trim();
        if (heading !== 'Weft') throw new Error(`expected heading "Weft", got ${JSON.stringify(heading)}`);
        const versionLine = page.getByTestId('app-version');
        await versionLine.waitFor({ state: 'visible' });
        const versionText = (await versionLine.textContent())?.trim();
        if (versionText !== `Version ${FIXTURE_VERSION}`) {
          throw new Error(`expected "Version ${FIXTURE_VERSION}", got ${JSON.stringify(versionText)}`);
        }

        // The logo is the SVG from icons/; a broken asset path shows as width 0.
        const logoWidth = await page.locator('img.logo').evaluate((img) => img.naturalWidth);
        if (!(logoWidth > 0)) throw new Error('the logo image did not load');

        if (pageErrors.length > 0) throw new Error(`the page logged errors:\n  ${pageErrors.join('\n  ')}`);

        await page.screenshot({ path: screenshotPath });
        console.log(`  ${url}; screenshot: ${screenshotPath}`);
      },
    ],
  ],
  { wholeTimeoutMs: 60_000, viewport: { width: 900, height: 560 } },
);
