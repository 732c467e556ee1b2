import { useEffect, useState } from 'react';

import { api, type Host } from '../api';
import { Header } from '../components/Header';
import { VersionLine, type VersionState } from './VersionLine';

/** The app shell. `host` is injectable so tests can hand in their own. */
export function App({ host = api }: { host?: Host }) {
  const [version, setVersion] = useState<VersionState>({ status: 'loading' });

  useEffect(() => {
    let live = true;
    host.appVersion().then(
      (v) => live && setVersion({ status: 'ready', version: v }),
      (e: unknown) => live && setVersion({ status: 'failed', message: String(e) }),
    );
    return () => {
      live = false;
    };
  }, [host]);

  return (
    <div className="shell">
      <Header />
      <main className="content">
        <VersionLine state={version} />
      </main>
    </div>
  );
}
