// @vitest-environment happy-dom
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { Host } from '../api';
import { makeTestHost } from '../api/testHost';
import { QUESTION } from '../run/fixture.test-data';
import { QuestionPanel } from './QuestionPanel';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
let container: HTMLDivElement;

afterEach(() => {
  act(() => root?.unmount());
  container?.remove();
});

function hostWithSpy(answer?: Host['questionAnswer']) {
  const base = makeTestHost({ views: [], events: {}, stageFiles: {}, questions: [QUESTION], artifacts: {} });
  const questionAnswer = vi.fn(answer ?? base.questionAnswer);
  return { host: { ...base, questionAnswer } as Host, questionAnswer };
}

async function render(host: Host) {
  container = document.createElement('div');
  document.body.append(container);
  root = createRoot(container);
  await act(async () => root?.render(<QuestionPanel host={host} question={QUESTION} timeout="15m" defaultChoice="[H] Hold" />));
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
});
