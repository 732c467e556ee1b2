import { useEffect, useMemo, useState } from 'react';

import { appError, type Changes, type Host, type RunView } from '../api';
import { formatSize } from '../artifacts/ArtifactList';
import { Counts, DiffView } from './DiffView';
import { parsePatch, patchTotals, type DiffFile } from './patch';
import type { DiffMode } from './rows';
import { fileTree, statusBadge, treeRows } from './tree';
import { useVirtualList } from './useVirtualList';
import './changes.css';

/** Whose changes: the whole run's (`final.patch`) or one stage visit's (`diff.patch`). */
export type ChangesSource = { node: string; visit: number } | null;

/** The most stages listed under a run-level note; the "Changes of" list holds them all. */
export const STAGES_LISTED_MAX = 200;

/** Fixed row height (px) of the file tree. */
export const TREE_ROW_HEIGHT = 22;
const TREE_HEIGHT = 560;

type Load = { kind: 'loading' } | { kind: 'ready'; changes: Changes } | { kind: 'failed'; message: string };

/** What to say instead of a diff, by state; null when there is a patch to show. */
export function changesNote(changes: Changes, source: ChangesSource): string | null {
  const what = source ? `${source.node}${source.visit > 1 ? `@${source.visit}` : ''}` : 'the run';
  switch (changes.state) {
    case 'recorded':
      return null;
    case 'empty':
      return source ? `${what} changed no file.` : 'The run changed no file.';
    case 'not_checkpointed':
      return 'This run has no git checkpoints (its work dir was not in a git repository, or checkpoints were off), so no changes were recorded.';
    case 'pending':
      return source
        ? `${what} is still running: its changes are recorded when it completes.`
        : "The run's final patch is written when it ends; meanwhile each stage's changes are below it: pick a stage.";
    case 'missing':
      return source
        ? `No patch was recorded for ${what} (it did not complete, or failed before its checkpoint).`
        : 'No final patch was recorded for this run; pick a stage to see its changes.';
  }
}

/** The changed files as a tree, windowed; each file row picks that file. */
function FileTree({ files, selected, onPick }: { files: readonly DiffFile[]; selected: number | null; onPick: (file: number) => void }) {
  const tree = useMemo(() => fileTree(files), [files]);
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const rows = useMemo(() => treeRows(tree, collapsed), [tree, collapsed]);
  const list = useVirtualList(TREE_ROW_HEIGHT, rows.length, TREE_HEIGHT);
  const { start, end } = list.window;
  const toggle = (path: string) =>
    setCollapsed((c) => {
      const next = new Set(c);
      if (!next.delete(path)) next.add(path);
      return next;
    });
  return (
    <div ref={list.viewport} className="changes__tree" data-testid="changes-tree" role="tree" aria-label="Changed files" onScroll={list.onScroll}>
      <div className="changes__spacer" style={{ height: rows.length * TREE_ROW_HEIGHT }}>
        {rows.slice(start, end).map(({ node, depth }, i) => (
          <button
            key={node.file === null ? `d:${node.path}` : `f:${node.file}`}
            type="button"
            role="treeitem"
            aria-selected={node.file !== null && node.file === selected}
            aria-expanded={node.file === null ? !collapsed.has(node.path) : undefined}
            className={`changes__node${node.file === null ? ' changes__node--dir' : ''}`}
            style={{ top: (start + i) * TREE_ROW_HEIGHT, paddingLeft: 6 + depth * 14 }}
            title={node.path}
            data-path={node.path}
            onClick={() => (node.file === null ? toggle(node.path) : onPick(node.file))}
          >
            {node.file === null ? (
              <span className="changes__twisty">{collapsed.has(node.path) ? '▸' : '▾'}</span>
            ) : (
              <span className={`changes__badge changes__badge--${node.status ?? 'modified'}`}>{statusBadge(node.status ?? 'modified')}</span>
            )}
            <span className="changes__name">{node.name}</span>
            {node.binary ? <span className="muted">bin</span> : <Counts additions={node.additions} deletions={node.deletions} />}
          </button>
        ))}
      </div>
    </div>
  );
}

/** A patch as the tree of its files beside the diff, with the cuts said. */
export function PatchView({
  changes,
  mode: shared,
  onMode,
}: {
  changes: Changes;
  /** The layout, when the caller keeps it (across stages); else the view's own. */
  mode?: DiffMode;
  onMode?: (mode: DiffMode) => void;
}) {
  const parsed = useMemo(() => parsePatch(changes.patch), [changes.patch]);
  const totals = useMemo(() => patchTotals(parsed.files), [parsed]);
  const [own, setOwn] = useState<DiffMode>('unified');
  const mode = shared ?? own;
  const setMode = onMode ?? setOwn;
  const [focus, setFocus] = useState<{ file: number; nonce: number } | null>(null);
  const cuts = [
    changes.incomplete && "The engine kept only the start of this stage's patch (32 MiB); its commit holds the whole change.",
    changes.truncated && `Only the start of the patch is shown: it is ${formatSize(changes.size)}, the view reads at most 4 MiB.`,
    parsed.cut && `The patch is too large to show whole: ${parsed.cut}.`,
  ].filter((c): c is string => typeof c === 'string');
  return (
    <div className="changes__patch">
      <div className="changes__bar">
        <span data-testid="changes-totals">
          {parsed.files.length} {parsed.files.length === 1 ? 'file' : 'files'} changed{' '}
          <Counts additions={totals.additions} deletions={totals.deletions} />
        </span>
        <div role="tablist" aria-label="Diff layout" className="changes__modes">
          {(['unified', 'split'] as const).map((m) => (
            <button key={m} type="button" role="tab" aria-selected={mode === m} onClick={() => setMode(m)}>
              {m === 'unified' ? 'Unified' : 'Split'}
            </button>
          ))}
        </div>
      </div>
      {cuts.map((c) => (
        <p key={c} className="changes__cut" role="note">
          {c}
        </p>
      ))}
      {parsed.files.length === 0 ? (
        <p className="muted">The patch holds no file changes this view can read.</p>
      ) : (
        <div className="changes__body">
          <FileTree files={parsed.files} selected={focus?.file ?? null} onPick={(file) => setFocus((f) => ({ file, nonce: (f?.nonce ?? 0) + 1 }))} />
          <DiffView files={parsed.files} mode={mode} focus={focus} />
        </div>
      )}
    </div>
  );
}

