import { describe, expect, it } from 'vitest';

import { selectHost, TEST_APP_VERSION } from './index';
import { tauriHost } from './tauriHost';
import { testHost } from './testHost';

describe('selectHost', () => {
  it('uses the test host in a plain browser', () => {
    // No Tauri internals means nothing would answer `invoke`.
    expect(selectHost({})).toBe(testHost);
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
