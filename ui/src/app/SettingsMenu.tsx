import { useEffect, useState } from 'react';

import type { AppError, AppSettings, Host } from '../api';

/** Whether weftd's notifications are paused, or why that cannot be said. */
type Pause = { status: 'loading' } | { status: 'known'; paused: boolean } | { status: 'no_daemon' };

function message(e: unknown): string {
  const error = e as Partial<AppError> | null;
  return typeof error?.message === 'string' ? error.message : String(e);
}

/**
 * The app's Settings menu in the app bar: keep running in the tray while
 * runs are active, start at login, and pausing weftd's notifications (which
 * lives in weftd, so it needs weftd running).
 */
export function SettingsMenu({ host }: { host: Host }) {
  const [settings, setSettings] = useState<AppSettings | null>(null);
  const [pause, setPause] = useState<Pause>({ status: 'loading' });
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    host.appSettings().then(
      (s) => live && setSettings(s),
      (e: unknown) => live && setError(message(e)),
    );
    host.notificationsPause().then(
      (state) => live && setPause({ status: 'known', paused: state.paused }),
      () => live && setPause({ status: 'no_daemon' }),
    );
    return () => {
      live = false;
    };
  }, [host]);

  const save = (next: AppSettings) => {
    setError(null);
    host.setAppSettings(next).then(setSettings, (e: unknown) => setError(message(e)));
  };
  const togglePause = (paused: boolean) => {
    setError(null);
    host.notificationsPause(paused).then(
      (state) => setPause({ status: 'known', paused: state.paused }),
      (e: unknown) => setError(message(e)),
    );
  };

  return (
    <details className="settings-menu" data-testid="settings-menu">
      <summary>Settings</summary>
      <div className="settings-panel">
        <label>
          <input
            type="checkbox"
            name="keep_in_tray"
            disabled={settings === null}
            checked={settings?.keep_in_tray ?? false}
            onChange={(e) => settings && save({ ...settings, keep_in_tray: e.target.checked })}
          />
          Keep running in the tray when runs are active
        </label>
        <label>
          <input
            type="checkbox"
            name="start_at_login"
            disabled={settings === null}
            checked={settings?.start_at_login ?? false}
            onChange={(e) => settings && save({ ...settings, start_at_login: e.target.checked })}
          />
          Start at login (in the tray)
        </label>
        <label>
          <input
            type="checkbox"
            name="pause_notifications"
            disabled={pause.status !== 'known'}
            checked={pause.status === 'known' && pause.paused}
            onChange={(e) => togglePause(e.target.checked)}
          />
          Pause notifications
        </label>
        {pause.status === 'no_daemon' && (
          <p className="settings-note">weftd is not running: it alone sends notifications.</p>
        )}
        {error !== null && (
          <p className="settings-error" role="alert">
            {error}
          </p>
        )}
      </div>
    </details>
  );
}
