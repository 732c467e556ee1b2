import { describe, expect, it } from 'vitest';

import { GIT_PATCH } from './patch.test-data';
import { LINE_CHARS_MAX, PATCH_FILES_MAX, PATCH_LINES_MAX, headerPath, parsePatch, patchTotals } from './patch';


describe('parsePatch', () => {
  it('reads every kind of change git writes', () => {
    const { files, cut } = parsePatch(GIT_PATCH);
    expect(cut).toBeNull();
    expect(files.map((f) => [f.path, f.status, f.binary])).toEqual([
      ['docs/é x.md', 'renamed', false],
      ['logo.png', 'added', true],
      ['main.rs', 'modified', false],
      ['old.txt', 'deleted', false],
      ['run.sh', 'modified', false],
      ['tail.txt', 'added', false],
    ]);
    expect(files[0]?.oldPath).toBe('keep.md');
    expect(files[4]?.modeChange).toBe('100644 → 100755');
    expect(files[1]?.hunks).toEqual([]);
  });

  it('numbers the lines of each side and counts additions and deletions', () => {
    const main = parsePatch(GIT_PATCH).files[2];
    expect(main?.additions).toBe(1);
    expect(main?.deletions).toBe(1);
    expect(main?.hunks[0]?.lines).toEqual([
      { kind: 'context', text: 'fn main() {', oldNo: 1, newNo: 1 },
      { kind: 'del', text: '    println!("hi");', oldNo: 2, newNo: null },
      { kind: 'add', text: '    println!("hello");', oldNo: null, newNo: 2 },
      { kind: 'context', text: '}', oldNo: 3, newNo: 3 },
    ]);
    const tail = parsePatch(GIT_PATCH).files[5];
    expect(tail?.hunks[0]?.lines.at(-1)).toEqual({ kind: 'note', text: 'No newline at end of file', oldNo: null, newNo: null });
    expect(patchTotals(parsePatch(GIT_PATCH).files)).toEqual({ additions: 2, deletions: 2 });
  });

  it('keeps content lines that look like headers inside their hunk', () => {
    const patch = [
      'diff --git a/notes.md b/notes.md',
      '--- a/notes.md',
      '+++ b/notes.md',
      '@@ -1,2 +1,3 @@',
      ' intro',
      '+diff --git a/fake b/fake',
      '-@@ -1 +1 @@',
      '+--- a/x',
      '',
    ].join('\n');
    const { files } = parsePatch(patch);
    expect(files).toHaveLength(1);
    expect(files[0]?.hunks[0]?.lines.map((l) => l.kind)).toEqual(['context', 'add', 'del', 'add']);
  });

  it('reads a plain diff -u patch with several files', () => {
    const patch = '--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-1\n+one\n--- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-2\n+two\n';
    expect(parsePatch(patch).files.map((f) => f.path)).toEqual(['one.txt', 'two.txt']);
  });

  it('unquotes C-quoted paths and drops the a/ b/ prefixes', () => {
    expect(headerPath('"b/t\\303\\251st\\tx"', true)).toBe('tést\tx');
    expect(headerPath('a/src/main.rs', true)).toBe('src/main.rs');
    expect(headerPath('/dev/null', true)).toBeNull();
    expect(headerPath('b/x.rs\t2026-01-01', true)).toBe('x.rs');
  });

  it('reads an empty patch, and junk, as no files without throwing', () => {
    expect(parsePatch('')).toEqual({ files: [], cut: null });
    expect(parsePatch('hello\nworld\n@@ nonsense @@\n+++\n').files).toEqual([]);
    const odd = parsePatch('diff --git a/x b/x\n@@ -1,999999 +1,999999 @@\n+only one line\n');
    expect(odd.files[0]?.additions).toBe(1);
  });
});

describe('parsePatch on hostile input', () => {
  it('stops after PATCH_LINES_MAX lines of a patch with millions of them, and says so', () => {
    const lines = 2_000_000;
    const patch = `diff --git a/big b/big\n--- a/big\n+++ b/big\n@@ -0,0 +1,${lines} @@\n` + '+x\n'.repeat(lines);
    const parsed = parsePatch(patch);
    expect(parsed.cut).toMatch(/only the first 300,000 lines/);
    expect(parsed.files[0]?.additions).toBe(PATCH_LINES_MAX - 4);
  });

  it('cuts a line of many megabytes to LINE_CHARS_MAX and marks it', () => {
    const huge = 'y'.repeat(20 * 1024 * 1024);
    const parsed = parsePatch(`diff --git a/min.js b/min.js\n--- a/min.js\n+++ b/min.js\n@@ -1 +1 @@\n-x\n+${huge}\n`);
    const line = parsed.files[0]?.hunks[0]?.lines[1];
    expect(line?.kind).toBe('add');
    expect(line?.text.length).toBe(LINE_CHARS_MAX - 1);
    expect(line?.long).toBe(true);
  });

  it('keeps at most PATCH_FILES_MAX files', () => {
    const patch = Array.from({ length: PATCH_FILES_MAX + 10 }, (_, i) => `diff --git a/f${i} b/f${i}\nnew file mode 100644\n`).join('');
    const parsed = parsePatch(patch);
    expect(parsed.files).toHaveLength(PATCH_FILES_MAX);
    expect(parsed.cut).toMatch(/only the first 5,000 files/);
  });

  it('survives a patch without newlines, of NULs, and a hunk header with absurd numbers', () => {
    expect(parsePatch('\0'.repeat(1_000_000)).files).toEqual([]);
    const parsed = parsePatch('diff --git a/a b/a\n@@ -99999999999999999999,1 +1,2 @@\n x\n+y\n');
    expect(parsed.files[0]?.hunks[0]?.lines).toHaveLength(2);
  });
});
