// The only module that may reach the backend (and the only place that may
// import `@tauri-apps/*`). Screens import `api` from here and never care
// which host answers.
import type { Host } from './host';
import { tauriHost } from './tauriHost';
import { testHost } from './testHost';

export type * from './host';
export { appError } from './host';
export { EVENTS_PAGE_MAX } from './commands';
export { TEST_APP_VERSION } from './testHost';

/**
 * Picks the host for a window: Tauri injects `__TAURI_INTERNALS__` before any
 * page script runs, so its absence means a plain browser (tests, previews).
 */
export function selectHost(win: object): Host {
  return '__TAURI_INTERNALS__' in win ? tauriHost : testHost;
}

/** The backend for this page, chosen once at start-up. */
export const api: Host = selectHost(globalThis);
