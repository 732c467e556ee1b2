// Decorates a Graphviz SVG with run state: node state (attribute, class and
// glyph), visit badges and taken edges. Indexing walks the SVG once; every
// later decoration touches only the indexed elements, so a state change on a
// 600-node graph costs one pass over 600 entries and no re-layout.

/** Latest state of a node's most recent stage. */
export type NodeState =
  | 'pending'
  | 'running'
  | 'retrying'
  | 'succeeded'
  | 'partially_succeeded'
  | 'failed'
  | 'skipped'
  | 'waiting';

/** Every state, in the order the legend lists them. */
export const NODE_STATES: readonly NodeState[] = [
  'pending',
  'running',
  'retrying',
  'waiting',
  'succeeded',
  'partially_succeeded',
  'failed',
  'skipped',
];

/** Human wording for each state (legend, accessible names). */
export const STATE_LABELS: Record<NodeState, string> = {
  pending: 'Pending',
  running: 'Running',
  retrying: 'Retrying',
  waiting: 'Waiting on a human',
  succeeded: 'Succeeded',
  partially_succeeded: 'Partially succeeded',
  failed: 'Failed',
  skipped: 'Skipped',
};

/** A glyph per state so that colour is never the only signal. Pending has none. */
export const STATE_GLYPHS: Record<NodeState, string> = {
  pending: '',
  running: '▶',
  retrying: '↻',
  waiting: '?',
  succeeded: '✓',
  partially_succeeded: '◐',
  failed: '✕',
  skipped: '–',
};

export interface RunDecoration {
  /** Node id → state; nodes not listed are pending. */
  states: Readonly<Record<string, NodeState>>;
  /** Node id → how many times it ran; a badge shows from the second visit. */
  visits: Readonly<Record<string, number>>;
  /** Edges the run actually followed, as [from, to] node ids. */
  takenEdges: ReadonlyArray<readonly [string, string]>;
}

interface NodeEntry {
  g: SVGGElement;
  /** Bounding box of the node's shape in SVG user units. */
  box: Box;
  glyph: SVGGElement | null;
  badge: SVGGElement | null;
  state: NodeState | null;
}

