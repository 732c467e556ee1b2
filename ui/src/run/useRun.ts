import { useCallback, useEffect, useRef, useState } from 'react';

import { appError, type Event, type Host, type RunView, type StageFiles } from '../api';

/** The page size the backend caps `run_events` at. */
const EVENTS_PAGE = 10_000;
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
  | { kind: 'failed'; code: string; message: string }
  | { kind: 'ready'; view: RunView };

/** Every stored event of `run`, page by page. */
async function allEvents(host: Host, run: string): Promise<Event[]> {
  const out: Event[] = [];
  for (;;) {
    const page = await host.runEvents(run, out.at(-1)?.seq ?? 0, EVENTS_PAGE);
    out.push(...page);
    if (page.length < EVENTS_PAGE) return out;
  }
}

/**
 * A run's view and events, kept live while mounted: history is read first,
 * then a subscription from the last stored seq appends new events (each
 * once) and re-reads the view, debounced, when a stage or the run moves on.
 */
export function useRun(host: Host, runId: string) {
  const [load, setLoad] = useState<RunLoad>({ kind: 'loading' });
  const [events, setEvents] = useState<Event[]>([]);
  const [live, setLive] = useState<LiveState>({ kind: 'connecting' });
  const lastSeq = useRef(0);
  const [reloads, setReloads] = useState(0);

  const reload = useCallback(() => setReloads((n) => n + 1), []);

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
          (view) => active && setLoad({ kind: 'ready', view }),
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
      const id = view.run.id;
      const history = await allEvents(host, id).catch(() => [] as Event[]);
      if (!active) return;
      // Read the view again: events recorded after the first read (a gate
      // opening, say) are in `history` and the subscription starts after
      // them, so only a view at least as new as the history shows them.
      view = await host.runView(id).catch(() => view);
      if (!active) return;
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
