// Runs every browser test in this folder (each `*.mjs` but this one), one
// after another, and fails when any fails. New tests need no registration.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tests = readdirSync(here)
  .filter((f) => f.endsWith('.mjs') && f !== 'run-all.mjs' && !f.startsWith('_'))
  .sort();
let failed = 0;
for (const test of tests) {
  const result = spawnSync(process.execPath, [join(here, test)], { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`browser test ${test} failed (exit ${result.status ?? result.signal})`);
    failed += 1;
  }
}
console.log(`browser test files: ${tests.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
