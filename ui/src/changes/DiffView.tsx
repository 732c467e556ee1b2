import { useEffect, useMemo, useState } from 'react';

import type { Highlighter } from './highlight';
import type { DiffFile, DiffLine } from './patch';
import { diffRows, type DiffMode, type DiffRow } from './rows';
import { statusBadge } from './tree';
import { useVirtualList } from './useVirtualList';

/** Fixed row height (px): the window's maths depend on it (changes.css too). */
export const DIFF_ROW_HEIGHT = 20;
/** The viewport height before it has been measured. */
const DIFF_VIEW_HEIGHT = 560;

/**
 * highlight.js and its grammars (about 80 kB) load with the first diff
 * shown, not with the app; lines show plain until then.
 */
let highlighter: Promise<Highlighter> | null = null;
function useHighlighter(): Highlighter | null {
  const [loaded, setLoaded] = useState<Highlighter | null>(null);
  useEffect(() => {
    let live = true;
    highlighter ??= import('./highlight').then((m) => m.highlighter);
    highlighter.then(
      (h) => live && setLoaded(h),
      () => {},
    );
    return () => {
      live = false;
    };
  }, []);
  return loaded;
}

/** A line's text, highlighted when its file's language is known. */
function Code({ line, path, hl }: { line: DiffLine; path: string; hl: Highlighter | null }) {
  const html = hl ? hl.line(line.text, hl.languageOf(path)) : null;
  return (
    <span className="diff__code">
      {html === null ? line.text : <span dangerouslySetInnerHTML={{ __html: html }} />}
      {line.long && <span className="muted"> … (line cut)</span>}
    </span>
  );
}

const SIGN = { context: ' ', add: '+', del: '-', note: '\\' } as const;

function FileHeader({ file }: { file: DiffFile }) {
  return (
    <>
      <span className={`changes__badge changes__badge--${file.status}`} title={file.status}>
        {statusBadge(file.status)}
      </span>
      <span className="run-mono diff__path">
        {file.oldPath && file.oldPath !== file.path ? `${file.oldPath} → ` : ''}
        {file.path}
      </span>
      {file.binary ? <span className="muted">binary</span> : <Counts additions={file.additions} deletions={file.deletions} />}
      {file.modeChange && <span className="muted">mode {file.modeChange}</span>}
    </>
  );
}

/** `+12 −3`, coloured. */
export function Counts({ additions, deletions }: { additions: number; deletions: number }) {
  return (
    <span className="changes__counts run-mono">
      <span className="changes__add">+{additions}</span> <span className="changes__del">−{deletions}</span>
    </span>
  );
}

function Row({ row, files, hl }: { row: DiffRow; files: readonly DiffFile[]; hl: Highlighter | null }) {
  const file = files[row.file];
  if (!file) return null;
  switch (row.kind) {
    case 'file':
      return <FileHeader file={file} />;
    case 'hunk':
      return <span className="diff__hunk run-mono">{row.header}</span>;
    case 'binary':
      return <span className="muted">Binary file {file.path}: not shown.</span>;
    case 'bare':
      return <span className="muted">{file.status === 'renamed' ? 'Renamed without changes.' : file.modeChange ? 'Only its mode changed.' : 'No content changes.'}</span>;
    case 'line':
      return (
        <>
          <span className="diff__no">{row.line.oldNo ?? ''}</span>
          <span className="diff__no">{row.line.newNo ?? ''}</span>
          <span className="diff__sign">{SIGN[row.line.kind]}</span>
          {row.line.kind === 'note' ? <span className="muted">{row.line.text}</span> : <Code line={row.line} path={file.path} hl={hl} />}
        </>
      );
    case 'pair':
      return (
        <>
          <span className={`diff__side diff__side--${row.left?.kind ?? 'none'}`}>
            <span className="diff__no">{row.left?.oldNo ?? ''}</span>
            {row.left && <Code line={row.left} path={file.path} hl={hl} />}
          </span>
          <span className={`diff__side diff__side--${row.right?.kind ?? 'none'}`}>
            <span className="diff__no">{row.right?.newNo ?? ''}</span>
            {row.right && <Code line={row.right} path={file.path} hl={hl} />}
          </span>
        </>
      );
  }
}

function rowClass(row: DiffRow): string {
  if (row.kind === 'line') return `diff__row diff__row--${row.line.kind}`;
  return `diff__row diff__row--${row.kind}`;
}

/**
 * Every file's diff in one windowed list (a stage may change 50,000
 * lines; only the rows in view are in the DOM): unified, or split with the
 * old side beside the new. `focus` scrolls to a file's header when it
 * changes (`nonce` repeats a pick of the same file).
 */
export function DiffView({
  files,
  mode,
  focus,
}: {
  files: readonly DiffFile[];
  mode: DiffMode;
  focus: { file: number; nonce: number } | null;
}) {
  const { rows, fileStarts } = useMemo(() => diffRows(files, mode), [files, mode]);
  const list = useVirtualList(DIFF_ROW_HEIGHT, rows.length, DIFF_VIEW_HEIGHT);
  const hl = useHighlighter();
  const { start, end } = list.window;
  const { scrollTo } = list;
  useEffect(() => {
    if (focus) scrollTo(fileStarts[focus.file] ?? 0);
    // Only a new pick scrolls; a re-render keeps the reader's place.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [focus, fileStarts]);
  return (
    <div
      ref={list.viewport}
      className={`diff diff--${mode}`}
      data-testid="diff-view"
      data-mode={mode}
      onScroll={list.onScroll}
    >
      <div className="diff__spacer" style={{ height: rows.length * DIFF_ROW_HEIGHT }}>
        {rows.slice(start, end).map((row, i) => (
          <div key={start + i} className={rowClass(row)} style={{ top: (start + i) * DIFF_ROW_HEIGHT }} data-row={row.kind}>
            <Row row={row} files={files} hl={hl} />
          </div>
        ))}
      </div>
    </div>
  );
}
