import type { ReactNode } from 'react';

import { Logo } from './Logo';

/** The app bar: logo and name, and at its end whatever the app puts there (settings). */
export function Header({ children }: { children?: ReactNode }) {
  return (
    <header className="header">
      <Logo />
      <h1 className="header__name">Weft</h1>
      {children && <div className="header__end">{children}</div>}
    </header>
  );
}
