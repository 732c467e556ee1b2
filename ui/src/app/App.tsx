import { lazy, Suspense, useEffect, useState } from 'react';

import { api, type Host } from '../api';
import { Header } from '../components/Header';
import { warmLayout } from '../graph/layout';
import { RunsScreen } from '../runs/RunsScreen';
import { parseRoute, type Route } from './route';
import { SettingsMenu } from './SettingsMenu';
import { ThemeSetting } from './ThemeSetting';
import { VersionLine, type VersionState } from './VersionLine';

// Only the runs list, the usual first screen, is in the start's script: the
// other screens are loaded on first use or, at the latest, while the user
// reads the list (`warmScreens`). Parsing and compiling them at start cost
// the first rows time on a slow machine (docs/performance.md).
const loadRunScreen = () => import('../run/RunScreen');
const loadGatesScreen = () => import('../gates/GatesScreen');
const loadLaunchScreen = () => import('../launch/LaunchScreen');
const loadSpendingScreen = () => import('../spending/SpendingScreen');
const loadRetrosScreen = () => import('../retros/RetrosScreen');
const RunScreen = lazy(() => loadRunScreen().then((m) => ({ default: m.RunScreen })));
const GatesScreen = lazy(() => loadGatesScreen().then((m) => ({ default: m.GatesScreen })));
const LaunchScreen = lazy(() => loadLaunchScreen().then((m) => ({ default: m.LaunchScreen })));
const SpendingScreen = lazy(() => loadSpendingScreen().then((m) => ({ default: m.SpendingScreen })));
const RetrosScreen = lazy(() => loadRetrosScreen().then((m) => ({ default: m.RetrosScreen })));

/** Loads every screen's script ahead of need; never rejects. */
function warmScreens(): void {
  for (const load of [loadRunScreen, loadGatesScreen, loadLaunchScreen, loadSpendingScreen, loadRetrosScreen]) {
    load().catch(() => {});
  }
}

/** How long after start Graphviz and the other screens are readied: after the first screen, not competing with it. */
const LAYOUT_WARM_DELAY_MS = 1_500;

/** The current route, following the URL hash. */
function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** The app shell. `host` is injectable so tests can hand in their own. */
export function App({ host = api }: { host?: Host }) {
  const [version, setVersion] = useState<VersionState>({ status: 'loading' });
  const route = useRoute();

  useEffect(() => {
    let live = true;
    host.appVersion().then(
      (v) => live && setVersion({ status: 'ready', version: v }),
      (e: unknown) => live && setVersion({ status: 'failed', message: String(e) }),
    );
    // Started with a deep link (a gate's notification, `weft open`): go
    // straight there. The link's path is the hash's (docs/app.md).
    host.initialRoute().then(
      (start) => {
        if (live && start) {
          window.location.hash = '#/' + start.path;
        }
      },
      () => {},
    );
    return () => {
      live = false;
    };
  }, [host]);

  // Ready Graphviz while the user reads the first screen, not when a run opens.
  useEffect(() => {
    const timer = setTimeout(() => {
      warmScreens();
      void warmLayout();
    }, LAYOUT_WARM_DELAY_MS);
    return () => clearTimeout(timer);
  }, []);

  // A link while the app is open (a later start hands it over): the
  // running window opens it.
  useEffect(() => {
    if (!host.onOpenRoute) return;
    let stop: (() => void) | null = null;
    let live = true;
    host
      .onOpenRoute((link) => {
        window.location.hash = '#/' + link.path;
      })
      .then(
        (unsubscribe) => (live ? (stop = unsubscribe) : unsubscribe()),
        () => {},
      );
    return () => {
      live = false;
      stop?.();
    };
  }, [host]);

  return (
    <div className="shell">
      <Header>
        <ThemeSetting />
        <SettingsMenu host={host} />
      </Header>
      <nav className="nav" aria-label="Screens">
        <a href="#/runs" aria-current={route.screen === 'runs' || route.screen === 'run' ? 'page' : undefined}>
          Runs
        </a>
        <a href="#/gates" aria-current={route.screen === 'gates' ? 'page' : undefined}>
          Gates
        </a>
        <a href="#/launch" aria-current={route.screen === 'launch' ? 'page' : undefined}>
          Launch
        </a>
        <a href="#/spending" aria-current={route.screen === 'spending' ? 'page' : undefined}>
          Spending
        </a>
        <a href="#/retros" aria-current={route.screen === 'retros' ? 'page' : undefined}>
          Retros
        </a>
      </nav>
      <main className="content">
        {route.screen === 'runs' && <RunsScreen host={host} />}
        {/* Keyed by screen: a screen left while the next one's script loads
            is unmounted, not kept hidden in the page behind the fallback. */}
        <Suspense key={route.screen} fallback={<p className="muted">Loading…</p>}>
          {route.screen === 'run' && <RunScreen host={host} route={route} />}
          {route.screen === 'gates' && <GatesScreen host={host} />}
          {route.screen === 'launch' && <LaunchScreen host={host} />}
          {route.screen === 'spending' && <SpendingScreen host={host} />}
          {route.screen === 'retros' && <RetrosScreen host={host} />}
        </Suspense>
        <VersionLine state={version} />
      </main>
    </div>
  );
}
