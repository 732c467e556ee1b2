import { useEffect, useMemo, useState } from 'react';

import { appError, type ArtifactContent, type ArtifactRecord, type Host } from '../api';
import { formatSize } from './ArtifactList';
import { renderMarkdown } from './markdown';
import './artifacts.css';

/** How a content is shown: the switch on its media type. */
export type PreviewKind = 'markdown' | 'json' | 'text' | 'image' | 'html' | 'none';

export function previewKind(content: ArtifactContent): PreviewKind {
  const { media } = content;
  if (media.startsWith('image/') && content.base64 != null) return 'image';
  if (content.text == null) return 'none';
  if (media === 'text/markdown') return 'markdown';
  if (media === 'application/json') return 'json';
  if (media === 'text/html') return 'html';
  if (media.startsWith('text/') || media === 'image/svg+xml') return 'text';
  return 'none';
}

/** JSON pretty-printed; the text as is when it does not parse (e.g. cut). */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** One artifact's content, by media type. */
export function ArtifactBody({ content }: { content: ArtifactContent }) {
  const kind = previewKind(content);
  const html = useMemo(() => (kind === 'markdown' ? renderMarkdown(content.text ?? '') : ''), [kind, content.text]);
  switch (kind) {
    case 'markdown':
      // Safe: renderMarkdown escapes every piece of the source.
      return <div className="artifact-preview__markdown" data-testid="artifact-markdown" dangerouslySetInnerHTML={{ __html: html }} />;
    case 'json':
      return <pre className="artifact-preview__text" data-testid="artifact-json">{prettyJson(content.text ?? '')}</pre>;
    case 'text':
      return <pre className="artifact-preview__text" data-testid="artifact-text">{content.text}</pre>;
    case 'image':
      return <img className="artifact-preview__image" data-testid="artifact-image" alt={content.path} src={`data:${content.media};base64,${content.base64}`} />;
    case 'html':
      // An empty sandbox: no scripts, no same origin, no navigation.
      return <iframe className="artifact-preview__html" data-testid="artifact-html" title={content.path} sandbox="" srcDoc={content.text ?? ''} />;
    default:
      return <p className="muted" data-testid="artifact-none">No preview; size {formatSize(content.size)}.</p>;
  }
}

type State = { kind: 'idle' } | { kind: 'loading'; path: string } | { kind: 'ready'; content: ArtifactContent } | { kind: 'error'; path: string; message: string };

/** The run's artifacts as buttons; clicking one previews its latest version. */
export function ArtifactPreview({ host, runId, artifacts }: { host: Host; runId: string; artifacts: readonly ArtifactRecord[] }) {
  const paths = useMemo(() => [...new Set(artifacts.map((a) => a.path))], [artifacts]);
  const [selected, setSelected] = useState<string | null>(null);
  const [state, setState] = useState<State>({ kind: 'idle' });
  useEffect(() => {
    if (selected == null) return;
    let live = true;
    setState({ kind: 'loading', path: selected });
    host.artifactContent(runId, selected).then(
      (content) => live && setState({ kind: 'ready', content }),
      (e: unknown) => live && setState({ kind: 'error', path: selected, message: appError(e).message }),
    );
    return () => {
      live = false;
    };
  }, [host, runId, selected]);
  if (paths.length === 0) return null;
  return (
    <div className="artifact-preview" data-testid="artifact-preview">
      <div className="artifact-preview__paths">
        {paths.map((p) => (
          <button key={p} type="button" className="link run-mono" aria-pressed={p === selected} onClick={() => setSelected(p)}>
            {p}
          </button>
        ))}
      </div>
      {selected != null && <RevealButton host={host} runId={runId} path={selected} />}
      {state.kind === 'loading' && <p className="muted">Loading {state.path}…</p>}
      {state.kind === 'error' && <p role="alert">Cannot preview {state.path}: {state.message}</p>}
      {state.kind === 'ready' && (
        <div>
          {state.content.truncated && <p className="muted">Showing part of {state.content.path} ({formatSize(state.content.size)}).</p>}
          <ArtifactBody content={state.content} />
        </div>
      )}
    </div>
  );
}

type Reveal = { kind: 'idle' } | { kind: 'busy' } | { kind: 'done'; file: string } | { kind: 'error'; message: string };

/**
 * "Reveal in folder": the backend copies the captured version out of the
 * blob store into the run directory and shows it in the file manager; the
 * path is shown too, since a file manager may open behind the window or
 * not at all.
 */
function RevealButton({ host, runId, path }: { host: Host; runId: string; path: string }) {
  const [reveal, setReveal] = useState<Reveal>({ kind: 'idle' });
  useEffect(() => setReveal({ kind: 'idle' }), [runId, path]);
  const onClick = () => {
    setReveal({ kind: 'busy' });
    host.revealArtifact(runId, path).then(
      (file) => setReveal({ kind: 'done', file }),
      (e: unknown) => setReveal({ kind: 'error', message: appError(e).message }),
    );
  };
  return (
    <div className="artifact-preview__reveal">
      <button type="button" data-testid="artifact-reveal" disabled={reveal.kind === 'busy'} onClick={onClick}>
        Reveal in folder
      </button>
      {reveal.kind === 'done' && (
        <span className="muted" data-testid="artifact-revealed">
          {' '}
          Shown in the file manager: <span className="run-mono">{reveal.file}</span>
        </span>
      )}
      {reveal.kind === 'error' && (
        <span role="alert" data-testid="artifact-reveal-error">
          {' '}
          {reveal.message}
        </span>
      )}
    </div>
  );
}
