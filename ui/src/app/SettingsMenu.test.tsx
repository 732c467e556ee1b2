// @vitest-environment happy-dom
import { act } from 'react';
import { describe, expect, it } from 'vitest';

import type { Host } from '../api';
import { makeTestHost } from '../api/testHost';
import { render as mount } from '../render.test-helper';
import { SettingsMenu } from './SettingsMenu';

describe('the Settings menu', () => {
  let container: HTMLElement | null = null;

  async function render(host: Host) {
    container = await mount(<SettingsMenu host={host} />);
  }

  function box(name: string): HTMLInputElement {
    const input = container?.querySelector<HTMLInputElement>(`input[name="${name}"]`);
    if (!input) throw new Error(`no ${name} checkbox`);
    return input;
  }

  async function click(name: string) {
    await act(async () => box(name).click());
  }

  it('shows the saved settings and saves a toggled one', async () => {
    const host = makeTestHost();
    await render(host);
    expect(box('keep_in_tray').checked, 'on by default').toBe(true);
    expect(box('start_at_login').checked, 'off by default').toBe(false);

    await click('start_at_login');
    expect(box('start_at_login').checked).toBe(true);
    expect(await host.appSettings()).toEqual({ keep_in_tray: true, start_at_login: true });

    await click('keep_in_tray');
    expect(await host.appSettings()).toEqual({ keep_in_tray: false, start_at_login: true });
  });

  it('pauses and resumes notifications through the daemon', async () => {
    let paused = false;
    const asked: Array<boolean | null | undefined> = [];
    const host: Host = {
      ...makeTestHost(),
      notificationsPause: (next) => {
        asked.push(next);
        if (next != null) paused = next;
        return Promise.resolve({ paused });
      },
    };
    await render(host);
    expect(box('pause_notifications').disabled).toBe(false);
    expect(box('pause_notifications').checked).toBe(false);

    await click('pause_notifications');
    expect(box('pause_notifications').checked).toBe(true);
    await click('pause_notifications');
    expect(box('pause_notifications').checked).toBe(false);
    expect(asked).toEqual([undefined, true, false]);
  });

  it('says weftd must run to pause notifications when it does not', async () => {
    await render(makeTestHost());
    expect(box('pause_notifications').disabled).toBe(true);
    expect(container?.textContent).toContain('weftd is not running');
  });

  it('says why a setting could not be saved', async () => {
    const host: Host = {
      ...makeTestHost(),
      setAppSettings: () => Promise.reject({ code: 'app.error', message: 'cannot change /x/weft.desktop' }),
    };
    await render(host);
    await click('start_at_login');
    expect(container?.querySelector('[role="alert"]')?.textContent).toBe('cannot change /x/weft.desktop');
    expect(box('start_at_login').checked, 'the box shows what is saved').toBe(false);
  });
});
