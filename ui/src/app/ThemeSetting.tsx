import { THEMES, useTheme, type Theme } from './theme';

const NAMES: Record<Theme, string> = { system: 'System', light: 'Light', dark: 'Dark' };

/** The Theme setting in the app bar: System (following the OS, whose scheme it names), Light or Dark. */
export function ThemeSetting() {
  const { theme, scheme, osScheme, setTheme } = useTheme();
  return (
    <label className="theme-setting" data-testid="theme-setting" data-scheme={scheme}>
      Theme
      <select value={theme} onChange={(e) => setTheme(THEMES.find((t) => t === e.target.value) ?? 'system')}>
        {THEMES.map((t) => (
          <option key={t} value={t}>
            {t === 'system' ? `${NAMES.system} (${osScheme})` : NAMES[t]}
          </option>
        ))}
      </select>
    </label>
  );
}
