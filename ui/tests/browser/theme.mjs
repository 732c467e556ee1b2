// Browser test of the theme: with the OS asking for a dark scheme the app is
// dark, the Theme setting overrides the OS and is kept across a reload, and
// System hands the choice back to the OS.
//
// Usage: npm run build && node tests/browser/theme.mjs

import { check, checkNoErrors, suite } from './_harness.mjs';

// --bg of the palette (src/app/palette.css), as Chromium reports it.
const DARK_BG = 'rgb(20, 19, 42)';
const LIGHT_BG = 'rgb(247, 247, 251)';

const pageBackground = (page) => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);

await suite(
  'theme',
  [
    [
      'follows a dark OS, then the Theme setting, kept across a reload',
      async (page, url, errors) => {
        await page.emulateMedia({ colorScheme: 'dark' });
        await page.goto(url, { waitUntil: 'load' });
        await page.evaluate(() => localStorage.removeItem('weft.theme'));
        await page.reload({ waitUntil: 'load' });
        const setting = page.getByTestId('theme-setting').locator('select');
        await setting.waitFor({ state: 'visible' });
        check((await pageBackground(page)) === DARK_BG, `a dark OS gave the background ${await pageBackground(page)}`);
        check((await page.getByTestId('theme-setting').getAttribute('data-scheme')) === 'dark', 'the setting does not name the dark scheme');

        await setting.selectOption('light');
        check((await pageBackground(page)) === LIGHT_BG, `Light gave the background ${await pageBackground(page)}`);
        await page.reload({ waitUntil: 'load' });
        await setting.waitFor({ state: 'visible' });
        check((await setting.inputValue()) === 'light', 'the Light setting was not kept across a reload');
        check((await pageBackground(page)) === LIGHT_BG, `after a reload Light gave ${await pageBackground(page)}`);

        await setting.selectOption('system');
        check((await pageBackground(page)) === DARK_BG, `System on a dark OS gave ${await pageBackground(page)}`);
        await page.emulateMedia({ colorScheme: 'light' });
        check((await pageBackground(page)) === LIGHT_BG, `System on a light OS gave ${await pageBackground(page)}`);
        await setting.selectOption('dark');
        check((await pageBackground(page)) === DARK_BG, `Dark on a light OS gave ${await pageBackground(page)}`);
        await page.evaluate(() => localStorage.removeItem('weft.theme'));
        checkNoErrors(errors);
      },
    ],
  ],
  { wholeTimeoutMs: 60_000, viewport: { width: 900, height: 560 } },
);
