// @vitest-environment happy-dom
import { act } from 'react';
import { beforeEach, describe, expect, it } from 'vitest';

import type { Host, RunView } from '../api';
import { recorded } from '../api/fixtures/recorded';
import { makeTestHost } from '../api/testHost';
import type { RunRoute } from '../app/route';
import { cleanup, press, render as mount, until } from '../render.test-helper';
import { FAILED_EVENTS, FAILED_STAGES, failedView, QUESTION, RUN, stage } from './fixture.test-data';
import { RunScreen } from './RunScreen';

let container: HTMLElement;

beforeEach(() => {
  window.localStorage.clear();
  window.history.replaceState(null, '', '#/');
});

/** A test host serving `view` (the failed run of the fixtures by default). */
function host(view: RunView = failedView()): Host {
  return makeTestHost({
    views: [view],
    events: { [RUN]: FAILED_EVENTS },
    stageFiles: {
      [`${RUN}/push/1`]: { prompt: null, response: null, stdout: 'pushing\n', stderr: null, status: null, script: 'push', truncated: [] },
    },
    questions: view.questions,
  });
}

async function render(h: Host, route: Partial<RunRoute> = {}) {
  container = await mount(<RunScreen host={h} route={{ screen: 'run', run: RUN, ...route }} />);
  await until(() => container.querySelector('[data-testid=run-header]') !== null);
}

const q = <E extends Element = Element>(sel: string) => container.querySelector<E>(sel);
const shownStage = () => q('[data-testid=stage-detail]')?.getAttribute('data-node');
const selectedTab = (list: string) => q(`[role=tablist][aria-label="${list}"] [role=tab][aria-selected=true]`)?.getAttribute('data-tab');
const tab = (list: string, id: string) => q<HTMLButtonElement>(`[role=tablist][aria-label="${list}"] [role=tab][data-tab=${id}]`);
const panelOf = (list: string) => {
  const id = tab(list, selectedTab(list) ?? '')?.getAttribute('aria-controls');
  return id ? document.getElementById(id) : null;
};

