import {
  useCallback,
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  type KeyboardEvent,
  type PointerEvent,
} from 'react';
import { flushSync } from 'react-dom';

import {
  decorate,
  indexSvg,
  NODE_STATES,
  STATE_GLYPHS,
  STATE_LABELS,
  type GraphIndex,
  type NodeState,
  type RunDecoration,
} from './decorate';
import { DEFAULT_RANKDIR, isAbortError, layout, type Rankdir } from './layout';
import './graph.css';

export type { NodeState } from './decorate';
export type { Rankdir } from './layout';

export interface GraphViewProps {
  /** The run's workflow graph (graph.fabro), DOT text. */
  dot: string;
  /** Latest stage state per node id; unlisted nodes are pending. */
  states: Readonly<Record<string, NodeState>>;
  /** Visit count per node id; a `node@n` badge shows when n > 1. */
  visits: Readonly<Record<string, number>>;
  /** Edges the run followed, as [from, to] node ids. */
  takenEdges: ReadonlyArray<readonly [string, string]>;
  /** Initial direction; the toolbar toggles it. Default top to bottom. */
  rankdir?: Rankdir;
  /** Called with a node id when the node is clicked or activated by keyboard. */
  onSelectNode?: (id: string) => void;
}

interface View {
  x: number;
  y: number;
  k: number;
}

export const MIN_ZOOM = 0.1;
export const MAX_ZOOM = 8;
const BUTTON_ZOOM = 1.25;
/** Pointer travel (px) under which a press counts as a click, not a pan. */
const CLICK_SLOP = 4;

const clampZoom = (k: number) => Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, k));

type Status = { kind: 'loading' } | { kind: 'ready' } | { kind: 'failed'; message: string };

/**
 * The run graph: Graphviz layout (in a worker) of `dot`, decorated with node
 * states, visit badges and taken edges. Zoom and pan move a CSS transform and
 * never re-lay out; state changes re-decorate the existing SVG in one pass.
 */
