import { describe, expect, it } from 'vitest';

import { GIT_PATCH } from './patch.test-data';
import { parsePatch, type DiffFile } from './patch';
import { fileTree, statusBadge, treeRows } from './tree';

function file(path: string, additions: number, deletions: number, status: DiffFile['status'] = 'modified'): DiffFile {
  return { path, oldPath: null, status, binary: false, modeChange: null, additions, deletions, hunks: [] };
}

const names = (rows: ReturnType<typeof treeRows>) => rows.map((r) => `${'  '.repeat(r.depth)}${r.node.name} +${r.node.additions} -${r.node.deletions} (${r.node.files})`);

describe('fileTree', () => {
  it('rolls each folder up from its files, folders first', () => {
    const tree = fileTree([
      file('src/app/main.rs', 10, 2),
      file('src/app/cli.rs', 1, 1, 'added'),
      file('src/lib.rs', 3, 0),
      file('README.md', 0, 4, 'deleted'),
      file('src/util/text.rs', 5, 5),
    ]);
    expect(tree.additions).toBe(19);
    expect(tree.deletions).toBe(12);
    expect(tree.files).toBe(5);
    expect(names(treeRows(tree))).toEqual([
      'src +19 -8 (4)',
      '  app +11 -3 (2)',
      '    cli.rs +1 -1 (1)',
      '    main.rs +10 -2 (1)',
      '  util +5 -5 (1)',
      '    text.rs +5 -5 (1)',
      '  lib.rs +3 -0 (1)',
      'README.md +0 -4 (1)',
    ]);
  });

  it('joins a chain of single-child folders into one row', () => {
    const rows = treeRows(fileTree([file('a/b/c/deep.txt', 1, 0), file('a/b/c/other.txt', 2, 0)]));
    expect(names(rows)).toEqual(['a/b/c +3 -0 (2)', '  deep.txt +1 -0 (1)', '  other.txt +2 -0 (1)']);
    expect(rows[0]?.node.path).toBe('a/b/c');
  });

  it('hides the files of a collapsed folder but keeps its counts', () => {
    const tree = fileTree([file('src/a.rs', 1, 0), file('src/b.rs', 1, 0), file('top.rs', 1, 1)]);
    expect(names(treeRows(tree, new Set(['src'])))).toEqual(['src +2 -0 (2)', 'top.rs +1 -1 (1)']);
  });

  it('points each file row at its file in the patch, with its badge', () => {
    const files = parsePatch(GIT_PATCH).files;
    const rows = treeRows(fileTree(files)).filter((r) => r.node.file !== null);
    expect(rows.map((r) => `${statusBadge(r.node.status ?? 'modified')} ${files[r.node.file ?? -1]?.path}`)).toEqual([
      'R docs/é x.md',
      'A logo.png',
      'M main.rs',
      'D old.txt',
      'M run.sh',
      'A tail.txt',
    ]);
  });
});
