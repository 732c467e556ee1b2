import { useLayoutEffect, useRef, useState, type RefObject, type UIEvent } from 'react';

import { virtualWindow, type VirtualWindow } from '../components/virtualWindow';

/**
 * A fixed-row-height list windowed like the runs list: the rows in view
 * (`virtualWindow`) of a viewport measured once laid out, `fallbackHeight`
 * until then (and where nothing is laid out, as in tests).
 */
export function useVirtualList(
  rowHeight: number,
  total: number,
  fallbackHeight: number,
  overscan = 20,
): {
  viewport: RefObject<HTMLDivElement | null>;
  window: VirtualWindow;
  onScroll: (e: UIEvent<HTMLElement>) => void;
  scrollTo: (index: number) => void;
} {
  const viewport = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(fallbackHeight);
  useLayoutEffect(() => {
    const el = viewport.current;
    if (el?.clientHeight) setHeight(el.clientHeight);
  }, []);
  return {
    viewport,
    window: virtualWindow(scrollTop, height, rowHeight, total, overscan),
    onScroll: (e) => setScrollTop(e.currentTarget.scrollTop),
    scrollTo: (index) => {
      const top = index * rowHeight;
      if (viewport.current) viewport.current.scrollTop = top;
      setScrollTop(top);
    },
  };
}
