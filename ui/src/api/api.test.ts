import { describe, expect, it } from 'vitest';

import { COMMAND_KINDS } from './commands';
import { selectHost } from './index';
import { tauriHost } from './tauriHost';
import { TEST_APP_VERSION, testHost } from './testHost';

describe('selectHost', () => {
  it('uses the test host in a plain browser, loaded on first use', async () => {
    // No Tauri internals means nothing would answer `invoke`.
    const host = selectHost({});
    await expect(host.appVersion()).resolves.toBe(TEST_APP_VERSION);
    await expect(host.runsPage({ limit: 1 })).resolves.toEqual(await testHost.runsPage({ limit: 1 }));
    expect(host.firstRunsPage, 'no page is handed over in a browser').toBeUndefined();
    expect(host.onOpenRoute).toBeUndefined();
    expect(host.pickWorkflow).toBeUndefined();
  });

  it('uses the Tauri host when Tauri injected its internals', () => {
    expect(selectHost({ __TAURI_INTERNALS__: {} })).toBe(tauriHost);
  });
});

describe('test host', () => {
  it('reports the fixture version, never a real release number', async () => {
    await expect(testHost.appVersion()).resolves.toBe(TEST_APP_VERSION);
    expect(TEST_APP_VERSION).toMatch(/-test$/);
  });
});

describe('the first runs page handed over at start', () => {
  const page = { runs: [], total: 0, open_questions: {} };
  const handOver = (at: number) => {
    (globalThis as { __WEFT_FIRST_RUNS__?: unknown }).__WEFT_FIRST_RUNS__ = { at, page };
  };

  it('is taken once', () => {
    handOver(Date.now());
    expect(tauriHost.firstRunsPage?.()).toEqual(page);
    expect(tauriHost.firstRunsPage?.(), 'a second screen asks the backend').toBeNull();
  });

  it('is ignored when stale, as after a reload long after start', () => {
    handOver(Date.now() - 60_000);
    expect(tauriHost.firstRunsPage?.()).toBeNull();
  });
});

describe('the command surface', () => {
  /** `run_events` → `runEvents`, as the generated host methods are named. */
  const camel = (name: string) => name.replace(/_(.)/g, (_, c: string) => c.toUpperCase());
  const methods = Object.entries(COMMAND_KINDS)
    .filter(([, kind]) => kind !== 'stream')
    .map(([name]) => camel(name));

  it('gives both hosts a method for every command the app declares', () => {
    expect(methods.length, 'the generated table lists the commands').toBeGreaterThan(10);
    for (const [label, host] of [['tauri', tauriHost], ['test', testHost]] as const) {
      const missing = methods.filter((m) => typeof (host as unknown as Record<string, unknown>)[m] !== 'function');
      expect(missing, `the ${label} host`).toEqual([]);
    }
  });

  it('has the test host find no daemon for a live command it does not model', async () => {
    await expect(testHost.runCancel('any')).rejects.toMatchObject({ code: 'daemon.not_running' });
    await expect(testHost.daemonStatus()).rejects.toMatchObject({ code: 'daemon.not_running' });
  });
});
