// The one drawing of the logo lives in the repository's icons/ folder; the
// bundler copies (or inlines) it, so the UI and the app icon never drift.
import logoUrl from '../../../icons/weft.svg';

export function Logo({ size = 32 }: { size?: number }) {
  return <img className="logo" src={logoUrl} width={size} height={size} alt="" />;
}
