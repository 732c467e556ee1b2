import { useEffect, useLayoutEffect, useMemo, useRef, useState, type Ref } from 'react';

import { appError, type Event, type Host, type LogMatch, type Stream } from '../api';
import { downloadText } from './download';
import './logs.css';

/**
 * Live output of stage `node`@`visit` on `stream` after `afterSeq` (what the
 * stored log read at that seq does not hold yet).
 */
export function liveOutput(events: readonly Event[], node: string, visit: number, stream: Stream, afterSeq: number): string {
  let out = '';
  for (const e of events) {
    if (
      e.event === 'command.output' &&
      e.seq > afterSeq &&
      e.node_id === node &&
      (e.visit ?? 1) === visit &&
      e.properties.stream === stream
    ) {
      out += e.properties.text;
    }
  }
  return out;
}

/**
 * The selected stage's stdout/stderr: the stored log plus live output while
 * following, a search over every stored log of the run, and Download.
 */
export function LogsPanel({
  host,
  runId,
  stage,
  stored,
  storedSeq,
  events,
  onSelectMatch,
  searchRef,
}: {
  host: Host;
  runId: string;
  stage: { node: string; visit: number } | null;
  stored: { stdout: string | null; stderr: string | null } | null;
  storedSeq: number;
  events: readonly Event[];
  onSelectMatch: (match: LogMatch) => void;
  /** The search box, for the run screen's `/` shortcut. */
  searchRef?: Ref<HTMLInputElement>;
}) {
  const [stream, setStream] = useState<Stream>('stdout');
  const [follow, setFollow] = useState(true);
  // While not following, the view holds still at the seq it showed last.
  const [frozenSeq, setFrozenSeq] = useState<number | null>(null);
  const [query, setQuery] = useState('');
  const [search, setSearch] = useState<
    { kind: 'idle' } | { kind: 'busy' } | { kind: 'done'; matches: LogMatch[]; query: string } | { kind: 'failed'; message: string }
  >({ kind: 'idle' });
  const pre = useRef<HTMLPreElement>(null);

  const lastSeq = events.at(-1)?.seq ?? 0;
  const upTo = follow ? lastSeq : (frozenSeq ?? lastSeq);
  const text = useMemo(() => {
    if (!stage) return '';
    const base = (stream === 'stdout' ? stored?.stdout : stored?.stderr) ?? '';
    const live = liveOutput(
      events.filter((e) => e.seq <= upTo),
      stage.node,
      stage.visit,
      stream,
      storedSeq,
    );
    return base + live;
  }, [stage, stream, stored, storedSeq, events, upTo]);

  useEffect(() => {
    if (!follow) setFrozenSeq(lastSeq);
    // Only when following is switched off: freeze at that moment.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [follow]);

  useLayoutEffect(() => {
    if (follow && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [text, follow]);

  const runSearch = async () => {
    const q = query.trim();
    if (!q) return;
    setSearch({ kind: 'busy' });
    try {
      setSearch({ kind: 'done', matches: await host.searchLogs(runId, q), query: q });
    } catch (e) {
      setSearch({ kind: 'failed', message: appError(e).message });
    }
  };

  const name = stage ? `${stage.node}${stage.visit > 1 ? `@${stage.visit}` : ''}` : '';
  return (
    <section className="logs" aria-label="Logs" data-testid="logs">
      <div className="logs__bar">
        <div role="tablist" aria-label="Stream">
          {(['stdout', 'stderr'] as const).map((s) => (
            <button key={s} type="button" role="tab" aria-selected={stream === s} onClick={() => setStream(s)}>
              {s}
            </button>
          ))}
        </div>
        <label className="logs__follow">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
        </label>
        <button
          type="button"
          disabled={!stage || !text}
          onClick={() => downloadText(`${runId}-${name}-${stream}.log`, text)}
        >
          Download
        </button>
        <form
          className="logs__search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            void runSearch();
          }}
        >
          <input
            ref={searchRef}
            type="search"
            aria-label="Search every log of the run"
            placeholder="Search all logs…"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
          />
          <button type="submit" disabled={!query.trim()}>
            Search
          </button>
        </form>
      </div>
      {search.kind === 'busy' && <p className="muted">Searching…</p>}
      {search.kind === 'failed' && <p className="error">Search failed: {search.message}</p>}
      {search.kind === 'done' && (
        <div className="logs__matches" data-testid="log-matches">
          <p className="muted">
            {search.matches.length === 0
              ? `No line of any stored log matches “${search.query}”.`
              : `${search.matches.length}${search.matches.length >= 1000 ? '+' : ''} matching lines for “${search.query}”`}
          </p>
          <ul>
            {search.matches.map((m, i) => (
              <li key={i}>
                <button
                  type="button"
                  className="link"
                  onClick={() => {
                    if (m.stream !== 'response') setStream(m.stream);
                    onSelectMatch(m);
                  }}
                >
                  <span className="run-mono">
                    {m.node_id}
                    {m.visit > 1 ? `@${m.visit}` : ''} {m.stream}:{m.line_number}
                  </span>{' '}
                  {m.line}
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
      {stage ? (
        <pre ref={pre} className="logs__text" data-testid="log-text">
          {text || <span className="muted">(no {stream})</span>}
        </pre>
      ) : (
        <p className="muted">Select a stage to see its output.</p>
      )}
    </section>
  );
}
