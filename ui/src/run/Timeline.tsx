import { useLayoutEffect, useRef, useState, type RefObject } from 'react';

import { formatDuration } from '../format';
import type { Timeline } from './derive';

/**
 * Where a bar's name is drawn: inside the bar, beside it (after or before)
 * when the bar is too narrow and the lane has room there, else only in the
 * bar's tooltip and accessible name (every bar has both).
 */
export type LabelPlace = 'inside' | 'after' | 'before' | 'tooltip';

/** A bar's extent and its name's width, in pixels along the track. */
export interface LabelBox {
  left: number;
  width: number;
  label: number;
}

/** Horizontal padding plus border of a bar (run.css), around a name drawn inside. */
const BAR_INSET_PX = 10;
/** Space between a name drawn beside a bar and the bars or names around it. */
const LABEL_GAP_PX = 4;
/** Used where there is no canvas to measure with (unit tests): about 11 px text. */
const ESTIMATED_CHAR_PX = 7;
/**
 * The most tool-call ticks drawn on one bar (its latest): beyond a few
 * hundred they are thinner than a pixel apart, and each is a DOM node.
 */
const TICKS_PER_BAR_MAX = 1_000;

/**
 * Places the names of one lane's bars. A name goes inside its bar when it
 * fits, so it is never squeezed or clipped; otherwise after the bar if the
 * gap to the next bar (or the track's end) holds it, else before the bar if
 * the gap since the previous bar (and any name drawn beside it) does, else
 * only in the tooltip. Returned in the order of `bars`.
 */
export function placeLabels(bars: readonly LabelBox[], trackPx: number): LabelPlace[] {
  const places: LabelPlace[] = bars.map(() => 'inside');
  const order = bars.map((_, i) => i).sort((a, b) => bars[a]!.left - bars[b]!.left);
  // Where the space no earlier bar or name takes begins.
  let free = 0;
  order.forEach((i, k) => {
    const bar = bars[i]!;
    const end = bar.left + bar.width;
    const next = k + 1 < order.length ? bars[order[k + 1]!]!.left : trackPx;
    const room = bar.label + 2 * LABEL_GAP_PX;
    let place: LabelPlace = 'tooltip';
    if (bar.label + BAR_INSET_PX <= bar.width) place = 'inside';
    else if (next - end >= room) place = 'after';
    else if (bar.left - free >= room) place = 'before';
    places[i] = place;
    free = Math.max(free, place === 'after' ? end + LABEL_GAP_PX + bar.label : end);
  });
  return places;
}

let canvas: CanvasRenderingContext2D | null | undefined;

/** The width of `text` drawn in `font` (a CSS shorthand), by canvas where there is one. */
function textWidth(text: string, font: string): number {
  if (canvas === undefined) {
    try {
      canvas = document.createElement('canvas').getContext('2d');
    } catch {
      canvas = null;
    }
  }
  if (!canvas || !font) return text.length * ESTIMATED_CHAR_PX;
  canvas.font = font;
  return canvas.measureText(text).width;
}

/**
 * The lanes' track width in pixels (0 until laid out) and the bars' font,
 * re-measured when the timeline is resized.
 */
function useTrackMetrics(ref: RefObject<HTMLDivElement | null>, lanes: number): { trackPx: number; font: string } {
  const [metrics, setMetrics] = useState({ trackPx: 0, font: '' });
  useLayoutEffect(() => {
    const track = ref.current?.querySelector<HTMLElement>('.timeline__track');
    if (!track) return;
    const measure = () => {
      const bar = ref.current?.querySelector('.timeline__bar');
      const font = bar ? getComputedStyle(bar).font : '';
      setMetrics((m) => (m.trackPx === track.clientWidth && m.font === font ? m : { trackPx: track.clientWidth, font }));
    };
    measure();
    if (typeof ResizeObserver !== 'function') return;
    const observer = new ResizeObserver(measure);
    observer.observe(track);
    return () => observer.disconnect();
  }, [ref, lanes]);
  return metrics;
}

/**
 * One bar per stage attempt, positioned by time; the main line and each
 * parallel branch in its own lane. A bar too short for its name shows it
 * beside the bar or, without room there, in its tooltip (`placeLabels`).
 * An agent stage's tool calls are ticks along the foot of its bar, each as
 * long as the call took, with the tool and its summary in the tooltip.
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
  const ref = useRef<HTMLDivElement>(null);
  const { trackPx, font } = useTrackMetrics(ref, timeline.lanes.length);
  if (timeline.lanes.length === 0) return <p className="muted">No stages yet.</p>;
  const span = timeline.end - timeline.start;
  return (
    <div className="timeline" data-testid="timeline" ref={ref}>
      {timeline.lanes.map((lane) => {
        const bars = lane.bars.map((bar) => {
          const left = ((bar.start - timeline.start) / span) * 100;
          const width = Math.max(((bar.end - bar.start) / span) * 100, 0.4);
          const name = `${bar.node}${bar.visit > 1 ? `@${bar.visit}` : ''}`;
          return { bar, left, width, name };
        });
        // Until the track is laid out there is nothing to measure against.
        const places =
          trackPx > 0
            ? placeLabels(
                bars.map((b) => ({ left: (b.left / 100) * trackPx, width: (b.width / 100) * trackPx, label: textWidth(b.name, font) })),
                trackPx,
              )
            : bars.map((): LabelPlace => 'inside');
        return (
          <div className="timeline__lane" key={lane.branch ?? '(main)'} data-branch={lane.branch ?? ''}>
            <span className="timeline__lane-name">{lane.branch ?? 'main'}</span>
            <div className="timeline__track">
              {bars.map(({ bar, left, width, name }, i) => {
                const isSelected = selected?.node === bar.node && selected.visit === bar.visit;
                const summary = `${name} attempt ${bar.attempt}: ${bar.status}, ${formatDuration(bar.end - bar.start)}`;
                return (
                  <button
                    type="button"
                    key={`${bar.node}@${bar.visit}#${bar.attempt}`}
                    className={`timeline__bar timeline__bar--${bar.status} timeline__bar--label-${places[i]}${isSelected ? ' timeline__bar--selected' : ''}`}
                    style={{ left: `${left}%`, width: `${width}%` }}
                    title={summary}
                    aria-label={summary}
                    data-node={bar.node}
                    onClick={() => onSelect(bar.node, bar.visit)}
                  >
                    <span>{name}</span>
                  </button>
                );
              })}
              {bars.flatMap(({ bar }) =>
                bar.ticks.slice(-TICKS_PER_BAR_MAX).map((tick, i) => {
                  const end = tick.end ?? bar.end;
                  const what = `${bar.node}: ${tick.tool} ${tick.summary}`.trim();
                  const title = `${what} (${tick.end == null ? 'running' : formatDuration(end - tick.start)}${tick.failed ? ', error' : ''})`;
                  return (
                    <span
                      key={`${bar.node}@${bar.visit}#${bar.attempt}/${i}`}
                      className={`timeline__tick${tick.failed ? ' timeline__tick--failed' : ''}`}
                      data-testid="tool-tick"
                      data-node={bar.node}
                      style={{ left: `${((tick.start - timeline.start) / span) * 100}%`, width: `${((end - tick.start) / span) * 100}%` }}
                      title={title}
                      onClick={() => onSelect(bar.node, bar.visit)}
                    />
                  );
                }),
              )}
            </div>
          </div>
        );
      })}
    </div>
  );
}