interface Box {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/** The result of one pass over a Graphviz SVG. */
export interface GraphIndex {
  nodes: Map<string, NodeEntry>;
  /** `from\u0000to` → edge groups (parallel edges share a key). */
  edges: Map<string, SVGGElement[]>;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
const edgeKey = (from: string, to: string) => `${from}\u0000${to}`;

/**
 * Indexes the node and edge groups of a Graphviz SVG by the ids in their
 * `<title>`s, stamps `data-node-id` on nodes (for event delegation), and
 * removes link targets (DOT `URL`/`href` attributes) so that nothing in a
 * workflow file can navigate the app.
 */
export function indexSvg(svg: Element): GraphIndex {
  const nodes = new Map<string, NodeEntry>();
  const edges = new Map<string, SVGGElement[]>();
  const edgeGroups: Array<[string, SVGGElement]> = [];

  for (const g of svg.querySelectorAll<SVGGElement>('g.node, g.edge')) {
    const title = titleOf(g);
    if (title === null) continue;
    if (g.classList.contains('node')) {
      g.setAttribute('data-node-id', title);
      nodes.set(title, { g, box: shapeBox(g), glyph: null, badge: null, state: null });
    } else {
      edgeGroups.push([title, g]);
    }
  }
  // Edges after nodes: splitting a title needs the set of node ids.
  for (const [title, g] of edgeGroups) {
    const ends = splitEdgeTitle(title, nodes);
    if (!ends) continue;
    const key = edgeKey(ends[0], ends[1]);
    const list = edges.get(key);
    if (list) list.push(g);
    else edges.set(key, [g]);
  }
  for (const a of svg.querySelectorAll('a')) {
    a.removeAttribute('href');
    a.removeAttributeNS('http://www.w3.org/1999/xlink', 'href');
  }
  return { nodes, edges };
}

function titleOf(g: Element): string | null {
  for (const child of g.children) {
    if (child.localName === 'title') return child.textContent;
  }
  return null;
}

/**
 * Splits an edge title (`a->b`, `a:port:n->b`, `a--b`) into node ids. Ports
 * and compass points are stripped only when the text with them is not itself
 * a node id, so ids containing `:` survive.
 */
export function splitEdgeTitle(
  title: string,
  nodes: { has(id: string): boolean },
): [string, string] | null {
  for (const op of ['->', '--']) {
    let at = title.indexOf(op);
    while (at >= 0) {
      const from = resolveEnd(title.slice(0, at), nodes);
      const to = resolveEnd(title.slice(at + op.length), nodes);
      if (from !== null && to !== null) return [from, to];
      at = title.indexOf(op, at + 1);
    }
  }
  return null;
}

function resolveEnd(end: string, nodes: { has(id: string): boolean }): string | null {
  let candidate = end;
  for (;;) {
    if (nodes.has(candidate)) return candidate;
    const colon = candidate.lastIndexOf(':');
    if (colon <= 0) return null;
    candidate = candidate.slice(0, colon);
  }
}

/** Bounds of a node's drawn shape, from attributes (no layout query, so it
 * works in any DOM and forces no style recalculation). */
function shapeBox(g: Element): Box {
  const box: Box = { minX: Infinity, minY: Infinity, maxX: -Infinity, maxY: -Infinity };
  const add = (x: number, y: number) => {
    if (!Number.isFinite(x) || !Number.isFinite(y)) return;
    box.minX = Math.min(box.minX, x);
    box.maxX = Math.max(box.maxX, x);
    box.minY = Math.min(box.minY, y);
    box.maxY = Math.max(box.maxY, y);
  };
  const num = (el: Element, name: string) => Number(el.getAttribute(name));
  const addPairs = (text: string | null) => {
    const values = (text ?? '').match(/-?\d*\.?\d+(?:e[-+]?\d+)?/gi) ?? [];
    for (let i = 0; i + 1 < values.length; i += 2) add(Number(values[i]), Number(values[i + 1]));
  };
  for (const el of g.querySelectorAll('ellipse, polygon, polyline, path, rect, text')) {
    switch (el.localName) {
      case 'ellipse': {
        const [cx, cy, rx, ry] = [num(el, 'cx'), num(el, 'cy'), num(el, 'rx'), num(el, 'ry')];
        add(cx - rx, cy - ry);
        add(cx + rx, cy + ry);
        break;
      }
      case 'polygon':
      case 'polyline':
        addPairs(el.getAttribute('points'));
        break;
      case 'path':
        addPairs(el.getAttribute('d'));
        break;
      case 'rect':
        add(num(el, 'x'), num(el, 'y'));
        add(num(el, 'x') + num(el, 'width'), num(el, 'y') + num(el, 'height'));
        break;
      case 'text':
        // Only matters for shape=none/plaintext nodes, which draw no outline.
        if (box.minX === Infinity) add(num(el, 'x'), num(el, 'y'));
        break;
    }
  }
  if (box.minX === Infinity) return { minX: 0, minY: 0, maxX: 0, maxY: 0 };
  return box;
}

/**
 * Applies run state to an indexed SVG. Idempotent: calling it again with new
 * state updates attributes, glyphs and badges in place.
 *
 * Per node: `data-state` and class `wf-state-<state>`, a status glyph, an
 * accessible name, and a `<id>@<visits>` badge when visited more than once.
 * Per edge: `data-taken="true"` when the run followed it, removed otherwise.
 * The SVG root gets `data-has-taken` so untaken edges can recede.
 */
export function decorate(index: GraphIndex, svg: Element, run: RunDecoration): void {
  for (const [id, entry] of index.nodes) {
    const state = run.states[id] ?? 'pending';
    if (entry.state !== state) {
      if (entry.state) entry.g.classList.remove(`wf-state-${entry.state}`);
      entry.g.classList.add(`wf-state-${state}`);
      entry.g.setAttribute('data-state', state);
      entry.state = state;
      setGlyph(entry, state);
    }
    const visits = run.visits[id] ?? 0;
    setBadge(entry, id, visits);
    entry.g.setAttribute(
      'aria-label',
      `${id}: ${STATE_LABELS[state]}${visits > 1 ? `, visit ${visits}` : ''}`,
    );
  }

  const taken = new Set<SVGGElement>();
  for (const [from, to] of run.takenEdges) {
    for (const g of index.edges.get(edgeKey(from, to)) ?? []) taken.add(g);
  }
  for (const list of index.edges.values()) {
    for (const g of list) {
      if (taken.has(g)) g.setAttribute('data-taken', 'true');
      else g.removeAttribute('data-taken');
    }
  }
  if (taken.size > 0) svg.setAttribute('data-has-taken', 'true');
  else svg.removeAttribute('data-has-taken');
}

function svgEl<K extends keyof SVGElementTagNameMap>(
  owner: Element,
  name: K,
  attrs: Record<string, string | number>,
): SVGElementTagNameMap[K] {
  const el = (owner.ownerDocument ?? document).createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** A circled glyph on the node's top-left corner. */
function setGlyph(entry: NodeEntry, state: NodeState): void {
  const glyph = STATE_GLYPHS[state];
  if (!glyph) {
    entry.glyph?.remove();
    entry.glyph = null;
    return;
  }
  if (!entry.glyph) {
    const { minX, minY } = entry.box;
    const g = svgEl(entry.g, 'g', {
      class: 'wf-glyph',
      transform: `translate(${minX + 2} ${minY + 2})`,
      'aria-hidden': 'true',
    });
    g.append(
      svgEl(entry.g, 'circle', { r: 8 }),
      svgEl(entry.g, 'text', { 'text-anchor': 'middle', 'dominant-baseline': 'central' }),
    );
    entry.g.append(g);
    entry.glyph = g;
  }
  const text = entry.glyph.lastElementChild;
  if (text) text.textContent = glyph;
}

/** A `<id>@<n>` pill on the node's top-right corner, from the second visit on. */
function setBadge(entry: NodeEntry, id: string, visits: number): void {
  if (visits <= 1) {
    entry.badge?.remove();
    entry.badge = null;
    return;
  }
  const label = `${id}@${visits}`;
  if (entry.badge?.textContent === label) return;
  entry.badge?.remove();
  // Monospace at 10 units: about 6 units per character, no text measuring.
  const width = label.length * 6.1 + 8;
  const { maxX, minY } = entry.box;
  const g = svgEl(entry.g, 'g', {
    class: 'wf-badge',
    transform: `translate(${maxX - width / 2} ${minY - 6})`,
  });
  g.append(
    svgEl(entry.g, 'rect', { x: 0, y: -7, width, height: 14, rx: 7 }),
    svgEl(entry.g, 'text', { x: width / 2, y: 0, 'text-anchor': 'middle', 'dominant-baseline': 'central' }),
  );
  const text = g.lastElementChild;
  if (text) text.textContent = label;
  entry.g.append(g);
  entry.badge = g;
}
