import type { DiffFile, DiffLine } from './patch';

/** How the viewer lays a diff out. */
export type DiffMode = 'unified' | 'split';

/** One fixed-height row of the diff viewer. */
export type DiffRow =
  | { kind: 'file'; file: number }
  | { kind: 'hunk'; file: number; header: string }
  /** A binary file is named, never shown. */
  | { kind: 'binary'; file: number }
  /** A rename or mode change without content changes. */
  | { kind: 'bare'; file: number }
  /** Unified: one line of either side. */
  | { kind: 'line'; file: number; line: DiffLine }
  /** Split: the old side's line beside the new side's. */
  | { kind: 'pair'; file: number; left: DiffLine | null; right: DiffLine | null };

export interface DiffRows {
  rows: DiffRow[];
  /** The index of each file's header row, by file index. */
  fileStarts: number[];
}

/**
 * The rows of every file in order: a header per file, a row per hunk
 * header, then the hunk's lines; in split mode a run of removed lines is
 * set beside the run of added lines that follows it, pair by pair.
 */
export function diffRows(files: readonly DiffFile[], mode: DiffMode): DiffRows {
  const rows: DiffRow[] = [];
  const fileStarts: number[] = [];
  files.forEach((f, file) => {
    fileStarts.push(rows.length);
    rows.push({ kind: 'file', file });
    if (f.binary) {
      rows.push({ kind: 'binary', file });
      return;
    }
    if (f.hunks.length === 0) {
      rows.push({ kind: 'bare', file });
      return;
    }
    for (const hunk of f.hunks) {
      rows.push({ kind: 'hunk', file, header: hunk.header });
      if (mode === 'unified') {
        for (const line of hunk.lines) rows.push({ kind: 'line', file, line });
        continue;
      }
      const dels: DiffLine[] = [];
      const adds: DiffLine[] = [];
      const flush = () => {
        for (let i = 0; i < Math.max(dels.length, adds.length); i += 1) {
          rows.push({ kind: 'pair', file, left: dels[i] ?? null, right: adds[i] ?? null });
        }
        dels.length = 0;
        adds.length = 0;
      };
      for (const line of hunk.lines) {
        if (line.kind === 'del') {
          // A removal after additions starts a new change block.
          if (adds.length > 0) flush();
          dels.push(line);
        } else if (line.kind === 'add') {
          adds.push(line);
        } else {
          flush();
          if (line.kind === 'context') rows.push({ kind: 'pair', file, left: line, right: line });
          else rows.push({ kind: 'line', file, line });
        }
      }
      flush();
    }
  });
  return { rows, fileStarts };
}
