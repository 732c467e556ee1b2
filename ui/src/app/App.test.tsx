// @vitest-environment happy-dom
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it } from 'vitest';

import type { Host, InitialRoute } from '../api';
import { makeTestHost } from '../api/testHost';
import { App } from './App';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

describe('the app shell', () => {
  let root: Root | null = null;
  let container: HTMLElement | null = null;
  afterEach(() => {
    act(() => root?.unmount());
    container?.remove();
    window.location.hash = '';
  });

  it('opens the question a later start of the app hands over', async () => {
    // What src-tauri's single-instance hand-over does: the running app is
    // told to open a route while it shows something else.
    let open: ((route: InitialRoute) => void) | null = null;
    let unsubscribed = false;
    const host: Host = {
      ...makeTestHost(),
      onOpenRoute: (handler) => {
        open = handler;
        return Promise.resolve(() => {
          unsubscribed = true;
        });
      },
    };
    window.location.hash = '#/launch';
    container = document.createElement('div');
    document.body.append(container);
    root = createRoot(container);
    await act(async () => root?.render(<App host={host} />));
    expect(open).not.toBeNull();

    await act(async () => open?.({ run: '01RUN', question: 'q_1' }));
    expect(window.location.hash).toBe('#/run/01RUN/question/q_1');

    act(() => root?.unmount());
    root = null;
    expect(unsubscribed, 'closing the shell stops listening').toBe(true);
  });
});
