/** What the app knows about its own version so far. */
export type VersionState =
  | { status: 'loading' }
  | { status: 'ready'; version: string }
  | { status: 'failed'; message: string };

/** The muted line under the header naming the running version. */
export function VersionLine({ state }: { state: VersionState }) {
  switch (state.status) {
    case 'loading':
      return <p className="muted" aria-busy="true">Version …</p>;
    case 'ready':
      return (
        <p className="muted" data-testid="app-version">
          Version {state.version}
        </p>
      );
    case 'failed':
      return (
        <p className="error" role="alert">
          Could not read the app version: {state.message}
        </p>
      );
  }
}
