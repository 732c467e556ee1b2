import { Channel, invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { open } from '@tauri-apps/plugin-dialog';

import { commandMethods, type Send } from './commands';
import type { DeepLink, Event, Host, RunsPage } from './host';

/**
 * How old the page handed over at start may be: the page loads within a
 * second of it; a reload later must not show the start's list.
 */
const FIRST_PAGE_FRESH_MS = 5_000;

/** Tauri's `invoke`, typed by the command table. */
const send: Send = (command, args) => invoke(command, args);

/** The real backend: the commands of `src-tauri`, through `invoke`. */
export const tauriHost: Host = {
  ...commandMethods(send),
  // Emitted by the single-instance hand-over (src-tauri/src/instance.rs).
  onOpenRoute: (open) => listen<DeepLink>('open-route', (e) => open(e.payload)),
  firstRunsPage: () => {
    // Set by the window's initialisation script (src-tauri/src/first_page.rs).
    const w = globalThis as { __WEFT_FIRST_RUNS__?: { at: number; page: RunsPage } };
    const handed = w.__WEFT_FIRST_RUNS__;
    delete w.__WEFT_FIRST_RUNS__;
    return handed && Date.now() - handed.at < FIRST_PAGE_FRESH_MS ? handed.page : null;
  },
  pickWorkflow: async () => {
    const chosen = await open({
      multiple: false,
      directory: false,
      filters: [{ name: 'Workflows', extensions: ['fabro', 'dot', 'toml'] }],
    });
    return typeof chosen === 'string' ? chosen : null;
  },
  subscribe: async (run, afterSeq, onEvent) => {
    const channel = new Channel<Event>();
    channel.onmessage = onEvent;
    const id = await send('subscribe', { run, after_seq: afterSeq, channel });
    return () => {
      void send('unsubscribe', { subscription: id });
    };
  },
};
