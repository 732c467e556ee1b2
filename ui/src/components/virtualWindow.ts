/**
 * The rows a fixed-row-height virtual list renders: those intersecting the
 * viewport plus `overscan` on each side, clamped to `[0, total)`. `end` is
 * exclusive; an empty list (or viewport) gives an empty window.
 */
export interface VirtualWindow {
  start: number;
  end: number;
}

export function virtualWindow(
  scrollTop: number,
  viewportHeight: number,
  rowHeight: number,
  total: number,
  overscan: number,
): VirtualWindow {
  if (total <= 0 || rowHeight <= 0 || viewportHeight <= 0) return { start: 0, end: 0 };
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const visible = Math.ceil(viewportHeight / rowHeight) + 1;
  const start = Math.min(Math.max(0, first - overscan), total);
  const end = Math.min(total, first + visible + overscan);
  return { start, end: Math.max(start, end) };
}

/** The pages (of `pageSize` rows) a window needs loaded. */
export function pagesFor(window: VirtualWindow, pageSize: number): number[] {
  if (window.end <= window.start) return [];
  const pages: number[] = [];
  for (let p = Math.floor(window.start / pageSize); p <= Math.floor((window.end - 1) / pageSize); p += 1) {
    pages.push(p);
  }
  return pages;
}

/**
 * The scrollTop that brings row `index` fully into view, or `scrollTop`
 * unchanged when it already is (keyboard selection).
 */
export function scrollToShow(index: number, scrollTop: number, viewportHeight: number, rowHeight: number): number {
  const top = index * rowHeight;
  if (top < scrollTop) return top;
  if (top + rowHeight > scrollTop + viewportHeight) return top + rowHeight - viewportHeight;
  return scrollTop;
}
