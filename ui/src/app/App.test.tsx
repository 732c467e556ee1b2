// @vitest-environment happy-dom
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import type { DeepLink, Host } from '../api';
import { makeTestHost } from '../api/testHost';
import { cleanup, render } from '../render.test-helper';
import { App } from './App';

describe('the app shell', () => {
  afterEach(() => {
    cleanup();
    window.location.hash = '';
  });

  it('opens the link a later start of the app hands over', async () => {
    // What src-tauri's single-instance hand-over does: the running app is
    // told to open a link while it shows something else.
    let open: ((link: DeepLink) => void) | null = null;
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
    await render(<App host={host} />);
    expect(open).not.toBeNull();

    await act(async () => open?.({ path: 'run/01RUN/stage/build%20step@2/output' }));
    expect(window.location.hash).toBe('#/run/01RUN/stage/build%20step@2/output');

    cleanup();
    expect(unsubscribed, 'closing the shell stops listening').toBe(true);
  });

  it('opens the link the app was started with', async () => {
    const host: Host = {
      ...makeTestHost(),
      initialRoute: () => Promise.resolve({ path: 'run/01RUN/question/Q1' }),
    };
    await render(<App host={host} />);
    expect(window.location.hash).toBe('#/run/01RUN/question/Q1');
  });
});