export function GraphView({
  dot,
  states,
  visits,
  takenEdges,
  rankdir: initialRankdir = DEFAULT_RANKDIR,
  onSelectNode,
}: GraphViewProps) {
  const [rankdir, setRankdir] = useState<Rankdir>(initialRankdir);
  useEffect(() => setRankdir(initialRankdir), [initialRankdir]);

  const [status, setStatus] = useState<Status>({ kind: 'loading' });
  const [view, setView] = useState<View>({ x: 0, y: 0, k: 1 });
  // Bumped each time a new SVG is inserted, so decoration reruns.
  const [layoutGeneration, setLayoutGeneration] = useState(0);

  const viewportRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLDivElement>(null);
  const indexRef = useRef<{ index: GraphIndex; svg: SVGSVGElement } | null>(null);
  const sizeRef = useRef({ width: 0, height: 0 });

  /** The view that fits a `width` × `height` graph in the viewport. */
  const fitted = useCallback((width: number, height: number): View | null => {
    const viewport = viewportRef.current;
    if (!viewport || width === 0 || height === 0) return null;
    const vw = viewport.clientWidth;
    const vh = viewport.clientHeight;
    const k = clampZoom(Math.min(vw / width, vh / height, 1) * 0.95);
    // Centre when it fits; otherwise start at the top-left (the start node).
    const x = Math.max((vw - width * k) / 2, 8);
    const y = Math.max((vh - height * k) / 2, 8);
    return { x, y, k };
  }, []);

  const fit = useCallback(() => {
    const { width, height } = sizeRef.current;
    const next = fitted(width, height);
    if (next) setView(next);
  }, [fitted]);

  // The props a new SVG is decorated with before it is shown (the layout
  // resolves after the render that asked for it), and what the SVG on screen
  // carries, so the effects below do not do the same work twice.
  const latest = useRef({ states, visits, takenEdges, onSelectNode });
  latest.current = { states, visits, takenEdges, onSelectNode };
  const applied = useRef<{
    svg: SVGSVGElement | null;
    decoration: RunDecoration | null;
    selectable: boolean | null;
  }>({ svg: null, decoration: null, selectable: null });

  // Layout: only when the graph text or the direction changes.
  useEffect(() => {
    const controller = new AbortController();
    setStatus({ kind: 'loading' });
    const aborted = () => controller.signal.aborted;
    layout(dot, rankdir, { signal: controller.signal }).then(
      async (markup) => {
        if (!canvasRef.current) return;
        // Built off the document: parsed, then sized, indexed and decorated,
        // each in a task of its own with a frame between them, before it
        // replaces the old SVG in one step, with the fitted view and the
        // ready status committed in the same task. A 2,000-node SVG then
        // costs the window one style, layout and paint of it, and no frame
        // waits for all of the work (without a GPU a paint of it alone takes
        // 0.2 s or more; docs/performance.md).
        const holder = document.createElement('div');
        holder.innerHTML = markup;
        const svg = holder.querySelector('svg');
        if (!svg) {
          setStatus({ kind: 'failed', message: 'Graphviz returned no SVG' });
          return;
        }
        const big = markup.length > SPLIT_ABOVE_CHARS;
        if (big) await afterNextFrame();
        if (aborted()) return;
        const index = indexSvg(svg);
        const { states: s, visits: v, takenEdges: t, onSelectNode: select } = latest.current;
        const decoration = { states: s, visits: v, takenEdges: t };
        decorate(index, svg, decoration);
        setSelectable(index, select != null);
        if (big) await afterNextFrame();
        const canvas = canvasRef.current;
        if (aborted() || !canvas) return;
        applied.current = { svg, decoration, selectable: select != null };
        // Size the SVG in CSS pixels = user units, so zoom 1 is 1:1.
        // Graphviz writes a viewBox; only without one is the SVG measured,
        // which needs it in the document.
        const box = svg.viewBox.baseVal;
        const boxed = box != null && box.width > 0 && box.height > 0;
        // The viewport's size does not depend on the SVG (the canvas is
        // positioned absolutely): fit before inserting, so that reading it
        // does not lay the new SVG out on its own.
        let view = boxed ? fitted(box.width, box.height) : null;
        if (boxed) sizeSvg(svg, box.width, box.height);
        canvas.replaceChildren(svg);
        if (!boxed) {
          const measured = svg.getBBox();
          sizeSvg(
            svg,
            box && box.width > 0 ? box.width : measured.width,
            box && box.height > 0 ? box.height : measured.height,
          );
        }
        const width = Number(svg.getAttribute('width'));
        const height = Number(svg.getAttribute('height'));
        sizeRef.current = { width, height };
        canvas.setAttribute('data-rankdir', rankdir);
        indexRef.current = { index, svg };
        view ??= fitted(width, height);
        flushSync(() => {
          setLayoutGeneration((n) => n + 1);
          setStatus({ kind: 'ready' });
          if (view) setView(view);
        });
      },
      (e: unknown) => {
        if (isAbortError(e)) return;
        setStatus({ kind: 'failed', message: e instanceof Error ? e.message : String(e) });
      },
    );
    return () => controller.abort();
  }, [dot, rankdir, fitted]);

  // Decoration: on every state change, against the current SVG.
  useLayoutEffect(() => {
    const current = indexRef.current;
    if (!current) return;
    const was = applied.current;
    const d = was.decoration;
    if (was.svg === current.svg && d?.states === states && d.visits === visits && d.takenEdges === takenEdges) {
      return;
    }
    const decoration = { states, visits, takenEdges };
    decorate(current.index, current.svg, decoration);
    applied.current = { ...was, svg: current.svg, decoration };
  }, [layoutGeneration, states, visits, takenEdges]);

  // Wheel zoom about the cursor. Registered natively: React's wheel listener
  // is passive, and the page must not scroll while zooming.
  useEffect(() => {
    const viewport = viewportRef.current;
    if (!viewport) return;
    const onWheel = (event: WheelEvent) => {
      event.preventDefault();
      const rect = viewport.getBoundingClientRect();
      const px = event.clientX - rect.left;
      const py = event.clientY - rect.top;
      const delta = event.deltaMode === 1 ? event.deltaY * 16 : event.deltaY;
      setView((v) => zoomAbout(v, v.k * Math.exp(-delta * 0.0015), px, py));
    };
    viewport.addEventListener('wheel', onWheel, { passive: false });
    return () => viewport.removeEventListener('wheel', onWheel);
  }, []);

  const zoomBy = (factor: number) => {
    const viewport = viewportRef.current;
    const cx = (viewport?.clientWidth ?? 0) / 2;
    const cy = (viewport?.clientHeight ?? 0) / 2;
    setView((v) => zoomAbout(v, v.k * factor, cx, cy));
  };

  // Drag to pan; a press that barely moves selects the node under it.
  const drag = useRef<{
    id: number;
    sx: number;
    sy: number;
    x: number;
    y: number;
    moved: boolean;
    target: EventTarget | null;
  } | null>(null);

  const onPointerDown = (event: PointerEvent<HTMLDivElement>) => {
    if (event.button !== 0) return;
    drag.current = {
      id: event.pointerId,
      sx: event.clientX,
      sy: event.clientY,
      x: view.x,
      y: view.y,
      moved: false,
      target: event.target,
    };
    event.currentTarget.setPointerCapture(event.pointerId);
  };
  const onPointerMove = (event: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d || d.id !== event.pointerId) return;
    const dx = event.clientX - d.sx;
    const dy = event.clientY - d.sy;
    if (!d.moved && Math.hypot(dx, dy) < CLICK_SLOP) return;
    d.moved = true;
    setView((v) => ({ ...v, x: d.x + dx, y: d.y + dy }));
  };
  const onPointerUp = (event: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d || d.id !== event.pointerId) return;
    drag.current = null;
    if (!d.moved) selectFrom(d.target);
  };
  const selectFrom = (target: EventTarget | null) => {
    if (!onSelectNode || !(target instanceof Element)) return;
    const node = target.closest('g.node');
    const id = node?.getAttribute('data-node-id');
    if (id != null) onSelectNode(id);
  };
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (event.key === 'Enter' || event.key === ' ') {
      if (event.target instanceof Element && event.target.closest('g.node')) {
        event.preventDefault();
        selectFrom(event.target);
      }
    } else if (event.key === '+' || event.key === '=') zoomBy(BUTTON_ZOOM);
    else if (event.key === '-') zoomBy(1 / BUTTON_ZOOM);
    else if (event.key === '0') fit();
  };

  // Make nodes focusable only when selecting them does something.
  useLayoutEffect(() => {
    const current = indexRef.current;
    if (!current) return;
    const selectable = onSelectNode != null;
    const was = applied.current;
    if (was.svg === current.svg && was.selectable === selectable) return;
    setSelectable(current.index, selectable);
    applied.current = { ...was, svg: current.svg, selectable };
  }, [layoutGeneration, onSelectNode]);

  return (
    <section className="wf-graph" aria-label="Run graph">
      <div className="wf-graph__toolbar" role="toolbar" aria-label="Graph view">
        <button
          type="button"
          data-testid="graph-rankdir"
          onClick={() => setRankdir((r) => (r === 'LR' ? 'TB' : 'LR'))}
          title="Switch layout direction"
        >
          {rankdir === 'LR' ? 'Left → right' : 'Top ↓ bottom'}
        </button>
        <span className="wf-graph__spacer" />
        <button
          type="button"
          data-testid="graph-zoom-out"
          aria-label="Zoom out"
          disabled={view.k <= MIN_ZOOM}
          onClick={() => zoomBy(1 / BUTTON_ZOOM)}
        >
          −
        </button>
        <output className="wf-graph__zoom" data-testid="graph-zoom-level" aria-live="off">
          {Math.round(view.k * 100)}%
        </output>
        <button
          type="button"
          data-testid="graph-zoom-in"
          aria-label="Zoom in"
          disabled={view.k >= MAX_ZOOM}
          onClick={() => zoomBy(BUTTON_ZOOM)}
        >
          +
        </button>
        <button type="button" data-testid="graph-fit" onClick={fit}>
          Fit
        </button>
      </div>

      <div
        ref={viewportRef}
        className="wf-graph__viewport"
        data-testid="graph-viewport"
        data-status={status.kind}
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={onPointerUp}
        onPointerCancel={() => (drag.current = null)}
        onKeyDown={onKeyDown}
      >
        <div
          ref={canvasRef}
          className="wf-graph__canvas"
          data-testid="graph-canvas"
          style={{ transform: `translate(${view.x}px, ${view.y}px) scale(${view.k})` }}
        />
        {status.kind === 'loading' && (
          <p className="wf-graph__status" role="status">
            Laying out graph…
          </p>
        )}
        {status.kind === 'failed' && (
          <p className="wf-graph__status wf-graph__status--error" role="alert">
            Could not lay out the graph: {status.message}
          </p>
        )}
      </div>

      <ul className="wf-graph__legend" aria-label="Node states">
        {NODE_STATES.map((state) => (
          <li key={state} data-state={state}>
            <span className="wf-graph__swatch" aria-hidden="true">
              {STATE_GLYPHS[state]}
            </span>
            {STATE_LABELS[state]}
          </li>
        ))}
        <li className="wf-graph__legend-taken">
          <span className="wf-graph__edge-swatch" aria-hidden="true" />
          Edge taken
        </li>
      </ul>
    </section>
  );
}

