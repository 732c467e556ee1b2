import { useCallback, useEffect, useRef, useState } from 'react';

import { appError, type AppError, type Host, type RunList, type RunsPage, type RunSummary } from '../api/host';

/** Runs fetched per `runsPage` call as the list scrolls. */
export const PAGE_SIZE = 200;

export type RunFilters = Pick<RunList, 'status' | 'workflow' | 'text'> & {
  /** Include archived runs (hidden by default). */
  showArchived?: boolean;
  /** Bumped when the list changed in the daemon: read it again. */
  generation?: number;
};

interface Pages {
  key: string;
  pages: Map<number, RunSummary[]>;
  inflight: Set<number>;
  /** Pending questions per run, over every page loaded. */
  open: Record<string, number>;
  /** Null until the first page answers. */
  total: number | null;
  error: AppError | null;
}

const fresh = (key: string): Pages => ({
  key,
  pages: new Map(),
  inflight: new Set(),
  open: {},
  total: null,
  error: null,
});

/** The cache key of a filter set: equal keys mean equal filters. */
function keyOf(filters: RunFilters): string {
  return JSON.stringify([
    filters.status ?? null,
    filters.workflow ?? null,
    filters.text ?? null,
    filters.showArchived ?? false,
    filters.generation ?? 0,
  ]);
}

/** The `runsPage` query for page `page` of `filters`. */
function queryFor(filters: RunFilters, page: number): RunList {
  const query: RunList = { limit: PAGE_SIZE, offset: page * PAGE_SIZE };
  if (filters.status) query.status = filters.status;
  if (filters.workflow) query.workflow = filters.workflow;
  if (filters.text) query.text = filters.text;
  // Archived runs are hidden unless asked for.
  if (!filters.showArchived) query.archived = false;
  return query;
}

/**
 * The unfiltered first page, got going before the screen mounted: the page
 * the backend handed over at start (`handed`, shown in the screen's very
 * first render) and the request for it (`asked`, its answer replaces it;
 * `answered` once it is in, so a screen mounting after that renders it at
 * once).
 */
interface Early {
  host: Host;
  key: string;
  handed: RunsPage | null;
  asked: Promise<RunsPage>;
  answered: RunsPage | null;
}
let early: Early | null = null;

/**
 * Gets the unfiltered list's first page going before React renders
 * (main.tsx calls it): the page the backend handed over at start when
 * there is one, and a request for it in any case, so the answer is on its
 * way while the runs screen mounts. The screen starts from the answer when
 * it is in by then, else from the handed-over page, and its first `load(0)`
 * takes the request instead of asking again. Resolves when the answer is in
 * or the request failed, so that the first render can wait for it
 * (main.tsx).
 */
export function prefetchFirstPage(host: Host): Promise<void> {
  const asked = host.runsPage(queryFor({}, 0));
  const handed = host.firstRunsPage?.() ?? null;
  // For tests/app/perf.py: whether the start had its rows handed over.
  performance.mark(handed ? 'weft-first-page-handed' : 'weft-first-page-asked');
  const started: Early = { host, key: keyOf({}), handed, asked, answered: null };
  early = started;
  // Also handles a rejection while the screen has not taken the request.
  return asked.then(
    (page) => {
      started.answered = page;
      // For tests/app/perf.py: when the answer reached the page.
      performance.mark('weft-first-page-answered');
    },
    () => {},
  );
}

/** The early page for this list, if any, without taking it. */
function earlyFor(host: Host, key: string): Early | null {
  return early?.host === host && early.key === key ? early : null;
}

/** A fresh cache for `key`, starting from a handed-over first page. */
function startFrom(key: string, handed: RunsPage | null): Pages {
  const c = fresh(key);
  if (handed) {
    c.pages.set(0, handed.runs);
    c.total = handed.total;
    for (const [run, n] of Object.entries(handed.open_questions)) if (n) c.open[run] = n;
  }
  return c;
}

/**
 * The run list for `filters`, fetched a page at a time on demand (`load`):
 * what the virtualised list shows. Changing the filters starts over; answers
 * for older filters are dropped. `daemon.not_running` is not an error here
 * (history comes from the database), it reads as no runs.
 */
export function useRunPages(host: Host, filters: RunFilters) {
  const key = keyOf(filters);
  const cache = useRef<Pages>(fresh(''));
  // Rendering (not an effect) so the very first frame has the rows.
  if (cache.current.key !== key) {
    const started = earlyFor(host, key);
    cache.current = startFrom(key, started?.answered ?? started?.handed ?? null);
  }
  const [, setTick] = useState(0);
  const bump = useCallback(() => setTick((t) => t + 1), []);
  /** Workflow names seen on any page (for the workflow filter). */
  const workflows = useRef(new Set<string>());

  const load = useCallback(
    (page: number) => {
      const c = cache.current;
      const taken = page === 0 ? earlyFor(host, key) : null;
      if (taken) early = null;
      const answered = (res: RunsPage) => {
        if (cache.current !== c) return;
        c.inflight.delete(page);
        c.pages.set(page, res.runs);
        c.total = res.total;
        for (const [run, n] of Object.entries(res.open_questions)) if (n) c.open[run] = n;
        for (const run of res.runs) workflows.current.add(run.workflow_name);
        bump();
      };
      // Started from the answer, or from a handed-over page that its fresh
      // answer replaces (for both, the answer adds its workflow names).
      if (taken?.handed || taken?.answered) {
        taken.asked.then(answered, () => {});
        return;
      }
      if (c.key !== key || c.pages.has(page) || c.inflight.has(page) || c.error) return;
      if (c.total != null && page * PAGE_SIZE >= c.total && page > 0) return;
      c.inflight.add(page);
      (taken?.asked ?? host.runsPage(queryFor(filters, page))).then(
        answered,
        (e: unknown) => {
          if (cache.current !== c) return;
          c.inflight.delete(page);
          const error = appError(e);
          if (error.code === 'daemon.not_running') {
            c.pages.set(page, []);
            c.total ??= 0;
          } else {
            c.error = error;
          }
          bump();
        },
      );
    },
    // `filters` is read through `key`: equal keys mean equal filters.
    [host, key, bump],
  );

  useEffect(() => load(0), [load]);

  const retry = useCallback(() => {
    cache.current = fresh(key);
    bump();
    load(0);
  }, [key, bump, load]);

  const c = cache.current;
  return {
    total: c.total,
    error: c.error,
    open: c.open,
    /** The run at `index`, or undefined while its page loads. */
    rowAt: (index: number): RunSummary | undefined => c.pages.get(Math.floor(index / PAGE_SIZE))?.[index % PAGE_SIZE],
    load,
    retry,
    anyCost: [...c.pages.values()].some((page) => page.some((r) => r.llm && r.llm.calls > 0)),
    workflows: [...workflows.current].sort((a, b) => a.localeCompare(b)),
  };
}
