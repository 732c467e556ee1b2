import type { Host } from '../api';
import type { Route } from '../app/route';

/** Placeholder until this screen is built. */
export function RunScreen(_props: { host: Host; route: Extract<Route, { screen: 'run' }> }) {
  return <p className="muted">Coming soon.</p>;
}
