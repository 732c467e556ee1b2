import { describe, expect, it } from 'vitest';

import { parsePatch } from './patch';
import { GIT_PATCH } from './patch.test-data';
import { diffRows } from './rows';

const PATCH = [
  'diff --git a/list.txt b/list.txt',
  '--- a/list.txt',
  '+++ b/list.txt',
  '@@ -1,5 +1,4 @@',
  ' keep',
  '-old one',
  '-old two',
  '+new one',
  ' middle',
  '+added',
  '-removed after an addition',
  '',
].join('\n');

const text = (l: { text: string } | null) => l?.text ?? '·';

describe('diffRows', () => {
  it('sets each run of removals beside the additions that follow it in split mode', () => {
    const { rows } = diffRows(parsePatch(PATCH).files, 'split');
    expect(rows.map((r) => (r.kind === 'pair' ? `${text(r.left)} | ${text(r.right)}` : r.kind))).toEqual([
      'file',
      'hunk',
      'keep | keep',
      'old one | new one',
      'old two | ·',
      'middle | middle',
      '· | added',
      'removed after an addition | ·',
    ]);
  });

  it('keeps every line in order in unified mode, and points each file at its header row', () => {
    const files = parsePatch(GIT_PATCH).files;
    const { rows, fileStarts } = diffRows(files, 'unified');
    expect(fileStarts.map((i) => rows[i]?.kind)).toEqual(files.map(() => 'file'));
    expect(rows.filter((r) => r.kind === 'binary').map((r) => files[r.file]?.path)).toEqual(['logo.png']);
    // The rename and the mode change have no hunks: one row says so.
    expect(rows.filter((r) => r.kind === 'bare').map((r) => files[r.file]?.path)).toEqual(['docs/é x.md', 'run.sh']);
    const lines = rows.filter((r) => r.kind === 'line').length;
    expect(lines).toBe(files.reduce((n, f) => n + f.hunks.reduce((m, h) => m + h.lines.length, 0), 0));
  });
});
