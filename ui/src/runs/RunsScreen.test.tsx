// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it } from 'vitest';

import type { Event, Host, RunList } from '../api/host';
import { recorded } from '../api/fixtures/recorded';
import { makeTestHost } from '../api/testHost';
import { cleanup, render as mount, renderNow } from '../render.test-helper';
import { failedView, sandboxedView } from '../run/fixture.test-data';
import { RunsScreen } from './RunsScreen';
import { PAGE_SIZE, prefetchFirstPage } from './useRunPages';

async function render(host: Host): Promise<HTMLElement> {
  const container = await mount(<RunsScreen host={host} />);
  // Let the first page's promise settle and re-render.
  await act(async () => {
    await new Promise((r) => setTimeout(r, 0));
  });
  return container;
}

describe('RunsScreen', () => {
  it('lists the recorded runs newest first, with the gate badge and banner', async () => {
    const el = await render(makeTestHost(recorded));
    const rows = [...el.querySelectorAll('[data-testid=run-row]')];
    expect(rows.map((r) => r.querySelector('.runs__workflow')?.textContent)).toEqual([
      'Ship',
      'Publish',
      'Tidy',
      'Migrate',
      'Checks',
      'Refactor',
      'Fix',
      'Triage',
      'Summarize',
      'Deploy',
      'Release',
    ]);
    // Ship waits at a human gate, Publish on its agent's permission request.
    expect(el.querySelectorAll('[data-testid=gates-badge]')).toHaveLength(2);
    expect(el.querySelector('[data-testid=gates-banner]')?.textContent).toContain('2 runs waiting on you');
    expect(el.textContent).toContain('on_failure=exit stopped the run');
  });

  it('offers every workflow of the store in the filter, not only those of the pages read', async () => {
    const host: Host = { ...makeTestHost(recorded), workflowNames: () => Promise.resolve(['Archived flow', 'Ship']) };
    const el = await render(host);
    const options = [...el.querySelectorAll('[data-testid=runs-workflow] option')].map((o) => o.textContent);
    expect(options[0]).toBe('All workflows');
    expect(options).toContain('Archived flow');
    expect(options.filter((o) => o === 'Ship')).toHaveLength(1);
    expect(options).toContain('Release');
  });

  it('offers the workflows of the pages read when the store cannot list them', async () => {
    const el = await render(makeTestHost(recorded));
    const options = [...el.querySelectorAll('[data-testid=runs-workflow] option')].map((o) => o.textContent);
    expect(options).toEqual(['All workflows', 'Checks', 'Deploy', 'Fix', 'Migrate', 'Publish', 'Refactor', 'Release', 'Ship', 'Summarize', 'Tidy', 'Triage']);
  });

  it('takes the first page asked for before it mounted instead of asking again', async () => {
    const asked: RunList[] = [];
    const base = makeTestHost(recorded);
    const host: Host = {
      ...base,
      runsPage: (query) => {
        asked.push(query);
        return base.runsPage(query);
      },
    };
    prefetchFirstPage(host);
    const el = await render(host);
    expect(el.querySelectorAll('[data-testid=run-row]')).toHaveLength(recorded.views.length);
    expect(asked, 'one request for the first page, the early one').toEqual([{ limit: PAGE_SIZE, offset: 0, archived: false }]);

    // Taken once: the next screen asks for itself.
    cleanup();
    await render(host);
    expect(asked).toHaveLength(2);
  });

  it('renders the first page in its very first render when the answer came before it mounted', async () => {
    const host = makeTestHost(recorded);
    await prefetchFirstPage(host);
    // A synchronous act: no promise settles before the check.
    const container = renderNow(<RunsScreen host={host} />);
    expect(container.querySelectorAll('[data-testid=run-row]')).toHaveLength(recorded.views.length);
  });

  it('shows the page handed over at start, then the fresh answer', async () => {
    const base = makeTestHost(recorded);
    const fresh = await base.runsPage({ limit: PAGE_SIZE, offset: 0, archived: false });
    const handed = { ...fresh, runs: fresh.runs.slice(0, 2), total: 2 };
    let answer: (page: typeof fresh) => void = () => {};
    const host: Host = {
      ...base,
      firstRunsPage: () => handed,
      runsPage: () => new Promise((resolve) => (answer = resolve)),
    };
    prefetchFirstPage(host);
    const el = await render(host);
    expect(el.querySelectorAll('[data-testid=run-row]'), 'the handed-over rows, before any answer').toHaveLength(2);
    await act(async () => answer(fresh));
    expect(el.querySelectorAll('[data-testid=run-row]')).toHaveLength(recorded.views.length);
  });

  it('asks for the workflow names and the waiting runs only once the first page is in', async () => {
    const base = makeTestHost(recorded);
    const fresh = await base.runsPage({ limit: PAGE_SIZE, offset: 0, archived: false });
    let answer: (page: typeof fresh) => void = () => {};
    const asked: string[] = [];
    const host: Host = {
      ...base,
      runsPage: () => new Promise((resolve) => (answer = resolve)),
      workflowNames: () => {
        asked.push('workflowNames');
        return Promise.resolve(['Archived flow']);
      },
      questionList: (run) => {
        asked.push('questionList');
        return base.questionList(run);
      },
    };
    const el = await render(host);
    expect(asked, 'nothing beside the first page while the screen waits for it').toEqual([]);
    await act(async () => answer(fresh));
    await act(async () => {
      await new Promise((r) => setTimeout(r, 0));
    });
    expect(asked.sort()).toEqual(['questionList', 'workflowNames']);
    expect([...el.querySelectorAll('[data-testid=runs-workflow] option')].map((o) => o.textContent)).toContain(
      'Archived flow',
    );
  });

  it('says what failed when the history cannot be read', async () => {
    const failing: Host = {
      ...makeTestHost(recorded),
      runsPage: () => Promise.reject({ code: 'store.error', message: 'database disk image is malformed' }),
    };
    const el = await render(failing);
    expect(el.querySelector('[role=alert]')?.textContent).toContain('database disk image is malformed');
  });

  it("names a sandboxed run's image under its goal, and nothing for a run on the host", async () => {
    const sandboxed = sandboxedView().run;
    const onHost = { ...failedView().run, id: '01HRUNONHOST0000000000000' };
    const host: Host = {
      ...makeTestHost(recorded),
      runsPage: () => Promise.resolve({ runs: [sandboxed, onHost], total: 2, open_questions: {} }),
    };
    const el = await render(host);
    const sandboxOf = (id: string) => el.querySelector(`[data-run-id="${id}"] [data-testid=run-sandbox]`)?.textContent ?? null;
    expect(sandboxOf(sandboxed.id)).toBe(' · docker weft-test:latest');
    expect(sandboxOf(onHost.id)).toBeNull();
  });

  it('reads a stopped daemon as no runs, not as an error', async () => {
    const stopped: Host = {
      ...makeTestHost(recorded),
      runsPage: () => Promise.reject({ code: 'daemon.not_running', message: 'weftd is not running' }),
      questionList: () => Promise.reject({ code: 'daemon.not_running', message: 'weftd is not running' }),
    };
    const el = await render(stopped);
    expect(el.querySelector('[role=alert]')).toBeNull();
    expect(el.querySelector('[data-testid=runs-empty]')?.textContent).toContain('No runs yet');
  });

  it('reads the list again when weftd reports a new run', async () => {
    const fixtures = structuredClone(recorded);
    const base = makeTestHost(fixtures);
    let emit: ((e: Event) => void) | null = null;
    const host: Host = {
      ...base,
      subscribe: (_run, _after, onEvent) => {
        emit = onEvent;
        return Promise.resolve(() => {
          emit = null;
        });
      },
    };
    const el = await render(host);
    const rowsNow = () => el.querySelectorAll('[data-testid=run-row]').length;
    expect(rowsNow()).toBe(recorded.views.length);
    // A new run lands in the database, and the daemon announces it.
    const newest = structuredClone(fixtures.views[0]!);
    newest.run.id = '01ZZZZZZZZZZZZZZZZZZZZZZZZ';
    newest.run.created_at = '2099-01-01T00:00:00.000Z';
    newest.run.workflow_name = 'Fresh';
    fixtures.views.unshift(newest);
    await act(async () => {
      emit?.({
        seq: 1,
        ts: '2099-01-01T00:00:00.000Z',
        run_id: newest.run.id,
        node_id: null,
        visit: null,
        event: 'run.started',
        properties: { workflow: 'Fresh', goal: null, run_dir: '/tmp', resumed: false },
      } as Event);
      await new Promise((r) => setTimeout(r, 500));
    });
    await act(async () => {
      await new Promise((r) => setTimeout(r, 0));
    });
    expect(rowsNow()).toBe(recorded.views.length + 1);
    expect(el.querySelector('[data-testid=run-row] .runs__workflow')?.textContent).toBe('Fresh');
  });
});
