// Demo page for the run graph (graph-demo.html): the sample workflow with a
// mix of states, or with `?big=1` a 600-node ladder. The browser test drives
// it; it is not linked from the app.

import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';

import '../app/app.css';
import {
  ladderRun,
  ladderWorkflow,
  SAMPLE_STATES,
  SAMPLE_TAKEN_EDGES,
  SAMPLE_VISITS,
  SAMPLE_WORKFLOW,
} from './fixtures';
import { GraphView } from './GraphView';

const BIG_RUNGS = 300;

function Demo() {
  const big = new URLSearchParams(window.location.search).has('big');
  const [selected, setSelected] = useState<string | null>(null);
  const [run] = useState(() =>
    big
      ? { dot: ladderWorkflow(BIG_RUNGS), ...ladderRun(BIG_RUNGS) }
      : {
          dot: SAMPLE_WORKFLOW,
          states: SAMPLE_STATES,
          visits: SAMPLE_VISITS,
          takenEdges: SAMPLE_TAKEN_EDGES,
        },
  );
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
