// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it } from 'vitest';

import type { Host } from '../api';
import { makeTestHost } from '../api/testHost';
import { render as mount } from '../render.test-helper';
import { failedView, PERMISSION_QUESTION, QUESTION } from '../run/fixture.test-data';
import { GatesScreen } from './GatesScreen';

let container: HTMLElement;

function fixtures(questions = [QUESTION]) {
  const view = failedView();
  view.run = { ...view.run, id: QUESTION.run_id, status: 'blocked', workflow_name: 'Ship', goal: 'Ship it' };
  view.questions = questions;
  return { views: [view], events: {}, stageFiles: {}, questions, artifacts: {} };
}

async function render(host: Host) {
  container = await mount(<GatesScreen host={host} />);
  for (let i = 0; i < 50 && !container.querySelector('[data-testid=gates-screen]'); i++) {
    await act(() => new Promise((r) => setTimeout(r, 10)));
  }
}

describe('GatesScreen', () => {
  it('lists pending questions with their run and a link to it', async () => {
    await render(makeTestHost(fixtures()));
    expect(container.querySelector('[data-testid=question-text]')?.textContent).toBe('Ship the build?');
    const link = container.querySelector<HTMLAnchorElement>('.question__run');
    expect(link?.getAttribute('href')).toBe('#/run/run-waiting/question/q1');
    expect(link?.textContent).toBe('Ship — Ship it');
    expect(container.querySelector('[data-testid=gates-daemon-down]')).toBeNull();
  });

  it('falls back to the run history when the daemon is down, and says so', async () => {
    const host = { ...makeTestHost(fixtures()), questionList: () => Promise.reject({ code: 'daemon.not_running', message: 'down' }) };
    await render(host);
    expect(container.querySelector('[data-testid=question-text]')?.textContent).toBe('Ship the build?');
    expect(container.querySelector('[data-testid=gates-daemon-down]')?.textContent).toContain('daemon is not running');
  });

  it('shows an agent\'s permission request as one, next to a plain gate question', async () => {
    await render(makeTestHost(fixtures([QUESTION, PERMISSION_QUESTION])));
    const panels = [...container.querySelectorAll('[data-testid=question-panel]')];
    expect(panels.map((p) => p.getAttribute('data-question-id'))).toEqual(['q1', 'q2']);
    const [gate, permission] = panels;
    expect(gate!.querySelector('[data-testid=permission]')).toBeNull();
    expect(gate!.classList.contains('question--permission')).toBe(false);
    expect(permission!.classList.contains('question--permission')).toBe(true);
    expect(permission!.querySelector('[data-testid=permission-kind]')?.textContent).toBe('execute');
    expect(permission!.querySelector('[data-testid=permission-command]')?.textContent).toBe('$ cargo publish --dry-run');
    expect([...permission!.querySelectorAll('.question__option')].map((b) => b.getAttribute('data-kind'))).toEqual([
      'allow_always',
      'allow_once',
      'reject_once',
    ]);
    expect(permission!.querySelector('.question__run')?.getAttribute('href')).toBe('#/run/run-waiting/question/q2');
  });
});
