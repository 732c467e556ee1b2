import { describe, expect, it } from 'vitest';

// Every source file under src/, as text (resolved by Vite at test time).
const sources = import.meta.glob<string>('../**/*.{ts,tsx}', {
  query: '?raw',
  import: 'default',
  eager: true,
});

// `from '@tauri-apps/…'` and `import('@tauri-apps/…')`.
const TAURI_IMPORT = /(?:from\s+|import\(\s*)['"]@tauri-apps\//;

describe('the api boundary', () => {
  it('keeps every @tauri-apps import inside src/api/', () => {
    // Anything else would break the browser test host: a screen importing
    // Tauri directly has no backend outside the desktop app.
    const offenders = Object.entries(sources)
      .filter(([path]) => !path.startsWith('./'))
      .filter(([, text]) => TAURI_IMPORT.test(text))
      .map(([path]) => path);
    expect(Object.keys(sources).length).toBeGreaterThan(5);
    expect(offenders).toEqual([]);
  });
});
