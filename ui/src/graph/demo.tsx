// Demo page for the run graph (graph-demo.html): the sample workflow with a
// mix of states, with `?big=1` a 600-node ladder (`&rungs=N`: N rungs, 2N nodes), or with `?gate=1` a small
// gate with labelled edges. The browser test drives it; it is not linked from
// the app.

import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';

import '../app/app.css';
import {
  GATE_STATES,
  GATE_TAKEN_EDGES,
  GATE_WORKFLOW,
  ladderRun,
  ladderWorkflow,
  SAMPLE_STATES,
  SAMPLE_TAKEN_EDGES,
  SAMPLE_VISITS,
  SAMPLE_WORKFLOW,
} from './fixtures';
import { GraphView } from './GraphView';

const BIG_RUNGS = 300;
/** `&rungs=N` asks for N rungs (2N nodes; tests/app/perf.py lays out 2,000), within reason. */
const MAX_RUNGS = 5_000;

function rungs(value: string | null): number {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? Math.min(n, MAX_RUNGS) : BIG_RUNGS;
}

/** The graph and run state the page's query asks for. */
function demoRun(query: URLSearchParams) {
  if (query.has('big')) {
    const n = rungs(query.get('rungs'));
    return { dot: ladderWorkflow(n), ...ladderRun(n) };
  }
  if (query.has('gate')) {
    return { dot: GATE_WORKFLOW, states: GATE_STATES, visits: {}, takenEdges: GATE_TAKEN_EDGES };
  }
  return { dot: SAMPLE_WORKFLOW, states: SAMPLE_STATES, visits: SAMPLE_VISITS, takenEdges: SAMPLE_TAKEN_EDGES };
}

function Demo() {
  const [selected, setSelected] = useState<string | null>(null);
  const [run] = useState(() => demoRun(new URLSearchParams(window.location.search)));
  return (
    <main className="content graph-demo">
      <p className="muted" data-testid="selected-node">
        {selected ? `Selected: ${selected}` : 'Click a node to select it.'}
      </p>
      <GraphView {...run} onSelectNode={setSelected} />
    </main>
  );
}

const root = document.getElementById('root');
if (!root) throw new Error('graph-demo.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <Demo />
  </StrictMode>,
);
