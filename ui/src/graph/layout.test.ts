import { afterEach, describe, expect, it, vi } from 'vitest';

import { isAbortError, LABEL_FONT, LABEL_FONT_SIZE, layout, LayoutClient, NODE_SEP, warmLayout, workerEngine, withLayoutDefaults, withRankdir, type LayoutEngine } from './layout';

const viewBox = (svg: string) => {
  const m = /viewBox="([\d.\s-]+)"/.exec(svg);
  if (!m?.[1]) throw new Error('no viewBox');
  const [, , w, h] = m[1].trim().split(/\s+/).map(Number);
  return { w: w ?? 0, h: h ?? 0 };
};

describe('withRankdir', () => {
  it('sets rankdir just before the root graph closes, so it wins over the file', () => {
    const out = withRankdir('digraph g { graph [rankdir=LR]; a -> b }', 'TB');
    expect(out).toBe('digraph g { graph [rankdir=LR]; a -> b \nrankdir=TB;\n}');
  });

  it('skips braces inside strings, HTML labels and comments', () => {
    const dot = [
      'digraph g {',
      '  a [label="}{ \\" }"];',
      '  b [label=<<b>}</b>>];',
      '  // }',
      '  /* } */',
      '# }',
      '  subgraph s { c }',
      '}',
      '// trailing }',
    ].join('\n');
    const out = withRankdir(dot, 'LR');
    expect(out).toContain('subgraph s { c }\n\nrankdir=LR;\n}\n// trailing }');
  });

  it('leaves text without a graph body alone so Graphviz reports the error', () => {
    expect(withRankdir('digraph g', 'LR')).toBe('digraph g');
  });
});

describe('withLayoutDefaults', () => {
  it('sets the label font and spacing first in the root graph, so the workflow can still set its own', () => {
    const out = withLayoutDefaults('digraph g { /* { */ a -> b [label="}"] }');
    expect(out).toBe(
      `digraph g {\ngraph [nodesep=${NODE_SEP}]; node [fontname="${LABEL_FONT}", fontsize=${LABEL_FONT_SIZE}]; edge [fontname="${LABEL_FONT}", fontsize=${LABEL_FONT_SIZE}];\n /* { */ a -> b [label="}"] }`,
    );
  });

  it('leaves text without a graph body alone', () => {
    expect(withLayoutDefaults('digraph g')).toBe('digraph g');
  });
});

describe('layout (in process under node)', () => {
  const chain = 'digraph g { graph [rankdir=LR]; a -> b -> c -> d }';

  it('lays out top to bottom and left to right, overriding the file', async () => {
    const tb = viewBox(await layout(chain, 'TB'));
    const lr = viewBox(await layout(chain, 'LR'));
    expect(tb.h).toBeGreaterThan(tb.w);
    expect(lr.w).toBeGreaterThan(lr.h);
  });

  it('lays out Fabro workflow attributes and shapes as plain DOT', async () => {
    const svg = await layout(
      'digraph w { graph [goal="x"]; start [shape=Mdiamond]; exit [shape=Msquare]; ' +
        'work [prompt="do {{ goal }}", max_retries=2]; start -> work -> exit [condition="outcome=success"] }',
      'TB',
    );
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('<title>work</title>');
  });

  it('sizes node and edge labels in the font graph.css draws them in, unless the workflow sets one', async () => {
    // Graphviz estimates text widths from the font it is given; a label drawn
    // in another font than the one it measured overlaps its neighbours.
    const svg = await layout(
      'digraph gate { approve [shape=hexagon]; approve -> ship [label="[S] Ship"]; ' +
        'approve -> hold [label="[H] Hold", fontname="Courier", fontsize=9] }',
      'TB',
    );
    // The font attributes of the first <text> in the group titled `title`
    // (Graphviz escapes `->` in titles as `&#45;&gt;`).
    const fontOf = (title: string) => {
      const group = svg.split('<g ').find((g) => g.includes(`<title>${title.replace('->', '&#45;&gt;')}</title>`)) ?? '';
      const text = /<text [^>]*font-family="([^"]*)" font-size="([^"]*)"/.exec(group);
      return { family: text?.[1], size: Number(text?.[2]) };
    };
    for (const title of ['approve', 'approve->ship']) {
      expect(fontOf(title)).toEqual({ family: LABEL_FONT, size: LABEL_FONT_SIZE });
    }
    expect(fontOf('approve->hold')).toEqual({ family: 'Courier,monospace', size: 9 });
  });

  it('warms Graphviz up without failing, and layouts still work after', async () => {
    await expect(warmLayout()).resolves.toBeUndefined();
    expect(await layout('digraph { a -> b }', 'TB')).toContain('<svg');
  });

  it("rejects with Graphviz's message on a syntax error", async () => {
    await expect(layout('digraph { a -> ; }', 'TB')).rejects.toThrow(/syntax error/);
  });
});

