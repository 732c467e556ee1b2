// @vitest-environment happy-dom
import { describe, expect, it } from 'vitest';

import { pagesFor, scrollToShow, virtualWindow } from './virtualWindow';

describe('virtualWindow', () => {
  it('renders the visible rows plus overscan at the top of the list', () => {
    // 600 px of 40 px rows shows 15 rows (16 with a partly visible one).
    expect(virtualWindow(0, 600, 40, 10_000, 5)).toEqual({ start: 0, end: 21 });
  });

  it('follows the scroll position with overscan on both sides', () => {
    // Row 100 is at the top when scrolled by 4,000 px.
    expect(virtualWindow(4_000, 600, 40, 10_000, 5)).toEqual({ start: 95, end: 121 });
  });

  it('stays bounded however long the list is', () => {
    const w = virtualWindow(123_456, 800, 44, 1_000_000, 8);
    expect(w.end - w.start).toBeLessThan(50);
  });

  it('clamps to the end of the list when scrolled to the bottom', () => {
    const total = 10_006;
    const w = virtualWindow(total * 44 - 700, 700, 44, total, 8);
    expect(w.end).toBe(total);
    expect(w.start).toBeGreaterThan(total - 30);
  });

  it('is empty for an empty list or an unmeasured viewport', () => {
    expect(virtualWindow(0, 600, 40, 0, 5)).toEqual({ start: 0, end: 0 });
    expect(virtualWindow(0, 0, 40, 100, 5)).toEqual({ start: 0, end: 0 });
  });

  it('treats overscroll (negative scrollTop) as the top', () => {
    expect(virtualWindow(-50, 400, 40, 100, 2).start).toBe(0);
  });

  it('never starts past the list when scrollTop outruns a shrunk list', () => {
    const w = virtualWindow(100_000, 400, 40, 10, 2);
    expect(w.start).toBeLessThanOrEqual(w.end);
    expect(w.end).toBeLessThanOrEqual(10);
  });
});

describe('pagesFor', () => {
  it('names each page the window touches', () => {
    expect(pagesFor({ start: 190, end: 230 }, 200)).toEqual([0, 1]);
    expect(pagesFor({ start: 0, end: 21 }, 200)).toEqual([0]);
    expect(pagesFor({ start: 0, end: 0 }, 200)).toEqual([]);
  });
});

describe('scrollToShow', () => {
  it('leaves the scroll alone when the row is visible', () => {
    expect(scrollToShow(5, 0, 400, 40)).toBe(0);
  });
  it('scrolls up to a row above the viewport', () => {
    expect(scrollToShow(2, 400, 400, 40)).toBe(80);
  });
  it('scrolls down just enough to show a row below it', () => {
    // Row 12 spans 480-520: its bottom must reach the viewport's bottom.
    expect(scrollToShow(12, 0, 400, 40)).toBe(120);
  });
});
