// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import { renderNow } from '../render.test-helper';
import { timelineOf } from './derive';
import { FAILED_EVENTS, FAILED_STAGES } from './fixture.test-data';
import { placeLabels, TimelineView } from './Timeline';

describe('placeLabels', () => {
  it('keeps a name inside a bar wide enough for it', () => {
    expect(placeLabels([{ left: 0, width: 200, label: 40 }], 400)).toEqual(['inside']);
  });

  it('puts the name of a short bar after it when the gap to the next bar holds it', () => {
    const bars = [
      { left: 0, width: 3, label: 40 },
      { left: 60, width: 300, label: 40 },
    ];
    expect(placeLabels(bars, 400)).toEqual(['after', 'inside']);
  });

  it('puts the name of a short bar at the end of the track before it', () => {
    const bars = [
      { left: 0, width: 300, label: 40 },
      { left: 397, width: 3, label: 40 },
    ];
    expect(placeLabels(bars, 400)).toEqual(['inside', 'before']);
  });

  it('leaves the name to the tooltip when neither side has room: a fast stage right before a long one', () => {
    const bars = [
      { left: 0, width: 2, label: 30 },
      { left: 2, width: 398, label: 40 },
    ];
    expect(placeLabels(bars, 400)).toEqual(['tooltip', 'inside']);
  });

  it('gives a gap to one name only', () => {
    // Both short bars want the 60 px between them; the first takes it.
    const bars = [
      { left: 0, width: 2, label: 40 },
      { left: 62, width: 2, label: 40 },
      { left: 64, width: 336, label: 40 },
    ];
    expect(placeLabels(bars, 400)).toEqual(['after', 'tooltip', 'inside']);
  });

  it('places by position, whatever order the bars come in', () => {
    const bars = [
      { left: 397, width: 3, label: 40 },
      { left: 0, width: 300, label: 40 },
    ];
    expect(placeLabels(bars, 400)).toEqual(['before', 'inside']);
  });
});

describe('TimelineView', () => {
  it("names every bar's node, attempt, status and duration in its tooltip and accessible name", () => {
    const timeline = timelineOf(FAILED_STAGES, FAILED_EVENTS, 0);
    const container = renderNow(<TimelineView timeline={timeline} selected={null} onSelect={() => {}} />);
    const bars = [...container.querySelectorAll('.timeline__bar')].map((b) => [b.getAttribute('title'), b.getAttribute('aria-label')]);
    expect(bars).toEqual([
      ['start attempt 1: succeeded, 0.0s', 'start attempt 1: succeeded, 0.0s'],
      ['build attempt 1: retried, 4.0s', 'build attempt 1: retried, 4.0s'],
      ['build attempt 2: succeeded, 5.0s', 'build attempt 2: succeeded, 5.0s'],
      ['push attempt 1: failed, 2.0s', 'push attempt 1: failed, 2.0s'],
    ]);
  });
});
