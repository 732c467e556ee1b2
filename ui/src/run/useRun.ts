import { useCallback, useEffect, useRef, useState } from 'react';

import { appError, EVENTS_PAGE_MAX, type Code, type Event, type Host, type RunView, type StageFiles } from '../api';

/** Events read per `runEvents` call: the most the backend returns (declared in Rust). */
const EVENTS_PAGE = EVENTS_PAGE_MAX;
/** Events that change what `run_view` returns: re-read it after them. */
const REFRESH_ON = new Set([
  'stage.started',
  'stage.completed',
  'stage.failed',
  'interview.started',
  'interview.completed',
  'interview.timeout',
  'interview.interrupted',
  'artifact.captured',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.interrupted',
]);
/** Bursts of stage events cause one re-read. */
const REFRESH_DEBOUNCE_MS = 250;

export type LiveState =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'off'; daemonDown: boolean; message: string };

export type RunLoad =
  | { kind: 'loading' }
  | { kind: 'failed'; code: Code; message: string }
  | { kind: 'ready'; view: RunView };

/**
 * Every stored event of `run`, given the last seq its view saw. Seqs are
 * 1-based and gap-free (`Store::append_events`), so the pages up to
 * `lastSeq` are known in advance and read at once: the backend reads one
 * while the page parses another.
 */
export async function allEvents(host: Host, run: string, lastSeq: number): Promise<Event[]> {
  const count = Math.max(1, Math.ceil(lastSeq / EVENTS_PAGE));
  const pages = await Promise.all(
    Array.from({ length: count }, (_, k) => host.runEvents(run, k * EVENTS_PAGE, EVENTS_PAGE)),
  );
  // Each page keeps to its own range, so pages never overlap even if the
  // seqs had gaps; the last one may run past `lastSeq`.
  const out = pages.flatMap((page, k) => (k === count - 1 ? page : page.filter((e) => e.seq <= (k + 1) * EVENTS_PAGE)));
  // A full last page that went past `lastSeq` may have more after it;
  // one that ends at `lastSeq` is all the view saw (the subscription, which
  // starts after the last event read, brings anything newer).
  let last = pages[count - 1] ?? [];
  while (last.length === EVENTS_PAGE && (last.at(-1)?.seq ?? 0) > lastSeq) {
    last = await host.runEvents(run, out.at(-1)?.seq ?? 0, EVENTS_PAGE);
    out.push(...last);
  }
  return out;
}

/**
 * The view to show after reading `view`: re-reads overlap (a slow one can
 * answer after a later one), and the run moves only forwards, so a view
 * that saw fewer events than the one shown is stale and dropped. Otherwise
 * a gate answered a moment ago could stay "blocked" on screen.
 */
export function newer(shown: RunLoad, view: RunView): RunLoad {
  if (shown.kind === 'ready' && shown.view.run.last_seq > view.run.last_seq) return shown;
  return { kind: 'ready', view };
}

export interface UseRunOptions {
  /** Called with the run's view as soon as it is read, before its events
   * (the run screen starts the graph's layout then). */
  onView?: (view: RunView) => void;
}

/**
 * A run's view and events, kept live while mounted: history is read first,
 * then a subscription from the last stored seq appends new events (each
 * once) and re-reads the view, debounced, when a stage or the run moves on.
 */
export function useRun(host: Host, runId: string, { onView }: UseRunOptions = {}) {
  const [load, setLoad] = useState<RunLoad>({ kind: 'loading' });
  const [events, setEvents] = useState<Event[]>([]);
  const [live, setLive] = useState<LiveState>({ kind: 'connecting' });
  const lastSeq = useRef(0);
  const [reloads, setReloads] = useState(0);

  const reload = useCallback(() => setReloads((n) => n + 1), []);
  // A ref, so a new callback each render does not restart the reads.
  const onViewRef = useRef(onView);
  onViewRef.current = onView;

  useEffect(() => {
    let active = true;
    let unsubscribe: (() => void) | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    lastSeq.current = 0;
    setLoad({ kind: 'loading' });
    setEvents([]);
    setLive({ kind: 'connecting' });

    const refresh = (id: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        host.runView(id).then(
          (view) => active && setLoad((shown) => newer(shown, view)),
          () => {},
        );
      }, REFRESH_DEBOUNCE_MS);
    };

    (async () => {
      let view: RunView;
      try {
        view = await host.runView(runId);
      } catch (e) {
        if (active) setLoad({ kind: 'failed', ...appError(e) });
        return;
      }
      if (!active) return;
      onViewRef.current?.(view);
      const id = view.run.id;
      const history = await allEvents(host, id, view.run.last_seq).catch(() => [] as Event[]);
      if (!active) return;
      // Events recorded after the view was read (a gate opening, say) are in
      // `history` and the subscription starts after them, so read the view
      // again: only one at least as new as the history shows them.
      if ((history.at(-1)?.seq ?? 0) > view.run.last_seq) {
        view = await host.runView(id).catch(() => view);
        if (!active) return;
      }
      lastSeq.current = history.at(-1)?.seq ?? 0;
      setEvents(history);
      setLoad({ kind: 'ready', view });
      try {
        const stop = await host.subscribe(id, lastSeq.current, (event) => {
          if (!active || event.seq <= lastSeq.current) return;
          lastSeq.current = event.seq;
          setEvents((list) => [...list, event]);
          if (REFRESH_ON.has(event.event)) refresh(id);
        });
        if (active) {
          unsubscribe = stop;
          setLive({ kind: 'live' });
        } else {
          stop();
        }
      } catch (e) {
        const err = appError(e);
        if (active) setLive({ kind: 'off', daemonDown: err.code === 'daemon.not_running', message: err.message });
      }
    })();

    return () => {
      active = false;
      clearTimeout(timer);
      unsubscribe?.();
    };
  }, [host, runId, reloads]);

  return { load, events, live, reload };
}

export type FilesLoad =
  | { kind: 'idle' }
  | { kind: 'loading' }
  | { kind: 'failed'; message: string }
  | { kind: 'ready'; files: StageFiles; seq: number };

/**
 * The stored files of stage `node`@`visit`, re-read when `version` changes
 * (the stage finished). `seq` is the last event seen when they were read,
 * so live output after it can be appended without doubling.
 */
export function useStageFiles(
  host: Host,
  run: string | null,
  stage: { node: string; visit: number } | null,
  version: string,
  currentSeq: number,
): FilesLoad {
  const [state, setState] = useState<FilesLoad>({ kind: 'idle' });
  const seqRef = useRef(currentSeq);
  seqRef.current = currentSeq;
  const node = stage?.node;
  const visit = stage?.visit;
  useEffect(() => {
    if (!run || node === undefined || visit === undefined) {
      setState({ kind: 'idle' });
      return;
    }
    let active = true;
    const seq = seqRef.current;
    setState({ kind: 'loading' });
    host.stageFiles(run, node, visit).then(
      (files) => active && setState({ kind: 'ready', files, seq }),
      (e: unknown) => active && setState({ kind: 'failed', message: appError(e).message }),
    );
    return () => {
      active = false;
    };
  }, [host, run, node, visit, version]);
  return state;
}
