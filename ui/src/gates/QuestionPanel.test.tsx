// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it, vi } from 'vitest';

import type { Host } from '../api';
import { makeTestHost } from '../api/testHost';
import { render as mount } from '../render.test-helper';
import { PERMISSION_QUESTION, QUESTION } from '../run/fixture.test-data';
import { QuestionPanel } from './QuestionPanel';

let container: HTMLElement;

function hostWithSpy(answer?: Host['questionAnswer']) {
  const base = makeTestHost({ views: [], events: {}, stageFiles: {}, questions: [QUESTION, PERMISSION_QUESTION], artifacts: {} });
  const questionAnswer = vi.fn(answer ?? base.questionAnswer);
  return { host: { ...base, questionAnswer } as Host, questionAnswer };
}

async function render(host: Host) {
  container = await mount(<QuestionPanel host={host} question={QUESTION} timeout="15m" defaultChoice="[H] Hold" />);
}

const settle = () => act(() => new Promise((r) => setTimeout(r, 0)));
const buttons = () => [...container.querySelectorAll<HTMLButtonElement>('.question__option')];

describe('QuestionPanel', () => {
  it('shows the question, its options with their keys, and the timeout', async () => {
    const { host } = hostWithSpy();
    await render(host);
    expect(container.textContent).toContain('Ship the build?');
    expect(buttons().map((b) => b.textContent)).toEqual(['SShip', 'HHold', '3Later']);
    expect(container.textContent).toContain('Times out after 15m; then answers “[H] Hold”.');
    expect(container.querySelector('textarea')).not.toBeNull();
  });

  it('answers by click with the option label', async () => {
    const { host, questionAnswer } = hostWithSpy();
    await render(host);
    await act(async () => buttons()[1]!.click());
    await settle();
    expect(questionAnswer).toHaveBeenCalledWith('q1', { label: '[H] Hold' });
    expect(container.textContent).toContain('Answered: Hold');
    // Answered once: the buttons no longer answer again.
    expect(buttons().every((b) => b.disabled)).toBe(true);
  });

  it('answers by accelerator key, ignoring keys typed into the text box', async () => {
    const { host, questionAnswer } = hostWithSpy();
    await render(host);
    const textarea = container.querySelector('textarea')!;
    await act(async () => textarea.dispatchEvent(new KeyboardEvent('keydown', { key: 's', bubbles: true })));
    expect(questionAnswer).not.toHaveBeenCalled();
    await act(async () => window.dispatchEvent(new KeyboardEvent('keydown', { key: 's' })));
    await settle();
    expect(questionAnswer).toHaveBeenCalledWith('q1', { key: 'S' });
    expect(container.textContent).toContain('Answered: Ship');
  });

  it('answers a keyless option by its number, with its label', async () => {
    const { host, questionAnswer } = hostWithSpy();
    await render(host);
    await act(async () => window.dispatchEvent(new KeyboardEvent('keydown', { key: '3' })));
    await settle();
    expect(questionAnswer).toHaveBeenCalledWith('q1', { label: 'Later' });
  });

  it('explains a stopped daemon and offers to start it', async () => {
    const { host } = hostWithSpy(() => Promise.reject({ code: 'daemon.not_running', message: 'down' }));
    await render(host);
    await act(async () => buttons()[0]!.click());
    await settle();
    const down = container.querySelector('[data-testid=daemon-down]');
    expect(down?.textContent).toContain('not running');
    expect(down?.querySelector('button')?.textContent).toBe('Start daemon');
  });

  it('starts the daemon and retries the answer', async () => {
    let up = false;
    const { host, questionAnswer } = hostWithSpy((id) =>
      up ? Promise.resolve({ ...QUESTION, id, status: 'answered' }) : Promise.reject({ code: 'daemon.not_running', message: 'down' }),
    );
    const daemonStart = vi.fn(() => {
      up = true;
      return host.daemonStatus().catch(() => ({}) as never);
    });
    const withStart = { ...host, daemonStart } as Host;
    await render(withStart);
    await act(async () => buttons()[0]!.click());
    await settle();
    await act(async () => container.querySelector<HTMLButtonElement>('[data-testid=daemon-down] button')!.click());
    await settle();
    expect(daemonStart).toHaveBeenCalledOnce();
    expect(questionAnswer).toHaveBeenCalledTimes(2);
    expect(container.textContent).toContain('Answered: Ship');
  });

  it('shows a plain gate question without permission styling', async () => {
    const { host } = hostWithSpy();
    await render(host);
    const panel = container.querySelector('[data-testid=question-panel]')!;
    expect(panel.classList.contains('question--permission')).toBe(false);
    expect(panel.getAttribute('aria-label')).toBe('Question');
    expect(container.querySelector('[data-testid=permission]')).toBeNull();
    expect(buttons().some((b) => /--(allow|reject)/.test(b.className))).toBe(false);
  });
});

