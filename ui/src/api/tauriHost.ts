import { invoke } from '@tauri-apps/api/core';

import type { Host } from './host';

/** The real backend: commands implemented in `src-tauri`. */
export const tauriHost: Host = {
  appVersion: () => invoke<string>('app_version'),
};
