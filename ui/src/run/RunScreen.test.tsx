// @vitest-environment happy-dom
import { act } from 'react';
import { beforeEach, describe, expect, it } from 'vitest';

import type { Event, Host, RunStatus, RunView, StageRecord } from '../api';
import { recorded } from '../api/fixtures/recorded';
import { makeTestHost } from '../api/testHost';
import { cleanup, render as mount, until } from '../render.test-helper';
import { AGENT_NODE, agentEvents, agentStage } from './agent.test-data';
import {
  CONTAINER,
  ev,
  FAILED_EVENTS,
  FAILED_STAGES,
  failedView,
  GRAPH,
  PERMISSION_QUESTION,
  QUESTION,
  RUN,
  sandboxedEvents,
  sandboxedView,
  stage,
} from './fixture.test-data';
import { RunScreen } from './RunScreen';

let container: HTMLElement;

// Each test starts from the default layout (no remembered sizes or tabs).
beforeEach(() => window.localStorage.clear());

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

/**
 * A run watched live: the test host serving `view`, with its subscription
 * taken over so the test can push events as weftd would. `advance` swaps the
 * view the host serves and sends the event that makes the screen re-read it.
 */
function liveRun(view: RunView) {
  const fixtures = { views: [view], events: { [RUN]: [] as Event[] }, stageFiles: {}, questions: [] };
  let send: (event: Event) => void = () => {};
  const h: Host = {
    ...makeTestHost(fixtures),
    subscribe: (_run, _afterSeq, onEvent) => {
      send = onEvent;
      return Promise.resolve(() => {});
    },
  };
  const advance = async (status: RunStatus, stages: StageRecord[], event: Event) => {
    fixtures.views[0] = { ...view, run: { ...view.run, status }, stages };
    await act(async () => send(event));
  };
  return { host: h, advance };
}

const started = (at: number, node: string) => ev(at, node, 1, { event: 'stage.started', properties: { handler: 'command', attempt: 1 } });
const shownStage = () => q('[data-testid=stage-detail]')?.getAttribute('data-node');

async function render(h: Host, run = RUN, node?: string) {
  container = await mount(<RunScreen host={h} route={{ screen: 'run', run, ...(node ? { node } : {}) }} />);
  await until(() => container.querySelector('[data-testid=run-header]') !== null);
}

