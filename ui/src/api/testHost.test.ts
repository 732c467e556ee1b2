import { describe, expect, it } from 'vitest';

import { METHOD_COMMANDS } from './commands';
import { recorded } from './fixtures/recorded';
import { syntheticRunCount, withSyntheticRuns } from './fixtures/synthetic';
import { makeTestHost, pageFixtures, testHost, unmodelled } from './testHost';

describe('the recorded fixtures', () => {
  it('hold the varied history the engine recorded, newest first', () => {
    const statuses = recorded.views.map((v) => `${v.run.workflow_name} ${v.run.status}`);
    expect(statuses).toEqual([
      'Ship blocked',
      'Publish blocked',
      'Tidy running',
      'Migrate cancelled',
      'Checks succeeded',
      'Refactor succeeded',
      'Fix succeeded',
      'Triage succeeded',
      'Summarize succeeded',
      'Deploy failed',
      'Release succeeded',
    ]);
    const times = recorded.views.map((v) => v.run.created_at);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('hold an external agent\'s permission question with the request behind it', () => {
    const asked = recorded.questions.filter((q) => q.permission);
    expect(asked).toHaveLength(1);
    const question = asked[0]!;
    const permission = question.permission!;
    expect(question.text).toBe(`${permission.agent} asks permission: ${permission.title}`);
    expect(question.options).toEqual(permission.options.map((o) => o.label));
    expect(permission.options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once']);
    expect(permission.tool_kind).toBe('execute');
    expect(permission.locations).toEqual(['/home/me/projects/shop/Cargo.toml']);
  });

  it('carry no machine-specific temp paths', () => {
    expect(JSON.stringify(recorded)).not.toMatch(/\/tmp\//);
  });
});

describe('the default test host', () => {
  it('serves the recorded runs with the gate run’s open question', async () => {
    const page = await testHost.runsPage({ limit: 200 });
    expect(page.total).toBe(recorded.views.length);
    const ship = page.runs.find((r) => r.workflow_name === 'Ship');
    expect(ship && page.open_questions[ship.id]).toBe(1);
  });

  it('counts open questions only for the runs listed', async () => {
    const page = await testHost.runsPage({ status: 'failed' });
    expect(page.runs.map((r) => r.workflow_name)).toEqual(['Deploy']);
    expect(page.open_questions).toEqual({});
  });

  it('serves the page the store recorded for a filter, a labelled page full', async () => {
    const page = await testHost.runsPage({ label: 'release', limit: 200, offset: 0, archived: false });
    expect(page.runs.map((r) => r.workflow_name)).toEqual(['Ship', 'Release']);
    expect(page.total).toBe(2);
  });

  it('refuses a filter nobody recorded, naming where to record it', async () => {
    await expect(testHost.runsPage({ workflow: 'Nope', limit: 200 })).rejects.toMatchObject({
      code: 'test.unrecorded_query',
      message: expect.stringContaining('tests/tests/it/ui_fixtures.rs'),
    });
  });

  it('answers every command, those it does not model as the app would or by name', async () => {
    const host = makeTestHost();
    for (const method of Object.keys(METHOD_COMMANDS)) {
      expect(typeof (host as unknown as Record<string, unknown>)[method], method).toBe('function');
    }
    // A live command it does not model finds no daemon, as the app with weftd stopped.
    await expect(host.daemonStatus()).rejects.toMatchObject({ code: 'daemon.not_running' });
    // Any other unmodelled command is refused by name.
    await expect(unmodelled().revealArtifact('01RUN', 'a.txt')).rejects.toMatchObject({
      code: 'test.unmodelled',
      message: expect.stringContaining('reveal_artifact'),
    });
  });

  it('searches the stage logs of a run, ignoring case', async () => {
    const deploy = recorded.views.find((v) => v.run.workflow_name === 'Deploy');
    const matches = await testHost.searchLogs(deploy?.run.id ?? '', 'HOST UNREACHABLE');
    expect(matches).toEqual([
      { node_id: 'push', visit: 1, stream: 'stderr', line_number: 1, line: 'error: host unreachable' },
    ]);
    await expect(testHost.searchLogs(deploy?.run.id ?? '', '')).resolves.toEqual([]);
  });
});

describe('?runs=N', () => {
  it('reads the count from the query string', () => {
    expect(syntheticRunCount('?runs=10000')).toBe(10_000);
    expect(syntheticRunCount('')).toBe(0);
    expect(syntheticRunCount('?runs=lots')).toBe(0);
  });

  it('adds N older runs after the recorded ones, the same on every load', async () => {
    const host = makeTestHost(pageFixtures('?runs=1000'));
    const first = await host.runsPage({ limit: 10 });
    expect(first.total).toBe(recorded.views.length + 1000);
    expect(first.runs[0]?.id).toBe(recorded.views[0]?.run.id);
    const again = withSyntheticRuns(recorded, 1000);
    expect(again.views[500]?.run).toEqual((await host.runsPage({ offset: 500, limit: 1 })).runs[0]);
    const statuses = new Set(again.views.map((v) => v.run.status));
    expect(statuses.size).toBeGreaterThanOrEqual(4);
    const ids = new Set(again.views.map((v) => v.run.id));
    expect(ids.size).toBe(again.views.length);
    const times = again.views.map((v) => v.run.created_at);
    expect([...times].sort().reverse()).toEqual(times);
  });
});

describe('the test host as weftd for run.fork', () => {
  const fixtures = () => structuredClone(recorded);
  const byStatus = (f: typeof recorded, status: string) => f.views.find((v) => v.run.status === status)!;

  it('forks a run into a new cancelled one holding the stages up to the checkpoint', async () => {
    const f = fixtures();
    const source = byStatus(f, 'failed');
    const first = [...source.stages].sort((a, b) => a.rank - b.rank)[0]!;
    const host = makeTestHost(f);
    const forked = await host.runFork(source.run.id, `${first.node_id}@${first.visit}`, false);
    const view = await host.runView(forked.run_id);
    expect(view.run.status).toBe('cancelled');
    expect(view.run.failure_reason).toContain(`forked from run ${source.run.id} at ${first.node_id}@${first.visit}`);
    expect(view.stages.map((s) => s.node_id)).toEqual([first.node_id]);
    expect((await host.runView(source.run.id)).run.archived, 'a fork keeps its source').toBe(false);
  });

  it('rewinds only a run that ended, and archives it', async () => {
    const f = fixtures();
    const host = makeTestHost(f);
    const running = byStatus(f, 'running');
    await expect(host.runFork(running.run.id, null, false)).rejects.toMatchObject({ code: 'run.not_forkable' });
    const cancelled = byStatus(f, 'cancelled');
    await expect(host.runFork(cancelled.run.id, null, true)).rejects.toMatchObject({ code: 'run.not_forkable' });
    const succeeded = byStatus(f, 'succeeded');
    await expect(host.runFork(succeeded.run.id, 'nowhere@9', true)).rejects.toMatchObject({ code: 'checkpoint.not_found' });
    const rewound = await host.runFork(succeeded.run.id, null, true);
    expect(rewound.archived_source).toBe(true);
    expect((await host.runView(succeeded.run.id)).run.archived).toBe(true);
    await expect(host.runFork(succeeded.run.id, null, true), 'an archived run is not rewound twice').rejects.toMatchObject({ code: 'run.not_forkable' });
  });
});
