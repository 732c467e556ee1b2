import { Channel, invoke } from '@tauri-apps/api/core';
import { listen } from '@tauri-apps/api/event';
import { open } from '@tauri-apps/plugin-dialog';

import type { Event, Host, InitialRoute, RunsPage } from './host';

/**
 * How old the page handed over at start may be: the page loads within a
 * second of it; a reload later must not show the start's list.
 */
const FIRST_PAGE_FRESH_MS = 5_000;

/** The real backend: commands implemented in `src-tauri` (snake_case args). */
export const tauriHost: Host = {
  appVersion: () => invoke('app_version'),
  initialRoute: () => invoke('initial_route'),
  // Emitted by the single-instance hand-over (src-tauri/src/instance.rs).
  onOpenRoute: (open) => listen<InitialRoute>('open-route', (e) => open(e.payload)),

  runsPage: (query) => invoke('runs_page', { query }),
  firstRunsPage: () => {
    // Set by the window's initialisation script (src-tauri/src/first_page.rs).
    const w = globalThis as { __WEFT_FIRST_RUNS__?: { at: number; page: RunsPage } };
    const handed = w.__WEFT_FIRST_RUNS__;
    delete w.__WEFT_FIRST_RUNS__;
    return handed && Date.now() - handed.at < FIRST_PAGE_FRESH_MS ? handed.page : null;
  },
  runView: (run) => invoke('run_view', { run }),
  runEvents: (run, afterSeq, limit) => invoke('run_events', { run, after_seq: afterSeq, limit }),
  stageFiles: (run, node, visit) => invoke('stage_files', { run, node, visit }),
  searchLogs: (run, query) => invoke('search_logs', { run, query }),
  artifactContent: (run, path) => invoke('artifact_content', { run, path }),
  revealArtifact: (run, path) => invoke('reveal_artifact', { run, path }),

  daemonStatus: () => invoke('daemon_status'),
  daemonStart: () => invoke('daemon_start'),
  runStart: (params) => invoke('run_start', { params }),
  runCancel: (run) => invoke('run_cancel', { run }),
  runArchive: (run, archived) => invoke('run_archive', { run, archived }),
  runResume: (run) => invoke('run_resume', { run }),
  questionList: (run) => invoke('question_list', { run }),
  questionAnswer: (question, answer) => invoke('question_answer', { question, answer }),
  validateWorkflow: (path) => invoke('validate_workflow', { path }),
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
    const id = await invoke<string>('subscribe', { run, after_seq: afterSeq, channel });
    return () => {
      void invoke('unsubscribe', { subscription: id });
    };
  },
};