const q = <E extends Element = Element>(sel: string) => container.querySelector<E>(sel);

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

  it('opens a succeeded run on the last stage that did work', async () => {
    const view = { ...failedView(), run: { ...failedView().run, status: 'succeeded' as const, failure_reason: null } };
    view.stages = [FAILED_STAGES[0]!, FAILED_STAGES[1]!, stage('push', 1, 3, 'succeeded', 10, 12), stage('exit', 1, 4, 'succeeded', 12, 12, { handler: 'exit' })];
    await render(makeTestHost({ views: [view], events: {}, stageFiles: {}, questions: [] }));
    await until(() => shownStage() === 'push');
  });

  it('follows a live run from stage to stage, and ends on the stage that failed', async () => {
    const { host: h, advance } = liveRun({ ...failedView(), stages: [stage('start', 1, 1, 'running', 0, null)] });
    const [start, build, push] = FAILED_STAGES as [StageRecord, StageRecord, StageRecord];
    await render(h);
    await until(() => shownStage() === 'start');
    await advance('running', [start, stage('build', 1, 2, 'running', 0, null)], started(0, 'build'));
    await until(() => shownStage() === 'build');
    await advance('running', [start, build, stage('push', 1, 3, 'running', 10, null)], started(10, 'push'));
    await until(() => shownStage() === 'push');
    // on_failure sends the run on to notify after push fails: the run failed,
    // so the panel ends on push, not on the last stage to run.
    await advance('running', [start, build, push, stage('notify', 1, 4, 'running', 12, null)], started(12, 'notify'));
    await until(() => shownStage() === 'notify');
    await advance('failed', [start, build, push, stage('notify', 1, 4, 'succeeded', 12, 13)],
      ev(13, null, null, { event: 'run.failed', properties: { reason: 'push failed', duration_ms: 13000 } }));
    await until(() => shownStage() === 'push');
  });

  it('keeps the stage the user picked while the run moves on, over the node the route named', async () => {
    const { host: h, advance } = liveRun({ ...failedView(), stages: [stage('start', 1, 1, 'succeeded', 0, 0), stage('build', 1, 2, 'running', 0, null)] });
    await render(h, RUN, 'build');
    await until(() => shownStage() === 'build');
    await act(async () => container.querySelector<HTMLButtonElement>('.timeline__bar[data-node="start"]')?.click());
    await until(() => shownStage() === 'start');
    const [start, build] = FAILED_STAGES as [StageRecord, StageRecord];
    await advance('running', [start, build, stage('push', 1, 3, 'running', 10, null)], started(10, 'push'));
    // The re-read view arrives after a short debounce; wait until it shows.
    await until(() => q('g.node[data-node-id="push"]')?.getAttribute('data-state') === 'running' && !!q('.timeline__bar[data-node="push"]'));
    expect(shownStage()).toBe('start');
  });

  it('shows a gate that opened between reading the view and reading the events', async () => {
    // The view was read at seq N; by the time the events were, the gate had
    // opened (seq N+1). The subscription starts after N+1, so only a second
    // read of the view can show the question.
    const before: RunView = { ...failedView(), run: { ...failedView().run, status: 'running', failure_reason: null } };
    const question = { ...QUESTION, run_id: RUN, node_id: 'approve' };
    const after: RunView = { ...before, run: { ...before.run, status: 'blocked', last_seq: before.run.last_seq + 1 }, questions: [question] };
    const opened = ev(14, 'approve', 1, {
      event: 'interview.started',
      properties: { question_id: question.id, question: question.text, options: question.options, freeform: question.freeform },
    });
    let viewReads = 0;
    const inner = makeTestHost({ views: [after], events: { [RUN]: [...FAILED_EVENTS, opened] }, stageFiles: {}, questions: [question] });
    const h: Host = { ...inner, runView: (run) => (viewReads++ === 0 ? Promise.resolve(before) : inner.runView(run)) };
    await render(h);
    await until(() => q('[data-testid=question-panel]') !== null);
    expect(viewReads).toBe(2);
  });

  it('shows a permission request with the agent\'s own timeout and default, not the stage\'s', async () => {
    const question = { ...PERMISSION_QUESTION, run_id: RUN, node_id: 'push' };
    const graph = GRAPH.replace(
      'push [shape=parallelogram, script="push", timeout="30s"]',
      'push [shape=box, backend="acp", timeout="30s", acp.permissions="ask", acp.permission_timeout="5m", acp.permission_default="allow"]',
    );
    const view: RunView = { ...failedView(), run: { ...failedView().run, status: 'blocked', failure_reason: null }, graph_source: graph, questions: [question] };
    const h = makeTestHost({
      views: [view],
      events: { [RUN]: FAILED_EVENTS },
      stageFiles: { [`${RUN}/build/1`]: { prompt: null, response: null, stdout: 'built ok\n', stderr: null, status: null, script: 'make', truncated: [] } },
      questions: [question],
    });
    await render(h);
    await until(() => q('[data-testid=question-panel]') !== null);
    const panel = q('[data-testid=question-panel]')!;
    expect(panel.classList.contains('question--permission')).toBe(true);
    // The first allowing option in the engine's order: allow_once before allow_always.
    expect(panel.textContent).toContain('Times out after 5m; then answers “Allow”.');
    expect(panel.textContent).not.toContain('built ok');
  });

  it('reads the view once when no event came after it', async () => {
    let viewReads = 0;
    const inner = host();
    await render({ ...inner, runView: (run) => (viewReads++, inner.runView(run)) });
    expect(viewReads).toBe(1);
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
    await act(async () => q<HTMLButtonElement>('[role=tab][data-tab=events]')?.click());
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

  it("shows a running agent stage's transcript growing as its events arrive", async () => {
    const running = agentEvents(true);
    const view: RunView = { ...failedView(), run: { ...failedView().run, status: 'running', failure_reason: null }, stages: [agentStage(true)] };
    const { host: h, advance } = liveRun(view);
    await render(h);
    await until(() => shownStage() === AGENT_NODE);
    const texts = () => [...container.querySelectorAll('[data-testid=agent-text]')].map((t) => t.textContent);
    // The events arrive one by one over the subscription, as weftd sends them.
    for (const e of running.slice(0, 4)) await advance('running', [agentStage(true)], e);
    await until(() => texts().length === 1);
    expect(texts()[0]).toContain('I will read the failing test first.');
    for (const e of running.slice(4)) await advance('running', [agentStage(true)], e);
    await until(() => container.querySelectorAll('[data-testid=tool-call]').length === 4);
    expect([...container.querySelectorAll('[data-testid=tool-call]')].at(-1)?.getAttribute('data-state')).toBe('running');
    expect(q('[data-testid=agent-spend]')?.textContent).toBe('5.5k in · 210 out · $0.02 · 2 calls');
    await until(() => container.querySelectorAll('[data-testid=tool-tick]').length === 4);
  });

  it('steers a running agent: the message goes to the daemon and shows in the transcript once the agent has it', async () => {
    const view: RunView = { ...failedView(), run: { ...failedView().run, status: 'running', failure_reason: null }, stages: [agentStage(true)] };
    const inner = makeTestHost({ views: [view], events: { [RUN]: agentEvents(true) }, stageFiles: {}, questions: [] });
    const sent: Array<[string, string, string]> = [];
    const h: Host = { ...inner, steerStage: (run, node, text) => (sent.push([run, node, text]), inner.steerStage(run, node, text)) };
    await render(h);
    await until(() => q('[data-testid=steer-box]') !== null);
    const box = q('[data-testid=steer-box] textarea') as HTMLTextAreaElement;
    const send = q('[data-testid=steer-box] button[type=submit]') as HTMLButtonElement;
    expect(send.disabled).toBe(true);
    await act(async () => {
      // React tracks the value through the native setter.
      Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value')?.set?.call(box, '  Run only the unit tests.  ');
      box.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await act(async () => send.click());
    await until(() => q('[data-testid=action-done]') !== null);
    expect(sent).toEqual([[RUN, AGENT_NODE, 'Run only the unit tests.']]);
    expect(box.value).toBe('');
    await until(() => [...container.querySelectorAll('[data-testid=agent-notice]')].some((n) => n.textContent === 'Steered: “Run only the unit tests.”'));
  });

  it('offers no steering once the agent stage has ended, and says when the daemon is down', async () => {
    const ended: RunView = { ...failedView(), run: { ...failedView().run, status: 'succeeded', failure_reason: null }, stages: [agentStage(false)] };
    await render(makeTestHost({ views: [ended], events: { [RUN]: agentEvents(false) }, stageFiles: {}, questions: [] }));
    await until(() => q('[data-testid=agent-transcript]') !== null);
    expect(q('[data-testid=steer-box]')).toBeNull();
    cleanup();

    const running: RunView = { ...ended, run: { ...ended.run, status: 'running' }, stages: [agentStage(true)] };
    const inner = makeTestHost({ views: [running], events: { [RUN]: agentEvents(true) }, stageFiles: {}, questions: [] });
    await render({ ...inner, steerStage: () => Promise.reject({ code: 'daemon.not_running', message: 'no daemon' }) });
    await until(() => q('[data-testid=steer-box]') !== null);
    const box = q('[data-testid=steer-box] textarea') as HTMLTextAreaElement;
    await act(async () => {
      Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value')?.set?.call(box, 'Stop');
      box.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await act(async () => (q('[data-testid=steer-box] button[type=submit]') as HTMLButtonElement).click());
    await until(() => q('[data-testid=steer-box] [data-testid=daemon-down]') !== null);
    // The message stays, to send again once the daemon runs.
    expect(box.value).toBe('Stop');
  });

  it('shows the run and stage spend with the figures the Spending view has for that run', async () => {
    const view = recorded.views.find((v) => v.run.workflow_name === 'Summarize');
    const line = recorded.spending?.runs.find((r) => r.run_id === view?.run.id);
    expect(view && line).toBeTruthy();
    if (!view || !line) return;
    await render(makeTestHost(recorded), view.run.id, 'summarize');
    expect(q('[data-testid=run-spend]')?.textContent).toBe(
      `${line.calls} call, 8.2k in / 950 out, $0.01`,
    );
    await until(() => shownStage() === 'summarize');
    const stageLine = recorded.spending?.stages.find((s) => s.run_id === view.run.id && s.node_id === 'summarize');
    expect(q('[data-testid=stage-spend]')?.textContent).toBe(
      `${stageLine?.model} · 8.2k in / 950 out · $0.01 · 1 call`,
    );
  });

  it("shows a sandboxed run's image and kept container, how to reach it, and where the failed stage ran", async () => {
    await render(makeTestHost({ views: [sandboxedView()], events: { [RUN]: sandboxedEvents('kept') }, stageFiles: {}, questions: [] }));
    await until(() => q('[data-testid=run-sandbox]')?.textContent?.includes('kept') === true);
    expect(q('[data-testid=run-sandbox] dd')?.textContent).toBe(`docker weft-test:latest · container ${CONTAINER} kept`);
    expect(q('[data-testid=run-sandbox-kept]')?.textContent).toContain(`docker exec -it ${CONTAINER} sh`);
    await until(() => shownStage() === 'push');
    expect(q('[data-testid=stage-container]')?.textContent).toBe(`Ran in container ${CONTAINER} (weft-test:latest) (reused after a restart)`);
  });

  it('says a removed container was removed, with no shell to offer, and shows no sandbox for a run on the host', async () => {
    await render(makeTestHost({ views: [sandboxedView()], events: { [RUN]: sandboxedEvents('removed') }, stageFiles: {}, questions: [] }));
    await until(() => q('[data-testid=run-sandbox]')?.textContent?.includes('removed') === true);
    expect(q('[data-testid=run-sandbox] dd')?.textContent).toBe(`docker weft-test:latest · container ${CONTAINER} removed`);
    expect(q('[data-testid=run-sandbox-kept]')).toBeNull();
    cleanup();

    await render(host());
    await until(() => shownStage() === 'push');
    expect(q('[data-testid=run-sandbox]')).toBeNull();
    expect(q('[data-testid=stage-container]')).toBeNull();
  });

  it('reports an unknown run', async () => {
    container = await mount(<RunScreen host={host()} route={{ screen: 'run', run: 'nope' }} />);
    await until(() => q('[role=alert]') !== null);
    expect(q('[role=alert]')?.textContent).toBe('No run matches “nope”.');
  });
});
