import { Graphviz } from '@hpcc-js/wasm-graphviz';

let graphviz: Promise<Graphviz> | undefined;

/**
 * Lays out DOT text with Graphviz (`dot` engine, compiled to WebAssembly) and
 * returns the `<svg>` element's markup, without the XML prolog and doctype.
 *
 * The wasm is inlined in the package's JavaScript, so this needs no network
 * and no asset URL (the app runs offline from `tauri://localhost`). The module
 * is instantiated once per realm and reused. Rejects with Graphviz's own
 * message (for example "syntax error in line 3 near '->'") on bad input.
 */
export async function renderDot(dot: string): Promise<string> {
  graphviz ??= Graphviz.load();
  let gv: Graphviz;
  try {
    gv = await graphviz;
  } catch (e) {
    // A failed instantiation must not poison every later call.
    graphviz = undefined;
    throw e;
  }
  const svg = gv.dot(dot, 'svg');
  const start = svg.indexOf('<svg');
  return start >= 0 ? svg.slice(start) : svg;
}