describe('the run screen panes', () => {
  it('has ARIA tabs for the stage and the run bar, each naming its panel', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    // push is a command stage: no Transcript tab.
    expect([...container.querySelectorAll('[aria-label=Stage][role=tablist] [role=tab]')].map((t) => t.textContent)).toEqual([
      'Output',
      'Files changed',
      'Artifacts',
      'Routing',
      'Context',
    ]);
    expect([...container.querySelectorAll('[aria-label=Run][role=tablist] [role=tab]')].map((t) => t.textContent)).toEqual([
      'Timeline',
      'Events',
      'Retro',
      'Cost',
    ]);
    expect(selectedTab('Stage')).toBe('output');
    expect(panelOf('Stage')?.getAttribute('role')).toBe('tabpanel');
    expect(panelOf('Stage')?.getAttribute('aria-labelledby')).toBe(tab('Stage', 'output')?.id);
    expect(selectedTab('Run')).toBe('timeline');
    expect(panelOf('Run')?.querySelector('[data-testid=timeline]')).not.toBeNull();
  });

  it('switches tabs on click and with the arrow keys, and the hash follows', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    await act(async () => tab('Stage', 'routing')?.click());
    expect(selectedTab('Stage')).toBe('routing');
    expect(window.location.hash).toBe(`#/run/${RUN}/stage/push@1/routing`);
    expect(q('[data-testid=routing-none]')?.textContent).toContain('No routing decision');
    await press('ArrowRight', tab('Stage', 'routing')!);
    expect(selectedTab('Stage')).toBe('context');
    expect(document.activeElement).toBe(tab('Stage', 'context'));
    expect(q('[data-testid=context-updates]')?.textContent).toContain('push.tries');
    expect(window.location.hash).toBe(`#/run/${RUN}/stage/push@1/context`);
    await press('Home', tab('Stage', 'context')!);
    expect(selectedTab('Stage')).toBe('output');

    // Picking another stage keeps the tab and names the stage.
    await act(async () => q<HTMLButtonElement>('.timeline__bar[data-node="build"]')?.click());
    expect(window.location.hash).toBe(`#/run/${RUN}/stage/build@1/output`);
  });

  it('names the bar tab in the hash while no stage was chosen', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    await act(async () => tab('Run', 'events')?.click());
    expect(selectedTab('Run')).toBe('events');
    expect(window.location.hash).toBe(`#/run/${RUN}/events`);
    expect(q('[data-testid=event-alerts]')).not.toBeNull();
  });

  it('opens the stage, visit and tab a deep link names', async () => {
    const view = failedView();
    view.stages = [...FAILED_STAGES, stage('build', 2, 4, 'succeeded', 12, 13)];
    await render(host(view), { node: 'build', visit: 1, tab: 'routing' });
    await until(() => shownStage() === 'build');
    expect(q('[data-testid=stage-detail]')?.getAttribute('data-visit')).toBe('1');
    expect(selectedTab('Stage')).toBe('routing');
    expect(q('[data-testid=routing]')?.textContent).toContain('Went to push');
    cleanup();

    await render(host(view), { node: 'build' });
    await until(() => shownStage() === 'build');
    // Without a visit: the latest.
    expect(q('[data-testid=stage-detail]')?.getAttribute('data-visit')).toBe('2');
    cleanup();

    await render(host(), { bar: 'cost' });
    expect(selectedTab('Run')).toBe('cost');
    expect(q('[data-testid=cost-none]')?.textContent).toContain('No model spend was recorded');
  });

  it('falls back to the default layout when localStorage holds garbage', async () => {
    for (const [k, v] of Object.entries({ graphWidth: '99999999', barHeight: 'tall', graphCollapsed: 'maybe', barCollapsed: '1', stageTab: '<script>', barTab: 'constructor' })) {
      window.localStorage.setItem(`weft.layout.run.${k}`, v);
    }
    await render(host());
    await until(() => shownStage() === 'push');
    expect(q<HTMLElement>('[data-testid=graph-pane]')?.style.width).toBe('480px');
    expect(q<HTMLElement>('[data-testid=graph-pane]')?.hidden).toBe(false);
    expect(q<HTMLElement>('#run-bar-body')?.style.height).toBe('280px');
    expect(q<HTMLElement>('#run-bar-body')?.hidden).toBe(false);
    expect(selectedTab('Stage')).toBe('output');
    expect(selectedTab('Run')).toBe('timeline');
  });

  it('remembers sizes, collapsed panes and tabs across remounts', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    const splitter = q<HTMLElement>('[data-testid=graph-splitter]')!;
    expect(splitter.getAttribute('role')).toBe('separator');
    await press('ArrowRight', splitter);
    await press('ArrowRight', splitter, { shiftKey: true });
    expect(q<HTMLElement>('[data-testid=graph-pane]')?.style.width).toBe(`${480 + 24 + 96}px`);
    expect(splitter.getAttribute('aria-valuenow')).toBe('600');
    await press('ArrowDown', q<HTMLElement>('[data-testid=bar-splitter]')!);
    expect(q<HTMLElement>('#run-bar-body')?.style.height).toBe(`${280 - 24}px`);
    await act(async () => tab('Stage', 'context')?.click());
    await act(async () => tab('Run', 'cost')?.click());
    await act(async () => q<HTMLButtonElement>('[data-testid=bar-toggle]')?.click());
    await act(async () => q<HTMLButtonElement>('[data-testid=graph-toggle]')?.click());
    expect(q<HTMLElement>('[data-testid=graph-pane]')?.hidden).toBe(true);
    cleanup();

    await render(host());
    await until(() => shownStage() === 'push');
    expect(q<HTMLElement>('[data-testid=graph-pane]')?.style.width).toBe('600px');
    expect(q<HTMLElement>('[data-testid=graph-pane]')?.hidden).toBe(true);
    expect(q<HTMLElement>('#run-bar-body')?.style.height).toBe('256px');
    expect(q<HTMLElement>('#run-bar-body')?.hidden).toBe(true);
    expect(selectedTab('Stage')).toBe('context');
    expect(selectedTab('Run')).toBe('cost');
    // A bar tab opens the collapsed bar.
    await act(async () => tab('Run', 'events')?.click());
    expect(q<HTMLElement>('#run-bar-body')?.hidden).toBe(false);
  });

  it('keeps a pending question on top, above the panes', async () => {
    const view = failedView();
    view.questions = [{ ...QUESTION, run_id: RUN, node_id: 'approve' }];
    await render(host(view));
    await until(() => q('[data-testid=question-panel]') !== null);
    const question = q('[data-testid=question-panel]')!;
    const panes = q('[data-testid=run-panes]')!;
    expect(question.compareDocumentPosition(panes) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(question.closest('[role=tabpanel]')).toBeNull();
  });

  it("shows the run's spend in the Cost tab", async () => {
    const view = recorded.views.find((v) => v.run.workflow_name === 'Summarize');
    expect(view?.run.llm).toBeTruthy();
    if (!view) return;
    container = await mount(<RunScreen host={makeTestHost(recorded)} route={{ screen: 'run', run: view.run.id, bar: 'cost' }} />);
    await until(() => q('[data-testid=cost-panel]') !== null);
    expect(q('[data-testid=cost-total]')?.textContent).toContain('8.2k in / 950 out');
    expect(q('[data-testid=cost-stages]')?.textContent).toContain('summarize');
  });
});

describe('the address of the run screen', () => {
  it('names the tab on screen even when the tab clicked was already open', async () => {
    await render(host(), { node: 'push' });
    await until(() => shownStage() === 'push');
    expect(window.location.hash).toBe('#/');
    await act(async () => tab('Stage', 'output')?.click());
    expect(window.location.hash).toBe(`#/run/${RUN}/stage/push@1/output`);
    await act(async () => tab('Run', 'timeline')?.click());
    // A stage was chosen: the address keeps naming it.
    expect(window.location.hash).toBe(`#/run/${RUN}/stage/push@1/output`);
  });
});