/**
 * SVG markup above this size (about 1,400 nodes of the graph demo's ladder,
 * 0.73 KB a node) is parsed, decorated and inserted in three tasks with a
 * frame between them; a smaller graph (300 nodes are about 0.2 MB) is done in
 * one task, not to add frames to opening a run.
 */
const SPLIT_ABOVE_CHARS = 1_000_000;

/** Resolves in a task after the next frame (at once where there are no frames). */
function afterNextFrame(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof requestAnimationFrame !== 'function') {
      setTimeout(resolve, 0);
      return;
    }
    requestAnimationFrame(() => setTimeout(resolve, 0));
  });
}

/** Sets the SVG's size in CSS pixels. */
function sizeSvg(svg: SVGSVGElement, width: number, height: number): void {
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
}

/** Nodes are focusable buttons only when selecting them does something. */
function setSelectable(index: GraphIndex, selectable: boolean): void {
  for (const { g } of index.nodes.values()) {
    if (selectable) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
    } else {
      g.removeAttribute('tabindex');
      g.removeAttribute('role');
    }
  }
}

/** Zooms to `k` (clamped) keeping the point (px, py) of the viewport fixed. */
function zoomAbout(v: View, k: number, px: number, py: number): View {
  const next = clampZoom(k);
  const ratio = next / v.k;
  return { k: next, x: px - (px - v.x) * ratio, y: py - (py - v.y) * ratio };
}
