// The shared harness of the browser tests: serves the built UI (dist/) with
// `vite preview` on a free port, opens Debian's Chromium through
// playwright-core with the flags this machine needs (PLATFORM.md), runs each
// named test in a fresh page, and prints "N passed, M failed".
//
// A test is `[name, async (page, base, errors) => {...}]`; it throws to fail.
// A test whose function is missing (null, undefined, false) is skipped, and
// so is one whose function returns 'skipped'.
// (Files starting with `_` are not tests: run-all.mjs skips them.)

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';
import { preview } from 'vite';

export const uiDir = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const resultsDir = join(uiDir, 'test-results');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const STEP_TIMEOUT_MS = 15_000;

/** Throws `why` unless `condition` holds. */
export function check(condition, why) {
  if (!condition) throw new Error(why);
}

/** Throws unless the page logged no errors. */
export function checkNoErrors(errors) {
  check(errors.length === 0, `the page logged errors:\n  ${errors.join('\n  ')}`);
}

/**
 * Runs `tests` as the suite `suite`, within `wholeTimeoutMs`, in a browser
 * window of `viewport`, once `dist/<page>` exists. `skipReason` explains
 * skipped tests; `fullPageFailure` makes the failure screenshot full-page.
 */
export async function suite(
  suite,
  tests,
  {
    wholeTimeoutMs = 120_000,
    viewport = { width: 1280, height: 800 },
    page: entry = 'index.html',
    skipReason = '',
    fullPageFailure = false,
  } = {},
) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const summary = (failures) =>
    console.log(`${passed} passed, ${failures} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
  const bail = (message) => {
    console.error(`browser ${suite}: FAILED: ${message}`);
    summary(failed + 1);
    process.exit(1);
  };
  if (!existsSync(join(uiDir, 'dist', entry))) bail(`ui/dist/${entry} is missing; run \`npm run build\` first`);
  if (!existsSync(CHROMIUM)) bail(`no Chromium at ${CHROMIUM}; install Debian's chromium package (or set CHROMIUM)`);
  // A hung browser or server must not hang `make test`.
  const watchdog = setTimeout(() => bail(`no result after ${wholeTimeoutMs / 1000} s`), wholeTimeoutMs);

  let server;
  let context;
  let profileDir;
  try {
    server = await preview({
      root: uiDir,
      logLevel: 'warn',
      preview: { host: '127.0.0.1', port: 0, strictPort: true, open: false },
    });
    const base = server.resolvedUrls?.local[0];
    if (!base) throw new Error('vite preview did not report a URL');
    profileDir = await mkdtemp(join(tmpdir(), 'weft-ui-chromium-'));
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport,
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
    await mkdir(resultsDir, { recursive: true });
    for (const [name, run] of tests) {
      if (!run) {
        skipped += 1;
        console.log(`browser ${suite}: skipped: ${name}${skipReason ? ` (${skipReason})` : ''}`);
        continue;
      }
      const page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      try {
        if ((await run(page, base, errors)) === 'skipped') {
          skipped += 1;
          console.log(`browser ${suite}: skipped: ${name}${skipReason ? ` (${skipReason})` : ''}`);
        } else {
          passed += 1;
          console.log(`browser ${suite}: ok: ${name}`);
        }
      } catch (e) {
        failed += 1;
        console.error(`browser ${suite}: FAILED: ${name}: ${e instanceof Error ? e.message : String(e)}`);
        await page.screenshot({ path: join(resultsDir, `${suite}-failure.png`), fullPage: fullPageFailure }).catch(() => {});
      } finally {
        await page.close().catch(() => {});
      }
    }
  } catch (e) {
    failed += 1;
    console.error(`browser ${suite}: FAILED: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    clearTimeout(watchdog);
    await context?.close().catch(() => {});
    await server?.close().catch(() => {});
    if (profileDir) await rm(profileDir, { recursive: true, force: true });
  }
  summary(failed);
  process.exitCode = failed > 0 ? 1 : 0;
}
