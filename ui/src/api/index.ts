// The only module that may reach the backend (and the only place that may
// import `@tauri-apps/*`). Screens import `api` from here and never care
// which host answers.
import type { Host } from './host';
import { tauriHost } from './tauriHost';

export type * from './host';
export { appError } from './host';
export { EVENTS_PAGE_MAX } from './commands';

/** What only a desktop host has; the test host has none of them. */
const DESKTOP_ONLY = new Set<PropertyKey>(['onOpenRoute', 'firstRunsPage', 'pickWorkflow']);

/**
 * The test host, loaded on first use: it carries 0.2 MB of recorded
 * fixtures, which the app's start would otherwise parse for nothing (it
 * runs with Tauri's host). Every command method returns a promise, so each
 * can wait for the module; the desktop-only methods are absent, as on the
 * test host itself.
 */
const lazyTestHost: Host = (() => {
  let loaded: Promise<Host> | null = null;
  const load = () => (loaded ??= import('./testHost').then((m) => m.testHost));
  return new Proxy({} as Host, {
    get: (_target, name) => {
      if (typeof name !== 'string' || DESKTOP_ONLY.has(name) || name === 'then') return undefined;
      return (...args: unknown[]) =>
        load().then((host) => (host[name as keyof Host] as (...a: unknown[]) => unknown)(...args));
    },
    has: (_target, name) => !DESKTOP_ONLY.has(name),
  });
})();

/**
 * Picks the host for a window: Tauri injects `__TAURI_INTERNALS__` before any
 * page script runs, so its absence means a plain browser (tests, previews).
 */
export function selectHost(win: object): Host {
  return '__TAURI_INTERNALS__' in win ? tauriHost : lazyTestHost;
}

/** The backend for this page, chosen once at start-up. */
export const api: Host = selectHost(globalThis);