/** Reads a run's or stage's changes; reads again when `refresh` changes (a stage or the run ended). */
function useChanges(host: Host, runId: string, source: ChangesSource, refresh: string): Load {
  const [load, setLoad] = useState<Load>({ kind: 'loading' });
  const node = source?.node ?? null;
  const visit = source?.visit ?? 0;
  useEffect(() => {
    let live = true;
    setLoad({ kind: 'loading' });
    const read = node === null ? host.runChanges(runId) : host.stageChanges(runId, node, visit);
    read.then(
      (changes) => live && setLoad({ kind: 'ready', changes }),
      (e: unknown) => live && setLoad({ kind: 'failed', message: appError(e).message }),
    );
    return () => {
      live = false;
    };
  }, [host, runId, node, visit, refresh]);
  return load;
}

/**
 * The run screen's Files Changed panel: the whole run's changes
 * (`final.patch`) or one stage's (`diff.patch`), picked here or from the
 * stage panel, read from the run directory (works with weftd stopped).
 */
export function FilesChanged({
  host,
  view,
  source,
  onSource,
}: {
  host: Host;
  view: RunView;
  source: ChangesSource;
  onSource: (source: ChangesSource) => void;
}) {
  if (!view.git) {
    return (
      <p className="muted" data-testid="changes-note">
        This run has no git checkpoints (its work dir was not in a git repository, or checkpoints were off), so no changes were recorded.
      </p>
    );
  }
  return <CheckpointedChanges host={host} view={view} source={source} onSource={onSource} />;
}

function CheckpointedChanges({
  host,
  view,
  source,
  onSource,
}: {
  host: Host;
  view: RunView;
  source: ChangesSource;
  onSource: (source: ChangesSource) => void;
}) {
  const stage = source ? view.stages.find((s) => s.node_id === source.node && s.visit === source.visit) : undefined;
  // Read again when what could have written the patch ends.
  const refresh = source ? (stage?.status ?? '') : view.run.status;
  const load = useChanges(host, view.run.id, source, refresh);
  // Unified or split stays as chosen while other stages are picked.
  const [mode, setMode] = useState<DiffMode>('unified');
  const key = (s: ChangesSource) => (s ? `${s.node}@${s.visit}` : '');
  return (
    <div className="changes" data-testid="files-changed" data-source={key(source) || 'run'}>
      <label className="changes__source">
        Changes of{' '}
        <select
          value={key(source)}
          onChange={(e) => {
            const stage = view.stages.find((s) => `${s.node_id}@${s.visit}` === e.target.value);
            onSource(stage ? { node: stage.node_id, visit: stage.visit } : null);
          }}
        >
          <option value="">the whole run</option>
          {view.stages.map((s) => (
            <option key={`${s.node_id}@${s.visit}`} value={`${s.node_id}@${s.visit}`}>
              stage {s.node_id}
              {s.visit > 1 ? `@${s.visit}` : ''}
            </option>
          ))}
        </select>
      </label>
      {load.kind === 'loading' && <p className="muted">Reading the changes…</p>}
      {load.kind === 'failed' && <p className="error">Could not read the changes: {load.message}</p>}
      {load.kind === 'ready' &&
        (changesNote(load.changes, source) ? (
          <>
            <p className="muted" data-testid="changes-note">
              {changesNote(load.changes, source)}
            </p>
            {!source && (load.changes.state === 'pending' || load.changes.state === 'missing') && (
              <ul className="changes__stages" data-testid="changes-stages">
                {view.stages.slice(0, STAGES_LISTED_MAX).map((s) => (
                  <li key={`${s.node_id}@${s.visit}`}>
                    <button type="button" className="link run-mono" onClick={() => onSource({ node: s.node_id, visit: s.visit })}>
                      {s.node_id}
                      {s.visit > 1 ? `@${s.visit}` : ''}
                    </button>{' '}
                    <span className="muted">{s.status.replace('_', ' ')}</span>
                  </li>
                ))}
                {view.stages.length > STAGES_LISTED_MAX && (
                  <li className="muted">and {view.stages.length - STAGES_LISTED_MAX} more in the “Changes of” list</li>
                )}
              </ul>
            )}
          </>
        ) : (
          <PatchView key={key(source)} changes={load.changes} mode={mode} onMode={setMode} />
        ))}
    </div>
  );
}
