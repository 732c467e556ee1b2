// @vitest-environment happy-dom
import { act } from 'react';
import { beforeEach, describe, expect, it } from 'vitest';

import { cleanup, renderNow } from '../render.test-helper';
import { applyTheme, saveTheme, schemeOf, storedTheme, THEME_KEY } from './theme';
import { ThemeSetting } from './ThemeSetting';

/** An OS colour scheme the test can switch, standing in for `matchMedia`. */
function fakeOs(dark: boolean) {
  const listeners = new Set<() => void>();
  const query = {
    get matches() {
      return dark;
    },
    media: '(prefers-color-scheme: dark)',
    addEventListener: (_: string, f: () => void) => listeners.add(f),
    removeEventListener: (_: string, f: () => void) => listeners.delete(f),
  };
  window.matchMedia = ((media: string) => {
    if (media !== query.media) throw new Error(`unexpected query ${media}`);
    return query as unknown as MediaQueryList;
  }) as typeof window.matchMedia;
  return {
    switchTo(next: boolean) {
      dark = next;
      act(() => listeners.forEach((f) => f()));
    },
  };
}

let container: HTMLElement;

beforeEach(() => {
  localStorage.clear();
  delete document.documentElement.dataset.theme;
});

function renderSetting() {
  container = renderNow(<ThemeSetting />);
  const select = container.querySelector('select')!;
  const choose = (value: string) =>
    act(() => {
      select.value = value;
      select.dispatchEvent(new Event('change', { bubbles: true }));
    });
  const systemOption = () => select.querySelector('option[value=system]')!.textContent;
  const scheme = () => container.querySelector('[data-testid=theme-setting]')!.getAttribute('data-scheme');
  return { select, choose, systemOption, scheme };
}

describe('the theme setting', () => {
  it('follows the OS by default, with no data-theme on the page', () => {
    fakeOs(true);
    const { select, systemOption, scheme } = renderSetting();
    expect(select.value).toBe('system');
    expect(document.documentElement.dataset.theme).toBeUndefined();
    expect(systemOption()).toBe('System (dark)');
    expect(scheme()).toBe('dark');
  });

  it('sets data-theme on the page when Light or Dark is chosen, and removes it for System', () => {
    fakeOs(false);
    const { choose, scheme } = renderSetting();
    choose('dark');
    expect(document.documentElement.dataset.theme).toBe('dark');
    expect(scheme()).toBe('dark');
    choose('light');
    expect(document.documentElement.dataset.theme).toBe('light');
    choose('system');
    expect(document.documentElement.dataset.theme).toBeUndefined();
    expect(scheme()).toBe('light');
  });

  it('is saved and chosen again on the next start', () => {
    fakeOs(false);
    renderSetting().choose('dark');
    expect(localStorage.getItem(THEME_KEY)).toBe('dark');
    cleanup();
    delete document.documentElement.dataset.theme;

    const again = renderSetting();
    expect(again.select.value).toBe('dark');
    expect(document.documentElement.dataset.theme).toBe('dark');
  });

  it('while on System, follows the OS switching scheme', () => {
    const os = fakeOs(false);
    const { systemOption, scheme } = renderSetting();
    expect(scheme()).toBe('light');
    os.switchTo(true);
    expect(scheme()).toBe('dark');
    expect(systemOption()).toBe('System (dark)');
    expect(document.documentElement.dataset.theme).toBeUndefined();
  });

  it('keeps a chosen scheme when the OS switches', () => {
    const os = fakeOs(true);
    const { choose, scheme } = renderSetting();
    choose('light');
    os.switchTo(false);
    os.switchTo(true);
    expect(scheme()).toBe('light');
    expect(document.documentElement.dataset.theme).toBe('light');
  });
});

describe('the stored theme', () => {
  it('reads System when nothing, or something that is not a theme, is saved', () => {
    expect(storedTheme(localStorage)).toBe('system');
    localStorage.setItem(THEME_KEY, 'sepia');
    expect(storedTheme(localStorage)).toBe('system');
  });

  it('survives a storage that refuses to be read or written', () => {
    const refusing = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('quota');
      },
    };
    expect(storedTheme(refusing)).toBe('system');
    expect(() => saveTheme('dark', refusing)).not.toThrow();
  });

  it('applies to the element it is given and names the scheme each setting shows', () => {
    const el = document.createElement('html');
    applyTheme('dark', el);
    expect(el.dataset.theme).toBe('dark');
    applyTheme('system', el);
    expect(el.hasAttribute('data-theme')).toBe(false);
    expect(schemeOf('system', true)).toBe('dark');
    expect(schemeOf('light', true)).toBe('light');
  });
});
