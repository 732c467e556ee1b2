import { Logo } from './Logo';

/** The app bar: logo and name. */
export function Header() {
  return (
    <header className="header">
      <Logo />
      <h1 className="header__name">Weft</h1>
    </header>
  );
}
