import { useCallback, useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent } from 'react';

import type { Host, RunStatus, RunSummary } from '../api/host';
import { navigate } from '../app/route';
import { StatusChip } from '../components/StatusChip';
import { formatCost, formatDateTime, formatDuration, formatTokens, relativeTime, runDurationMs } from '../format';
import { PAGE_SIZE, useRunPages } from './useRunPages';
import { pagesFor, scrollToShow, virtualWindow } from '../components/virtualWindow';
import './runs.css';

/** Fixed row height (px): the virtual window's maths depend on it. */
export const ROW_HEIGHT = 44;
/** Rows rendered beyond each edge of the viewport. */
const OVERSCAN = 8;
/** The search box waits this long after the last keystroke. */
const SEARCH_DEBOUNCE_MS = 200;

const STATUSES: RunStatus[] = ['running', 'blocked', 'queued', 'succeeded', 'failed', 'cancelled', 'interrupted'];

function useDebounced<T>(value: T, ms: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return debounced;
}

/** The current time, refreshed every half minute for relative times. */
function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

/**
 * How many runs wait on a person: the daemon's pending questions, or null
 * when it cannot say (not running) and the list's own counts must do.
 */
function useWaitingRuns(host: Host, refresh: number, ready: boolean): number | null {
  const [waiting, setWaiting] = useState<number | null>(null);
  useEffect(() => {
    if (!ready) return;
    let live = true;
    host.questionList().then(
      (questions) => live && setWaiting(new Set(questions.map((q) => q.run_id)).size),
      () => live && setWaiting(null),
    );
    return () => {
      live = false;
    };
  }, [host, refresh, ready]);
  return waiting;
}

/** Events after which the list is read again: a run appeared, moved or ended. */
const LIST_CHANGES = new Set([
  'run.started',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.interrupted',
  'interview.started',
  'interview.completed',
]);
/** Bursts of such events cause one re-read after this long. */
const LIVE_REFRESH_MS = 400;

/**
 * A counter that goes up (debounced) when weftd reports a change to the
 * list, so the screen re-reads it; stays put when the daemon is not
 * running (history is static then).
 */
function useListChanges(host: Host): number {
  const [changes, setChanges] = useState(0);
  useEffect(() => {
    let live = true;
    let stop: (() => void) | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    host
      .subscribe(null, 0, (event) => {
        if (!LIST_CHANGES.has(event.event)) return;
        clearTimeout(timer);
        timer = setTimeout(() => live && setChanges((n) => n + 1), LIVE_REFRESH_MS);
      })
      .then(
        (unsubscribe) => (live ? (stop = unsubscribe) : unsubscribe()),
        () => {},
      );
    return () => {
      live = false;
      clearTimeout(timer);
      stop?.();
    };
  }, [host]);
  return changes;
}

/**
 * Every workflow name of the store's runs (the workflow filter's choices),
 * read again when the list changes; empty when it cannot be read, and the
 * filter offers the workflows of the pages read.
 */
function useWorkflowNames(host: Host, generation: number, ready: boolean): string[] {
  const [names, setNames] = useState<string[]>([]);
  useEffect(() => {
    if (!ready) return;
    let live = true;
    host.workflowNames().then(
      (read) => live && setNames(read),
      () => live && setNames([]),
    );
    return () => {
      live = false;
    };
  }, [host, generation, ready]);
  return names;
}

