import { fileURLToPath } from 'node:url';

import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

// The desktop app embeds `dist/` at compile time (tauri.conf.json has no
// devUrl), so a relative base keeps asset URLs valid under `tauri://localhost`
// and under `vite preview` alike.
export default defineConfig({
  base: './',
  plugins: [react()],
  clearScreen: false,
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // WebKitGTK 2.4x and Chromium both take ES2022; no legacy transforms.
    target: 'es2022',
    rolldownOptions: {
      // graph-demo.html: the run graph on fixture data, for tests/browser/graph.mjs.
      input: {
        main: fileURLToPath(new URL('./index.html', import.meta.url)),
        graphDemo: fileURLToPath(new URL('./graph-demo.html', import.meta.url)),
      },
    },
  },
  test: {
    include: ['src/**/*.test.{ts,tsx}'],
    environment: 'node',
  },
});
