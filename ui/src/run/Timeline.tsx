import { formatDuration, type Timeline } from './derive';

/**
 * One bar per stage attempt, positioned by time; the main line and each
 * parallel branch in its own lane.
 */
export function TimelineView({
  timeline,
  selected,
  onSelect,
}: {
  timeline: Timeline;
  selected: { node: string; visit: number } | null;
  onSelect: (node: string, visit: number) => void;
}) {
  if (timeline.lanes.length === 0) return <p className="muted">No stages yet.</p>;
  const span = timeline.end - timeline.start;
  return (
    <div className="timeline" data-testid="timeline">
      {timeline.lanes.map((lane) => (
        <div className="timeline__lane" key={lane.branch ?? '(main)'} data-branch={lane.branch ?? ''}>
          <span className="timeline__lane-name">{lane.branch ?? 'main'}</span>
          <div className="timeline__track">
            {lane.bars.map((bar) => {
              const left = ((bar.start - timeline.start) / span) * 100;
              const width = Math.max(((bar.end - bar.start) / span) * 100, 0.4);
              const name = `${bar.node}${bar.visit > 1 ? `@${bar.visit}` : ''}`;
              const isSelected = selected?.node === bar.node && selected.visit === bar.visit;
              return (
                <button
                  type="button"
                  key={`${bar.node}@${bar.visit}#${bar.attempt}`}
                  className={`timeline__bar timeline__bar--${bar.status}${isSelected ? ' timeline__bar--selected' : ''}`}
                  style={{ left: `${left}%`, width: `${width}%` }}
                  title={`${name} attempt ${bar.attempt}: ${bar.status}, ${formatDuration(bar.end - bar.start)}`}
                  aria-label={`${name} attempt ${bar.attempt}, ${bar.status}`}
                  data-node={bar.node}
                  onClick={() => onSelect(bar.node, bar.visit)}
                >
                  <span>{name}</span>
                </button>
              );
            })}
          </div>
        </div>
      ))}
    </div>
  );
}
