import type { Smoothness } from '../api/host';
import './retros.css';

/** A retro's rating as a coloured badge; "no rating" when the narrative is missing. */
export function RetroBadge({ smoothness }: { smoothness: Smoothness | null | undefined }) {
  const rating = smoothness ?? 'none';
  return (
    <span className={`retro-badge retro-badge--${rating}`} data-rating={rating}>
      {smoothness ?? 'no rating'}
    </span>
  );
}
