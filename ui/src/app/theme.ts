import { useCallback, useEffect, useState } from 'react';

/**
 * The Theme setting: follow the OS (`system`) or keep one scheme. The
 * palette (palette.css) does the rest: `data-theme` on <html> overrides its
 * `prefers-color-scheme` query, and is absent when following the OS.
 */
export type Theme = 'system' | 'light' | 'dark';
export type Scheme = 'light' | 'dark';

export const THEMES: readonly Theme[] = ['system', 'light', 'dark'];

/** Where the setting is kept, beside the other UI preferences (weft.recentWorkflows). */
export const THEME_KEY = 'weft.theme';

const DARK_QUERY = '(prefers-color-scheme: dark)';

type Reader = Pick<Storage, 'getItem'>;
type Writer = Pick<Storage, 'setItem'>;

/** The browser's storage, or null where there is none or it is refused. */
function defaultStorage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

/** The saved setting; `system` when none is saved or what is saved is not a theme. */
export function storedTheme(storage: Reader | null = defaultStorage()): Theme {
  try {
    const saved = storage?.getItem(THEME_KEY);
    return THEMES.find((t) => t === saved) ?? 'system';
  } catch {
    return 'system';
  }
}

/** Saves the setting; a storage that refuses leaves it for this session only. */
export function saveTheme(theme: Theme, storage: Writer | null = defaultStorage()): void {
  try {
    storage?.setItem(THEME_KEY, theme);
  } catch {
    // Private mode or a full quota: the theme still applies until the app closes.
  }
}

/** Puts the setting on <html>, where the palette reads it. */
export function applyTheme(theme: Theme, root: HTMLElement = document.documentElement): void {
  if (theme === 'system') delete root.dataset.theme;
  else root.dataset.theme = theme;
}

/** The OS's dark-scheme query, where the page has one. */
function darkQuery(): MediaQueryList | null {
  return typeof window !== 'undefined' && typeof window.matchMedia === 'function' ? window.matchMedia(DARK_QUERY) : null;
}

/** The scheme a setting shows: its own, or for `system` the OS's. */
export function schemeOf(theme: Theme, osDark: boolean): Scheme {
  if (theme !== 'system') return theme;
  return osDark ? 'dark' : 'light';
}

/**
 * The Theme setting, applied and saved on change, and the scheme it shows,
 * following the OS while the setting is `system`.
 */
export function useTheme(): { theme: Theme; scheme: Scheme; osScheme: Scheme; setTheme: (theme: Theme) => void } {
  const [theme, setThemeState] = useState<Theme>(() => storedTheme());
  const [osDark, setOsDark] = useState(() => darkQuery()?.matches ?? false);

  useEffect(() => applyTheme(theme), [theme]);

  useEffect(() => {
    const query = darkQuery();
    if (!query) return;
    const onChange = () => setOsDark(query.matches);
    onChange();
    query.addEventListener('change', onChange);
    return () => query.removeEventListener('change', onChange);
  }, []);

  const setTheme = useCallback((next: Theme) => {
    saveTheme(next);
    setThemeState(next);
  }, []);

  return { theme, scheme: schemeOf(theme, osDark), osScheme: osDark ? 'dark' : 'light', setTheme };
}