describe('QuestionPanel for an external agent\'s permission request', () => {
  async function renderPermission(host: Host, question = PERMISSION_QUESTION, context: { title: string; text: string } | null = null) {
    container = await mount(<QuestionPanel host={host} question={question} context={context} timeout="10m" defaultChoice="Reject" />);
  }

  it('says which agent asks, the kind of call, its paths and its command', async () => {
    const { host } = hostWithSpy();
    await renderPermission(host, PERMISSION_QUESTION, { title: 'What plan answered', text: 'the plan' });
    const panel = container.querySelector('[data-testid=question-panel]')!;
    expect(panel.classList.contains('question--permission')).toBe(true);
    expect(panel.getAttribute('data-permission')).toBe('execute');
    expect(panel.textContent).toContain('Permission request at implement');
    const text = container.querySelector('[data-testid=question-text]')!;
    expect(text.textContent).toBe('claude asks permission: Run cargo publish');
    expect(text.querySelector('strong')?.textContent).toBe('claude');
    const kind = container.querySelector('[data-testid=permission-kind]')!;
    expect(kind.textContent).toBe('execute');
    expect(kind.className).toContain('permission__kind--execute');
    expect(container.querySelector('.permission__what')?.textContent).toContain('claude wants to run a command:');
    expect([...container.querySelectorAll('[data-testid=permission-paths] li')].map((li) => li.textContent)).toEqual([
      '/home/me/projects/shop/Cargo.toml',
    ]);
    expect(container.querySelector('[data-testid=permission-command]')?.textContent).toBe('$ cargo publish --dry-run');
    // The full input is there, folded behind the command.
    const input = container.querySelector('[data-testid=permission-input]')!;
    expect(input.textContent).toContain('Check the crate packages');
    expect(input.closest('details')?.open).toBe(false);
    // The request is the context: the previous stage's work is not shown.
    expect(panel.textContent).not.toContain('the plan');
    expect(panel.textContent).toContain('Times out after 10m; then answers “Reject”.');
    expect(container.querySelector('textarea')).toBeNull();
  });

  it('styles the agent\'s options by what they grant', async () => {
    const { host } = hostWithSpy();
    await renderPermission(host);
    const shown = buttons().map((b) => [b.textContent, b.getAttribute('data-kind'), b.className.split(' ').at(-1)]);
    expect(shown).toEqual([
      ['1Always Allow', 'allow_always', 'question__option--allow'],
      ['2Allow', 'allow_once', 'question__option--allow'],
      ['3Reject', 'reject_once', 'question__option--reject'],
    ]);
    expect(buttons()[0]!.title).toBe('Allow this call and ones like it from now on');
  });

  it('answers with the option label, by click or by its number', async () => {
    const { host, questionAnswer } = hostWithSpy();
    await renderPermission(host);
    await act(async () => window.dispatchEvent(new KeyboardEvent('keydown', { key: '3' })));
    await settle();
    expect(questionAnswer).toHaveBeenCalledWith('q2', { label: 'Reject' });
    expect(container.textContent).toContain('Answered: Reject');
  });

  it('shows an input without a command open, and no paths when none are named', async () => {
    const { host } = hostWithSpy();
    const fetch = {
      ...PERMISSION_QUESTION,
      text: 'claude asks permission: Fetch the docs',
      permission: {
        ...PERMISSION_QUESTION.permission!,
        tool_kind: 'fetch',
        title: 'Fetch the docs',
        locations: [],
        command: null,
        input: '{\n  "url": "https://docs.rs"\n}',
      },
    };
    await renderPermission(host, fetch);
    expect(container.querySelector('[data-testid=permission-paths]')).toBeNull();
    expect(container.querySelector('[data-testid=permission-command]')).toBeNull();
    expect(container.querySelector('.permission__what')?.textContent).toContain('claude wants to fetch from the network.');
    const input = container.querySelector('[data-testid=permission-input]')!;
    expect(input.textContent).toContain('https://docs.rs');
    expect(input.closest('details')?.open).toBe(true);
  });
});
