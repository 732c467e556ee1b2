// Browser smoke test: serves the built UI (dist/) with `vite preview` on a free
// port, opens it in Debian's Chromium through playwright-core, and checks that
// the page shows the app name and the version the *test host* reports. It
// proves the bundle loads outside Tauri and that the api module picked the
// test host (there is no `__TAURI_INTERNALS__` in a plain browser).
//
// Usage: npm run build && npm run test:browser
// Leaves a screenshot in test-results/browser-smoke.png.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';
import { preview } from 'vite';

const uiDir = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const resultsDir = join(uiDir, 'test-results');
const screenshotPath = join(resultsDir, 'browser-smoke.png');

// Must equal TEST_APP_VERSION in src/api/testHost.ts.
const FIXTURE_VERSION = '0.0.0-test';
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 15_000;
const WHOLE_TEST_TIMEOUT_MS = 60_000;

/** Reports a failure. Exits at once only when nothing needs cleaning up. */
function fail(message, { exit = true } = {}) {
  console.error(`browser smoke: FAILED: ${message}`);
  console.log('0 passed, 1 failed');
  process.exitCode = 1;
  if (exit) process.exit(1);
}

if (!existsSync(join(uiDir, 'dist', 'index.html'))) {
  fail('ui/dist/index.html is missing; run `npm run build` first');
}
if (!existsSync(CHROMIUM)) {
  fail(`no Chromium at ${CHROMIUM}; install Debian's chromium package (or set CHROMIUM)`);
}

// A hung browser or server must not hang `make test`.
const watchdog = setTimeout(
  () => fail(`no result after ${WHOLE_TEST_TIMEOUT_MS / 1000} s`),
  WHOLE_TEST_TIMEOUT_MS,
);

let server;
let context;
let profileDir;
try {
  // Port 0: the OS picks a free port, so parallel runs never collide.
  server = await preview({
    root: uiDir,
    logLevel: 'warn',
    preview: { host: '127.0.0.1', port: 0, strictPort: true, open: false },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a URL');

  // A fresh profile each run: no state leaks between runs or into ~/.config.
  profileDir = await mkdtemp(join(tmpdir(), 'weft-ui-chromium-'));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 900, height: 560 },
    timeout: STEP_TIMEOUT_MS,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(STEP_TIMEOUT_MS);

  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && pageErrors.push(m.text()));

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

  await mkdir(resultsDir, { recursive: true });
  await page.screenshot({ path: screenshotPath });
  console.log(`browser smoke: ok (${url}); screenshot: ${screenshotPath}`);
  console.log('1 passed, 0 failed');
} catch (e) {
  // Not exiting here: `finally` must still close the browser and the server.
  fail(e instanceof Error ? e.message : String(e), { exit: false });
} finally {
  clearTimeout(watchdog);
  await context?.close().catch(() => {});
  await server?.close().catch(() => {});
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
}
