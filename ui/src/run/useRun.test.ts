// @vitest-environment happy-dom
import { act, createElement } from 'react';
import { createRoot } from 'react-dom/client';
import { describe, expect, it } from 'vitest';

import type { Event, Host, RunView } from '../api';
import { makeTestHost } from '../api/testHost';
import { ev, failedView, RUN } from './fixture.test-data';
import { allEvents, newer, useRun } from './useRun';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/** `n` events numbered 1..n, as the store numbers them. */
function numbered(n: number): Event[] {
  const template = ev(0, 'build', 1, { event: 'stage.started', properties: { handler: 'command', attempt: 1 } });
  return Array.from({ length: n }, (_, i) => ({ ...template, seq: i + 1 }));
}

/** The test host over `events`, noting every `runEvents` call as `after/limit`. */
function counting(events: Event[]): { host: Host; calls: string[] } {
  const calls: string[] = [];
  const inner = makeTestHost({ views: [failedView()], events: { [RUN]: events }, stageFiles: {}, questions: [] });
  const host: Host = {
    ...inner,
    runEvents: (run, after, limit) => {
      calls.push(`${after}/${limit}`);
      return inner.runEvents(run, after, limit);
    },
  };
  return { host, calls };
}

const seqs = (events: Event[]) => events.map((e) => e.seq);
const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('allEvents', () => {
  it('reads every page up to the view\'s last seq at once, and no empty page after them', async () => {
    const { host, calls } = counting(numbered(25_000));
    const events = await allEvents(host, RUN, 25_000);
    expect(seqs(events)).toEqual(oneTo(25_000));
    expect(calls).toEqual(['0/10000', '10000/10000', '20000/10000']);
  });

  it('reads on past a full last page that went past the view\'s last seq', async () => {
    const { host, calls } = counting(numbered(20_003));
    const events = await allEvents(host, RUN, 19_999);
    expect(seqs(events)).toEqual(oneTo(20_003));
    expect(calls).toEqual(['0/10000', '10000/10000', '20000/10000']);
  });

  it('stops at a full last page that ends at the view\'s last seq', async () => {
    // Newer events come from the subscription, which starts after 20,000.
    const { host, calls } = counting(numbered(20_003));
    const events = await allEvents(host, RUN, 20_000);
    expect(seqs(events)).toEqual(oneTo(20_000));
    expect(calls).toEqual(['0/10000', '10000/10000']);
  });

  it('asks once for a run with no events', async () => {
    const { host, calls } = counting([]);
    expect(await allEvents(host, RUN, 0)).toEqual([]);
    expect(calls).toEqual(['0/10000']);
  });

  it('keeps each event once even when seqs have gaps', async () => {
    // Not what the store writes, but pages must not overlap if it ever did.
    const gappy = numbered(15_000).map((e, i) => ({ ...e, seq: i < 5_000 ? i + 1 : i + 3_001 }));
    const { host } = counting(gappy);
    const events = await allEvents(host, RUN, 18_000);
    expect(seqs(events)).toEqual(seqs(gappy));
  });
});

describe('useRun', () => {
  it('hands over the view before the events are read', async () => {
    // The run screen starts the graph's layout from this callback, so it
    // must come while the (large) event history is still on its way.
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const { host: inner, calls } = counting(numbered(3));
    const host: Host = { ...inner, runEvents: (...args) => held.then(() => inner.runEvents(...args)) };
    const seen: RunView[] = [];
    let loaded = '';
    function Probe() {
      const { load } = useRun(host, RUN, { onView: (v) => seen.push(v) });
      loaded = load.kind;
      return null;
    }
    const root = createRoot(document.createElement('div'));
    await act(async () => root.render(createElement(Probe)));
    await act(() => new Promise((r) => setTimeout(r, 20)));
    expect(seen.map((v) => v.run.id)).toEqual([RUN]);
    expect(loaded).toBe('loading');
    await act(async () => release());
    await act(() => new Promise((r) => setTimeout(r, 20)));
    expect(loaded).toBe('ready');
    expect(calls).toEqual(['0/10000']);
    expect(seen).toHaveLength(1);
    act(() => root.unmount());
  });

  it('keeps the newest view when overlapping re-reads answer out of order', async () => {
    // A gate is answered (seq 4), then the run ends (seq 5): two re-reads.
    // If the first answers last, the screen must not fall back to it.
    const base = failedView();
    const at = (seq: number, status: RunView['run']['status']): RunView => ({
      ...base,
      run: { ...base.run, last_seq: seq, status },
    });
    const inner = makeTestHost({ views: [at(3, 'blocked')], events: { [RUN]: numbered(3) }, stageFiles: {}, questions: [] });
    const pending: ((v: RunView) => void)[] = [];
    let reads = 0;
    let push: (e: Event) => void = () => {};
    const host: Host = {
      ...inner,
      runView: (run) => {
        reads += 1;
        if (reads === 1) return inner.runView(run);
        return new Promise<RunView>((resolve) => pending.push(resolve));
      },
      subscribe: (_run, _after, onEvent) => {
        push = onEvent;
        return Promise.resolve(() => {});
      },
    };
    let shown: RunView | null = null;
    function Probe() {
      const { load } = useRun(host, RUN);
      shown = load.kind === 'ready' ? load.view : null;
      return null;
    }
    const until = async (what: string, cond: () => boolean) => {
      for (let i = 0; i < 500 && !cond(); i += 1) {
        await act(() => new Promise((r) => setTimeout(r, 10)));
      }
      expect(cond(), what).toBe(true);
    };
    const root = createRoot(document.createElement('div'));
    await act(async () => root.render(createElement(Probe)));
    await until('the first view is shown', () => shown !== null);
    // Only `seq` and `event` matter to the re-read; the properties are a stage's.
    const event = (seq: number, name: Event['event']) => ({ ...numbered(1)[0], seq, event: name }) as Event;
    act(() => push(event(4, 'interview.completed')));
    await until('the first re-read is asked for', () => pending.length === 1);
    act(() => push(event(5, 'run.completed')));
    await until('the second re-read is asked for', () => pending.length === 2);
    await act(async () => pending[1]?.(at(5, 'succeeded')));
    expect(shown!.run.status).toBe('succeeded');
    await act(async () => pending[0]?.(at(4, 'running')));
    expect(shown!.run.status, 'the stale answer is dropped').toBe('succeeded');
    expect(shown!.run.last_seq).toBe(5);
    act(() => root.unmount());
  });
});

describe('newer', () => {
  it('takes a view at least as new as the one shown, and only such a view', () => {
    const base = failedView();
    const at = (seq: number): RunView => ({ ...base, run: { ...base.run, last_seq: seq } });
    expect(newer({ kind: 'loading' }, at(1))).toEqual({ kind: 'ready', view: at(1) });
    expect(newer({ kind: 'ready', view: at(5) }, at(5))).toEqual({ kind: 'ready', view: at(5) });
    expect(newer({ kind: 'ready', view: at(5) }, at(7))).toEqual({ kind: 'ready', view: at(7) });
    expect(newer({ kind: 'ready', view: at(5) }, at(4))).toEqual({ kind: 'ready', view: at(5) });
  });
});
