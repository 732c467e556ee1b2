import type { Host } from '../api';

/** Placeholder until this screen is built. */
export function RunsScreen(_props: { host: Host }) {
  return <p className="muted">Coming soon.</p>;
}
