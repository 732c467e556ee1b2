// @vitest-environment happy-dom
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it } from 'vitest';

import type { Host } from '../api';
import { makeTestHost } from '../api/testHost';
import { FAILED_EVENTS, failedView, RUN } from './fixture.test-data';
import { RunScreen } from './RunScreen';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
let container: HTMLDivElement;

afterEach(() => {
  act(() => root?.unmount());
  container?.remove();
});

async function until(ready: () => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await act(() => new Promise((r) => setTimeout(r, 10)));
  }
}

function host(): Host {
  return makeTestHost({
    views: [failedView()],
    events: { [RUN]: FAILED_EVENTS },
    stageFiles: {
      [`${RUN}/push/1`]: { prompt: null, response: null, stdout: 'pushing\n', stderr: 'error: host unreachable\n', status: null, script: 'push', truncated: [] },
      [`${RUN}/build/1`]: { prompt: null, response: null, stdout: 'built ok\n', stderr: null, status: null, script: 'make', truncated: [] },
    },
    questions: [],
  });
}

async function render(h: Host, run = RUN) {
  container = document.createElement('div');
  document.body.append(container);
  root = createRoot(container);
  await act(async () => root?.render(<RunScreen host={h} route={{ screen: 'run', run }} />));
  await until(() => container.querySelector('[data-testid=run-header]') !== null);
}

const q = (sel: string) => container.querySelector(sel);

describe('RunScreen', () => {
  it('says what failed and why, and opens on the failed stage', async () => {
    await render(host());
    expect(q('[data-testid=failure-summary]')?.textContent).toContain(
      'Failed at push: command exited with status 1: error: host unreachable',
    );
    expect(q('[data-testid=run-status]')?.textContent).toBe('failed');
    await until(() => q('[data-testid=stage-detail]')?.getAttribute('data-node') === 'push');
    await until(() => q('[data-testid=log-text]')?.textContent === 'pushing\n');
  });

  it('colours the graph from stages and events', async () => {
    await render(host());
    await until(() => q('g.node[data-node-id="push"]') !== null);
    expect(q('g.node[data-node-id="push"]')?.getAttribute('data-state')).toBe('failed');
    expect(q('g.node[data-node-id="build"]')?.getAttribute('data-state')).toBe('succeeded');
    expect(container.querySelectorAll('g.edge[data-taken]')).toHaveLength(2);
  });

  it('selects a stage from the timeline and shows its routing decision', async () => {
    await render(host());
    const bar = container.querySelector<HTMLButtonElement>('.timeline__bar[data-node="build"]');
    await act(async () => bar?.click());
    await until(() => q('[data-testid=stage-detail]')?.getAttribute('data-node') === 'build');
    const routing = [...container.querySelectorAll<HTMLButtonElement>('[role=tab]')].find((b) => b.textContent === 'Routing');
    await act(async () => routing?.click());
    expect(q('[data-testid=routing]')?.textContent).toContain('Went to push because it was the unconditional way on');
  });

  it('keeps failures in view in the events list', async () => {
    await render(host());
    const alerts = [...container.querySelectorAll('[data-testid=event-alerts] li')].map((li) => li.getAttribute('data-event'));
    expect(alerts).toEqual(['stage.failed', 'run.failed']);
  });

  it('explains a stopped daemon when re-running', async () => {
    await render(host());
    const rerun = [...container.querySelectorAll<HTMLButtonElement>('button')].find((b) => b.textContent === 'Re-run with the same inputs');
    await act(async () => rerun?.click());
    await until(() => q('[data-testid=daemon-down]') !== null);
    expect(q('[data-testid=daemon-down]')?.textContent).toContain('not running');
  });

  it('reports an unknown run', async () => {
    container = document.createElement('div');
    document.body.append(container);
    root = createRoot(container);
    await act(async () => root?.render(<RunScreen host={host()} route={{ screen: 'run', run: 'nope' }} />));
    await until(() => q('[role=alert]') !== null);
    expect(q('[role=alert]')?.textContent).toBe('No run matches “nope”.');
  });
});
