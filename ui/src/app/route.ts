/**
 * The app's screens, addressed by the URL hash so that reloads, the back
 * button, notifications and `weft://` links all land on the same screen.
 * The hash is `#/` + a deep link's PATH (the grammar shared with the Rust
 * side, docs/app.md "Deep links"):
 * `runs`, `gates`, `launch`, `spending`, `retros`, `run/RUN`, `run/RUN/BAR`,
 * `run/RUN/stage/NODE`, `run/RUN/stage/NODE@VISIT`,
 * `run/RUN/stage/NODE@VISIT/TAB`, `run/RUN/question/QID`.
 * The older `#/runs/RUN`, `#/runs/RUN/question/QID` and
 * `#/runs/RUN/node/NODE` are still read; anything else is the runs list.
 */

/** The stage panel's tabs, in the order they are shown (and numbered by the keyboard). */
export const STAGE_TABS = ['transcript', 'output', 'files', 'artifacts', 'routing', 'context'] as const;
export type StageTab = (typeof STAGE_TABS)[number];

/** The run-level bar's tabs, in the order they are shown. */
export const BAR_TABS = ['timeline', 'events', 'retro', 'cost'] as const;
export type BarTab = (typeof BAR_TABS)[number];

export type RunRoute = {
  screen: 'run';
  run: string;
  question?: string;
  node?: string;
  /** The node's visit (≥ 1); without it, its latest. */
  visit?: number;
  /** The stage panel's tab; only with `visit`, as the grammar has it. */
  tab?: StageTab;
  /** The run-level bar's tab (only without a stage or question). */
  bar?: BarTab;
};

export type Route =
  | { screen: 'runs' }
  | RunRoute
  | { screen: 'gates' }
  | { screen: 'launch' }
  | { screen: 'spending' }
  | { screen: 'retros' };

/** A deep link's PATH is at most this long (the Rust side refuses longer ones). */
const LINK_BYTES_MAX = 2_048;
/** Run and question ids: ASCII letters, digits, `-` and `_`, at most 128 bytes. */
const ID = /^[A-Za-z0-9_-]{1,128}$/;
/** A visit: a decimal ≥ 1 (bounded well inside a safe integer). */
const VISIT = /^[1-9][0-9]{0,8}$/;

const RUNS: Route = { screen: 'runs' };

function isStageTab(s: string | undefined): s is StageTab {
  return (STAGE_TABS as readonly string[]).includes(s ?? '');
}

function isBarTab(s: string | undefined): s is BarTab {
  return (BAR_TABS as readonly string[]).includes(s ?? '');
}

/** One percent-decoded segment, or null when its escapes are malformed. */
function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * A segment as the grammar writes it: everything but [A-Za-z0-9._~-]
 * percent-encoded (encodeURIComponent leaves `!'()*` alone, the grammar does not).
 */
export function encodeSegment(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `NODE` or `NODE@VISIT` (still encoded): the last `@` splits, since an `@` in a node id is encoded. */
function stageOf(segment: string): { node: string; visit?: number } | null {
  const at = segment.lastIndexOf('@');
  const node = decode(at < 0 ? segment : segment.slice(0, at));
  if (!node) return null;
  if (at < 0) return { node };
  const visit = segment.slice(at + 1);
  return VISIT.test(visit) ? { node, visit: Number(visit) } : null;
}

/** The run screen a `run/…` PATH names (its segments after `run`), or null. */
function runRoute(parts: readonly string[]): RunRoute | null {
  const run = decode(parts[0] ?? '');
  if (!run || !ID.test(run)) return null;
  const route: RunRoute = { screen: 'run', run };
  if (parts.length === 1) return route;
  if (parts.length === 2 && isBarTab(parts[1])) return { ...route, bar: parts[1] };
  if (parts[1] === 'question' && parts.length === 3) {
    const question = decode(parts[2] ?? '');
    return question && ID.test(question) ? { ...route, question } : null;
  }
  if (parts[1] === 'stage' && (parts.length === 3 || parts.length === 4)) {
    const stage = stageOf(parts[2] ?? '');
    if (!stage) return null;
    if (parts.length === 3) return { ...route, ...stage };
    // A tab needs the visit it belongs to.
    return stage.visit !== undefined && isStageTab(parts[3]) ? { ...route, ...stage, tab: parts[3] } : null;
  }
  return null;
}

/** The legacy `runs/RUN[/question/QID | /node/NODE]` forms, or null. */
function legacyRunRoute(parts: readonly string[]): RunRoute | null {
  const run = decode(parts[0] ?? '');
  if (!run || !ID.test(run)) return null;
  if (parts.length === 1) return { screen: 'run', run };
  const value = parts.length === 3 ? decode(parts[2] ?? '') : null;
  if (!value) return null;
  if (parts[1] === 'question' && ID.test(value)) return { screen: 'run', run, question: value };
  if (parts[1] === 'node') return { screen: 'run', run, node: value };
  return null;
}

/** The route a hash names; anything the grammar does not allow is the runs list. */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '');
  if (new TextEncoder().encode(path).length > LINK_BYTES_MAX) return RUNS;
  const parts = path.split('/');
  // A trailing slash is forgiven; an empty segment inside is not a PATH.
  if (parts.length > 1 && parts.at(-1) === '') parts.pop();
  const rest = parts.slice(1);
  switch (parts[0]) {
    case 'gates':
    case 'launch':
    case 'spending':
    case 'retros':
      return rest.length === 0 ? { screen: parts[0] } : RUNS;
    case 'run':
      return runRoute(rest) ?? RUNS;
    case 'runs':
      return rest.length === 0 ? RUNS : (legacyRunRoute(rest) ?? RUNS);
    default:
      return RUNS;
  }
}

/** The hash for a route (the inverse of `parseRoute`), always in the `#/run/…` forms. */
export function routeHash(route: Route): string {
  if (route.screen !== 'run') return `#/${route.screen}`;
  const run = `#/run/${encodeSegment(route.run)}`;
  if (route.question) return `${run}/question/${encodeSegment(route.question)}`;
  if (route.node) {
    const stage = `${run}/stage/${encodeSegment(route.node)}`;
    if (route.visit === undefined) return stage;
    return `${stage}@${route.visit}${route.tab ? `/${route.tab}` : ''}`;
  }
  if (route.bar) return `${run}/${route.bar}`;
  return run;
}

/** Goes to `route` (a new history entry). */
export function navigate(route: Route): void {
  window.location.hash = routeHash(route);
}