/** An engine whose renders finish only when the test says so. */
function manualEngine() {
  const calls: Array<{ dot: string; resolve(svg: string): void }> = [];
  let cancels = 0;
  const engine: LayoutEngine = {
    render: (dot) => new Promise((resolve) => calls.push({ dot, resolve })),
    cancel: () => {
      cancels += 1;
    },
  };
  return { engine, calls, cancels: () => cancels };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe('LayoutClient', () => {
  it('caches by (dot, rankdir) and shares a render between identical requests', async () => {
    const { engine, calls } = manualEngine();
    const client = new LayoutClient(engine);
    const first = client.layout('digraph { a }', 'TB');
    const second = client.layout('digraph { a }', 'TB');
    expect(calls).toHaveLength(1);
    calls[0]?.resolve('<svg>tb</svg>');
    expect(await first).toBe('<svg>tb</svg>');
    expect(await second).toBe('<svg>tb</svg>');
    expect(await client.layout('digraph { a }', 'TB')).toBe('<svg>tb</svg>');
    expect(calls).toHaveLength(1);

    void client.layout('digraph { a }', 'LR');
    await flush();
    expect(calls).toHaveLength(2);
    expect(calls[1]?.dot).toContain('rankdir=LR');
  });

  it('drops a queued request once its caller aborts, without rendering it', async () => {
    const { engine, calls } = manualEngine();
    const client = new LayoutClient(engine);
    const busy = client.layout('digraph { busy }', 'TB');
    const controller = new AbortController();
    const stale = client.layout('digraph { stale }', 'TB', { signal: controller.signal });
    const fresh = client.layout('digraph { fresh }', 'TB');
    controller.abort();
    await expect(stale).rejects.toSatisfy(isAbortError);

    calls[0]?.resolve('<svg>busy</svg>');
    await busy;
    await flush();
    expect(calls.map((c) => c.dot)).toEqual([
      expect.stringContaining('busy'),
      expect.stringContaining('fresh'),
    ]);
    calls[1]?.resolve('<svg>fresh</svg>');
    expect(await fresh).toBe('<svg>fresh</svg>');
  });

  it('stops the running render when its only caller aborts and moves on', async () => {
    const { engine, calls, cancels } = manualEngine();
    const client = new LayoutClient(engine);
    const controller = new AbortController();
    const stale = client.layout('digraph { big }', 'TB', { signal: controller.signal });
    const next = client.layout('digraph { small }', 'TB');
    controller.abort();
    await expect(stale).rejects.toSatisfy(isAbortError);
    expect(cancels()).toBe(1);
    expect(calls[1]?.dot).toContain('small');
    calls[1]?.resolve('<svg>small</svg>');
    expect(await next).toBe('<svg>small</svg>');
    // The cancelled render finishing late must not be cached or delivered.
    calls[0]?.resolve('<svg>big</svg>');
    await flush();
    const again = client.layout('digraph { big }', 'TB');
    await flush();
    expect(calls).toHaveLength(3);
    calls[2]?.resolve('<svg>big2</svg>');
    expect(await again).toBe('<svg>big2</svg>');
  });

  it('keeps rendering for the callers that did not abort', async () => {
    const { engine, calls, cancels } = manualEngine();
    const client = new LayoutClient(engine);
    const controller = new AbortController();
    const a = client.layout('digraph { a }', 'TB', { signal: controller.signal });
    const b = client.layout('digraph { a }', 'TB');
    controller.abort();
    await expect(a).rejects.toSatisfy(isAbortError);
    expect(cancels()).toBe(0);
    calls[0]?.resolve('<svg>a</svg>');
    expect(await b).toBe('<svg>a</svg>');
  });
});

/** A stand-in for the browser's `Worker` that answers each request with its
 * DOT text and notes whether it was terminated. */
class EchoWorker {
  onmessage: ((event: MessageEvent) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  terminated = false;
  postMessage(request: { id: number; dot: string }): void {
    queueMicrotask(() => this.onmessage?.({ data: { id: request.id, svg: request.dot } } as MessageEvent));
  }
  terminate(): void {
    this.terminated = true;
  }
}

describe('workerEngine', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends the worker once it has been idle a while, and starts a fresh one for the next graph', async () => {
    vi.useFakeTimers();
    const spawned: EchoWorker[] = [];
    const spawn = () => {
      const w = new EchoWorker();
      spawned.push(w);
      return w as unknown as Worker;
    };
    const engine = workerEngine(spawn, undefined, 1_000);
    expect(await engine.render('a')).toBe('a');
    vi.advanceTimersByTime(999);
    expect(await engine.render('b')).toBe('b');
    // Idle time counts from the last answer: still the first worker.
    vi.advanceTimersByTime(999);
    expect(spawned).toHaveLength(1);
    expect(spawned[0]?.terminated).toBe(false);
    vi.advanceTimersByTime(1);
    expect(spawned[0]?.terminated).toBe(true);
    expect(await engine.render('c')).toBe('c');
    expect(spawned).toHaveLength(2);
    expect(spawned[1]?.terminated).toBe(false);
  });
});
