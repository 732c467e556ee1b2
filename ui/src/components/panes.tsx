import { useRef, type KeyboardEvent, type PointerEvent, type ReactNode, type RefObject } from 'react';

/** One tab of a `TabList`: its id (also the panel's name in the DOM) and its label. */
export interface TabSpec<T extends string> {
  id: T;
  label: ReactNode;
  /** The digit or key that opens it, shown in its tooltip. */
  shortcut?: string;
}

/** The DOM id of tab `tab` of the tab list `group`, and of the panel it controls. */
export const tabId = (group: string, tab: string) => `${group}-tab-${tab}`;
export const panelId = (group: string) => `${group}-panel`;

/**
 * An ARIA tab list: one tab in the Tab order (the selected one), Left and
 * Right (Home, End) moving between tabs and selecting as they go, the panel
 * named by the selected tab (`TabPanel` with the same `group`).
 */
export function TabList<T extends string>({
  group,
  label,
  tabs,
  selected,
  onSelect,
  className,
}: {
  group: string;
  label: string;
  tabs: readonly TabSpec<T>[];
  selected: T;
  onSelect: (tab: T) => void;
  className?: string;
}) {
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const at = tabs.findIndex((t) => t.id === selected);
    const to =
      e.key === 'ArrowRight' ? (at + 1) % tabs.length
      : e.key === 'ArrowLeft' ? (at - 1 + tabs.length) % tabs.length
      : e.key === 'Home' ? 0
      : e.key === 'End' ? tabs.length - 1
      : null;
    if (to === null || tabs.length === 0) return;
    e.preventDefault();
    const tab = tabs[to];
    if (!tab) return;
    onSelect(tab.id);
    document.getElementById(tabId(group, tab.id))?.focus();
  };
  return (
    <div className={`tabs ${className ?? ''}`} role="tablist" aria-label={label} onKeyDown={onKeyDown}>
      {tabs.map((t) => (
        <button
          key={t.id}
          id={tabId(group, t.id)}
          type="button"
          role="tab"
          data-tab={t.id}
          aria-selected={t.id === selected}
          aria-controls={panelId(group)}
          tabIndex={t.id === selected ? 0 : -1}
          title={t.shortcut ? `Shortcut: ${t.shortcut}` : undefined}
          onClick={() => onSelect(t.id)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

/** The panel of the selected tab of `group`. */
export function TabPanel({ group, selected, className, children }: { group: string; selected: string; className?: string; children: ReactNode }) {
  return (
    <div
      id={panelId(group)}
      role="tabpanel"
      aria-labelledby={tabId(group, selected)}
      data-tab={selected}
      className={className}
      tabIndex={0}
    >
      {children}
    </div>
  );
}

/** How far one arrow press moves a splitter; with Shift, `STEP_PX * 4`. */
const STEP_PX = 24;

/**
 * A splitter between two panes (ARIA `separator`, focusable): dragging it
 * resizes `target` live and reports the size once, when let go; the arrow
 * keys (Shift for bigger steps), Home and End resize it by keyboard.
 * `grows` says which way of the pointer makes the target bigger: `right`
 * for a pane on the splitter's left, `up` for one below it.
 */
export function Splitter({
  label,
  target,
  grows,
  value,
  min,
  max,
  onResize,
  controls,
  testId,
}: {
  label: string;
  /** The DOM id of the pane it resizes. */
  controls?: string;
  target: RefObject<HTMLElement | null>;
  grows: 'right' | 'up';
  value: number;
  min: number;
  max: number;
  onResize: (size: number) => void;
  testId?: string;
}) {
  const drag = useRef<{ from: number; start: number; size: number } | null>(null);
  const horizontal = grows === 'right';
  const clamp = (n: number) => Math.round(Math.min(max, Math.max(min, n)));

  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    if (e.button !== 0) return;
    e.preventDefault();
    const box = target.current?.getBoundingClientRect();
    const start = box ? (horizontal ? box.width : box.height) : value;
    drag.current = { from: horizontal ? e.clientX : e.clientY, start, size: clamp(start) };
    e.currentTarget.setPointerCapture?.(e.pointerId);
  };
  const onPointerMove = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d) return;
    const moved = (horizontal ? e.clientX : e.clientY) - d.from;
    d.size = clamp(d.start + (horizontal ? moved : -moved));
    // Live, without a render per pixel: the size is reported when let go.
    if (target.current) target.current.style[horizontal ? 'width' : 'height'] = `${d.size}px`;
  };
  const onPointerUp = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d) return;
    drag.current = null;
    e.currentTarget.releasePointerCapture?.(e.pointerId);
    onResize(d.size);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const step = e.shiftKey ? STEP_PX * 4 : STEP_PX;
    const bigger = horizontal ? 'ArrowRight' : 'ArrowUp';
    const smaller = horizontal ? 'ArrowLeft' : 'ArrowDown';
    const to =
      e.key === bigger ? value + step
      : e.key === smaller ? value - step
      : e.key === 'Home' ? min
      : e.key === 'End' ? max
      : null;
    if (to === null) return;
    // Also keeps j/k's arrows from moving between stages meanwhile.
    e.preventDefault();
    onResize(clamp(to));
  };
  return (
    <div
      className={`splitter splitter--${horizontal ? 'vertical' : 'horizontal'}`}
      role="separator"
      aria-label={label}
      aria-orientation={horizontal ? 'vertical' : 'horizontal'}
      aria-valuenow={value}
      aria-valuemin={min}
      aria-valuemax={max}
      aria-controls={controls}
      tabIndex={0}
      data-testid={testId}
      onPointerDown={onPointerDown}
      onPointerMove={onPointerMove}
      onPointerUp={onPointerUp}
      onPointerCancel={onPointerUp}
      onKeyDown={onKeyDown}
    />
  );
}