/** The runs list: every run, newest first, filtered, searched and virtualised. */
export function RunsScreen({ host }: { host: Host }) {
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [workflow, setWorkflow] = useState('');
  const [search, setSearch] = useState('');
  const [showArchived, setShowArchived] = useState(false);
  const text = useDebounced(search.trim(), SEARCH_DEBOUNCE_MS);
  const changes = useListChanges(host);
  const list = useRunPages(host, {
    status: status || null,
    workflow: workflow || null,
    text: text || null,
    showArchived,
    generation: changes,
  });
  const now = useNow();
  // The filter's workflow names (a read over every run) and the count of
  // waiting runs are asked for once the first page is in: at start they
  // would share the history threads and a cold database with the page the
  // first screen waits for (docs/performance.md). Latched: a later filter
  // starting over must not ask for them again.
  const firstPageSeen = useRef(false);
  if (list.total !== null || list.error !== null) firstPageSeen.current = true;
  const firstPageIn = firstPageSeen.current;
  const liveWaiting = useWaitingRuns(host, changes, firstPageIn);
  const stored = useWorkflowNames(host, changes, firstPageIn);

  // For tests/app/perf.py: when the screen was first in the DOM (its first
  // render done), on the page's clock.
  useLayoutEffect(() => {
    performance.mark('weft-runs-screen');
  }, []);

  const viewport = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewportHeight, setViewportHeight] = useState(600);
  const [selected, setSelected] = useState(0);

  useLayoutEffect(() => {
    const el = viewport.current;
    if (!el) return;
    const measure = () => setViewportHeight(el.clientHeight || 600);
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [list.total === null]);

  // New filters: back to the top.
  useEffect(() => {
    setSelected(0);
    setScrollTop(0);
    if (viewport.current) viewport.current.scrollTop = 0;
  }, [status, workflow, text]);

  const total = list.total ?? 0;
  const visible = virtualWindow(scrollTop, viewportHeight, ROW_HEIGHT, total, OVERSCAN);
  const { load } = list;
  useEffect(() => {
    for (const page of pagesFor(visible, PAGE_SIZE)) load(page);
  }, [visible.start, visible.end, load]);

  const open = useCallback((run: RunSummary | undefined) => {
    if (run) navigate({ screen: 'run', run: run.id });
  }, []);

  const select = (index: number) => {
    const next = Math.max(0, Math.min(total - 1, index));
    setSelected(next);
    const el = viewport.current;
    if (el) {
      const top = scrollToShow(next, el.scrollTop, el.clientHeight || viewportHeight, ROW_HEIGHT);
      if (top !== el.scrollTop) {
        el.scrollTop = top;
        setScrollTop(top);
      }
    }
  };

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const page = Math.max(1, Math.floor(viewportHeight / ROW_HEIGHT) - 1);
    const moves: Record<string, number> = {
      ArrowDown: selected + 1,
      ArrowUp: selected - 1,
      PageDown: selected + page,
      PageUp: selected - page,
      Home: 0,
      End: total - 1,
    };
    const target = moves[e.key];
    if (target !== undefined) {
      e.preventDefault();
      select(target);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      open(list.rowAt(selected));
    }
  };

  const filtered = Boolean(status || workflow || text);
  const waiting = liveWaiting ?? (filtered ? 0 : Object.keys(list.open).length);
  // Every workflow of the store, with those of the pages read (a run that
  // arrived since) and the chosen one, each once.
  const workflows = [...new Set([...stored, ...list.workflows, ...(workflow ? [workflow] : [])])].sort((a, b) =>
    a.localeCompare(b),
  );
  const columns = list.anyCost ? 'runs--with-cost' : '';

  const rows = [];
  for (let i = visible.start; i < visible.end; i += 1) {
    const run = list.rowAt(i);
    rows.push(
      run ? (
        <RunRow
          key={run.id}
          index={i}
          run={run}
          now={now}
          selected={i === selected}
          questions={list.open[run.id] ?? 0}
          showCost={list.anyCost}
          onOpen={() => {
            setSelected(i);
            open(run);
          }}
        />
      ) : (
        <div key={`loading-${i}`} className="runs__row runs__row--loading" style={{ top: i * ROW_HEIGHT }} aria-hidden="true">
          <span className="muted">Loading…</span>
        </div>
      ),
    );
  }

  return (
    <section className={`runs ${columns}`} aria-label="Runs">
      {waiting > 0 && (
        <a className="runs__banner" href="#/gates" data-testid="gates-banner">
          <strong>
            {waiting} {waiting === 1 ? 'run' : 'runs'} waiting on you
          </strong>
          <span> — answer in Gates →</span>
        </a>
      )}
      <div className="runs__toolbar">
        <input
          type="search"
          className="runs__search"
          placeholder="Search goal, workflow or run id"
          aria-label="Search runs"
          data-testid="runs-search"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
        />
        <select
          aria-label="Status"
          data-testid="runs-status"
          value={status}
          onChange={(e) => setStatus(e.target.value as RunStatus | '')}
        >
          <option value="">All statuses</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <select aria-label="Workflow" data-testid="runs-workflow" value={workflow} onChange={(e) => setWorkflow(e.target.value)}>
          <option value="">All workflows</option>
          {workflows.map((w) => (
            <option key={w} value={w}>
              {w}
            </option>
          ))}
        </select>
        <label className="runs__archived">
          <input
            type="checkbox"
            data-testid="runs-show-archived"
            checked={showArchived}
            onChange={(e) => setShowArchived(e.target.checked)}
          />{' '}
          Show archived
        </label>
        <span className="muted runs__total" data-testid="runs-total" aria-live="polite">
          {list.total === null ? '' : `${total.toLocaleString('en-US')} ${total === 1 ? 'run' : 'runs'}`}
        </span>
      </div>

      {list.error ? (
        <div className="runs__state" role="alert" data-testid="runs-error">
          <p className="error">Could not read the run history: {list.error.message}</p>
          <button type="button" onClick={list.retry}>
            Try again
          </button>
        </div>
      ) : list.total === null ? (
        <p className="muted runs__state">Loading runs…</p>
      ) : total === 0 ? (
        <div className="runs__state" data-testid="runs-empty">
          {filtered ? (
            <>
              <p className="muted">No runs match these filters.</p>
              <button
                type="button"
                onClick={() => {
                  setStatus('');
                  setWorkflow('');
                  setSearch('');
                }}
              >
                Clear filters
              </button>
            </>
          ) : (
            <p className="muted">
              No runs yet. Start one from <a href="#/launch">Launch</a> or with <code>weft run</code>.
            </p>
          )}
        </div>
      ) : (
        <>
          <div className="runs__head runs__cols" aria-hidden="true">
            <span>Status</span>
            <span>Workflow</span>
            <span>Goal</span>
            <span>Labels</span>
            <span>Started</span>
            <span>Duration</span>
            {list.anyCost && <span>LLM</span>}
            <span>Gates</span>
          </div>
          <div
            ref={viewport}
            className="runs__viewport"
            role="listbox"
            aria-label="Runs, newest first"
            aria-activedescendant={list.rowAt(selected) ? `run-row-${selected}` : undefined}
            tabIndex={0}
            data-testid="runs-list"
            onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
            onKeyDown={onKeyDown}
          >
            <div className="runs__spacer" style={{ height: total * ROW_HEIGHT }}>
              {rows}
            </div>
          </div>
        </>
      )}
    </section>
  );
}

