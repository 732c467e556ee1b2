// @vitest-environment happy-dom
import { act } from 'react';
import { beforeEach, describe, expect, it } from 'vitest';

import type { Host, QuestionRecord } from '../api';
import { makeTestHost } from '../api/testHost';
import { render as mount, press, until } from '../render.test-helper';
import { FAILED_EVENTS, failedView, QUESTION, RUN } from './fixture.test-data';
import { RunScreen } from './RunScreen';
import { RUN_SHORTCUTS } from './shortcuts';

let container: HTMLElement;

// Each test starts from the default layout (no remembered sizes or tabs).
beforeEach(() => window.localStorage.clear());

/** The failed run of the fixtures (start, build, push; push failed), optionally waiting on `question`. */
function host(question?: QuestionRecord): Host {
  const view = failedView();
  if (question) view.questions = [question];
  return makeTestHost({ views: [view], events: { [RUN]: FAILED_EVENTS }, stageFiles: {}, questions: question ? [question] : [] });
}

async function render(h: Host) {
  container = await mount(<RunScreen host={h} route={{ screen: 'run', run: RUN }} />);
  await until(() => container.querySelector('[data-testid=run-header]') !== null);
}

const q = <E extends Element = Element>(sel: string) => container.querySelector<E>(sel);
const shownStage = () => q('[data-testid=stage-detail]')?.getAttribute('data-node');
const shortcuts = () => q('[data-testid=shortcuts]');

describe('the run screen keyboard', () => {
  it('moves between stages in timeline order with j and k and the arrows, stopping at the ends', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    await press('k');
    expect(shownStage()).toBe('build');
    await press('ArrowUp');
    expect(shownStage()).toBe('start');
    await press('k');
    expect(shownStage()).toBe('start');
    await press('j');
    expect(shownStage()).toBe('build');
    await press('ArrowDown');
    await press('ArrowDown');
    expect(shownStage()).toBe('push');
    // The address names the stage, as a click would.
    expect(window.location.hash).toContain('push');
  });

  it('leaves keys typed in a text field, and keys with Ctrl, Alt or Meta, alone', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    const search = q('input[type=search]') as HTMLInputElement;
    await press('k', search);
    expect(shownStage()).toBe('push');
    await press('?', search);
    expect(shortcuts()).toBeNull();
    for (const modifier of ['ctrlKey', 'altKey', 'metaKey']) await press('k', window, { [modifier]: true });
    expect(shownStage()).toBe('push');
  });

  it('opens with ? a list of every shortcut, the gate keys among them, and closes it with Escape or ?', async () => {
    await render(host({ ...QUESTION, run_id: RUN, node_id: 'approve' }));
    await until(() => q('[data-testid=question-panel]') !== null);
    expect(shortcuts()).toBeNull();
    await press('?', window, { shiftKey: true });
    const list = shortcuts();
    expect(list?.getAttribute('role')).toBe('dialog');
    const text = list?.textContent ?? '';
    for (const s of RUN_SHORTCUTS) {
      expect(text).toContain(s.what);
      for (const k of s.keys) expect(text).toContain(k);
    }
    expect(text).toContain('Esc');
    // The question's options: [S] Ship, [H] Hold, and Later on its number.
    const gateKeys = [...(list?.querySelectorAll('[data-gate-key]') ?? [])].map((e) => e.getAttribute('data-gate-key'));
    expect(gateKeys).toEqual(['s', 'h', '3']);
    expect(text).toContain('Answer Ship at approve');
    await press('Escape');
    expect(shortcuts()).toBeNull();
    await press('?');
    await press('?');
    expect(shortcuts()).toBeNull();
  });

  it("lets a gate's accelerator on a run key answer the question instead", async () => {
    const question = { ...QUESTION, run_id: RUN, node_id: 'approve', options: ['[K] Keep', '[D] Drop'] };
    const h = host(question);
    const answers: unknown[] = [];
    const watching: Host = { ...h, questionAnswer: (id, by) => (answers.push(by), h.questionAnswer(id, by)) };
    await render(watching);
    await until(() => q('[data-testid=question-panel]') !== null && shownStage() === 'push');
    await press('k');
    expect(answers).toEqual([{ key: 'K' }]);
    expect(shownStage()).toBe('push');
  });

  it('focuses the log search with / and the selected node of the graph with g', async () => {
    await render(host());
    await until(() => shownStage() === 'push' && q('g.node[data-node-id="push"][tabindex]') !== null);
    await press('/');
    expect(document.activeElement).toBe(q('input[type=search]'));
    // The search box has focus now: g is typed there, not a shortcut.
    await press('g', document.activeElement!);
    expect(document.activeElement).toBe(q('input[type=search]'));
    (document.activeElement as HTMLElement).blur();
    await press('g');
    expect(document.activeElement).toBe(q('g.node[data-node-id="push"]'));
  });
});

describe('the run screen keyboard and its tabs', () => {
  it('opens the Output tab with / and focuses its search, from any tab', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    await act(async () => q<HTMLButtonElement>('[role=tab][data-tab=routing]')?.click());
    expect(q('input[type=search]')).toBeNull();
    await press('/');
    expect(q('[role=tablist][aria-label=Stage] [aria-selected=true]')?.getAttribute('data-tab')).toBe('output');
    expect(document.activeElement).toBe(q('input[type=search]'));
  });

  it('opens the stage tabs with 1 to 6 and the run bar tabs with 7 to 0', async () => {
    await render(host());
    await until(() => shownStage() === 'push');
    const selected = (list: string) => q(`[role=tablist][aria-label=${list}] [aria-selected=true]`)?.getAttribute('data-tab');
    await press('5');
    expect(selected('Stage')).toBe('routing');
    await press('6');
    expect(selected('Stage')).toBe('context');
    // push is no agent stage: 1 (Transcript) shows its output.
    await press('1');
    expect(selected('Stage')).toBe('output');
    await press('8');
    expect(selected('Run')).toBe('events');
    await press('0');
    expect(selected('Run')).toBe('cost');
    await press('7');
    expect(selected('Run')).toBe('timeline');
  });

  it("brings the selected stage's timeline bar into view with j and k", async () => {
    const scrolled: string[] = [];
    const original = Element.prototype.scrollIntoView;
    Element.prototype.scrollIntoView = function (this: Element) {
      if (this.classList.contains('timeline__bar')) scrolled.push(this.getAttribute('data-node') ?? '');
    };
    try {
      await render(host());
      await until(() => shownStage() === 'push');
      await press('k');
      expect(scrolled).toEqual(['build']);
    } finally {
      Element.prototype.scrollIntoView = original;
    }
  });
});