interface RunRowProps {
  index: number;
  run: RunSummary;
  now: number;
  selected: boolean;
  questions: number;
  showCost: boolean;
  onOpen: () => void;
}

function RunRow({ index, run, now, selected, questions, showCost, onOpen }: RunRowProps) {
  const started = run.started_at ?? run.created_at;
  const duration = runDurationMs(run, now);
  return (
    <div
      id={`run-row-${index}`}
      className="runs__row runs__cols"
      role="option"
      aria-selected={selected}
      data-testid="run-row"
      data-run-id={run.id}
      data-index={index}
      style={{ top: index * ROW_HEIGHT }}
      onClick={onOpen}
    >
      <span>
        <StatusChip status={run.status} />
      </span>
      <span className="runs__workflow" title={run.workflow_path ?? run.workflow_name}>
        {run.workflow_name}
      </span>
      <span className="runs__goal">
        <span className="runs__goal-text" title={run.goal ?? undefined}>
          {run.goal ?? <span className="muted">no goal</span>}
        </span>
        <span className="runs__sub" title={run.failure_reason ?? undefined}>
          <span className="runs__id">{run.id}</span>
          {run.sandbox && (
            <span className="runs__sandbox" data-testid="run-sandbox" title="Its commands ran in a container of this image">
              {' '}
              · {run.sandbox}
            </span>
          )}
          {run.failure_reason && <span className="runs__reason"> · {run.failure_reason}</span>}
        </span>
      </span>
      <span className="runs__labels">
        {run.labels.map((l) => (
          <span key={l} className="runs__label">
            {l}
          </span>
        ))}
      </span>
      <span className="runs__time" data-testid="run-started" title={formatDateTime(started)}>
        <time dateTime={started}>{relativeTime(started, now)}</time>
      </span>
      <span className="runs__num">{duration == null ? '—' : formatDuration(duration)}</span>
      {showCost && (
        <span
          className="runs__num"
          title={run.llm ? `${run.llm.calls} calls, ${formatTokens(run.llm.input_tokens)} in / ${formatTokens(run.llm.output_tokens)} out` : undefined}
        >
          {run.llm && run.llm.calls > 0 ? formatCost(run.llm) : ''}
        </span>
      )}
      <span>
        {questions > 0 && (
          <span
            className="runs__gates"
            data-testid="gates-badge"
            title={`${questions} ${questions === 1 ? 'question' : 'questions'} waiting for an answer`}
          >
            ‖ {questions} waiting
          </span>
        )}
      </span>
    </div>
  );
}
