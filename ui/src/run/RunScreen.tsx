import { useCallback, useEffect, useMemo, useRef, useState } from 'react';

import type { Host, QuestionRecord, RunView, StageFiles } from '../api';
import { BAR_TABS, routeHash, type BarTab, type RunRoute, type StageTab } from '../app/route';
import { ArtifactList } from '../artifacts/ArtifactList';
import { ArtifactPreview } from '../artifacts/ArtifactPreview';
import { FilesChanged, type ChangesSource } from '../changes/FilesChanged';
import { typingIn, withModifier } from '../components/keyboard';
import { Splitter, TabList, TabPanel, type TabSpec } from '../components/panes';
import { choiceForKey, choicesOf } from '../gates/accelerator';
import { permissionDefault } from '../gates/permission';
import { QuestionPanel } from '../gates/QuestionPanel';
import { GraphView } from '../graph/GraphView';
import { prefetchLayout } from '../graph/layout';
import { LogsPanel } from '../logs/LogsPanel';
import { RetroPanel } from '../retros/RetroPanel';
import { deriveGraph, failureSummary, followedStage, latestStage, nodeAttribute, runContainer, stageBefore, timelineOf } from './derive';
import { EventsPanel } from './EventsPanel';
import { BudgetWarnings } from './BudgetWarnings';
import { CostPanel } from './CostPanel';
import { BAR_HEIGHT, GRAPH_WIDTH, useRunLayout, type RunLayout } from './layout';
import { RunHeader } from './RunHeader';
import { BAR_TAB_KEYS, runActionOf, stageOrder, stepStage } from './shortcuts';
import { ShortcutsList } from './ShortcutsList';
import { isAgentStage, shownStageTab, StageDetail } from './StageDetail';
import { TimelineView } from './Timeline';
import { useRun, useStageFiles } from './useRun';
import './run.css';

const ACTIVE = new Set(['running', 'queued', 'blocked']);

type Selection = { node: string; visit: number };
/** A stage the user chose; `visit` null is the node's latest visit (a node named by the route). */
type Pick = { node: string; visit: number | null };

/** Ticks once a second while `on`, so running durations grow. */
function useNow(on: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!on) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [on]);
  return on ? now : Date.now();
}

/**
 * The stage the panel shows: the user's pick, else the one the run is at
 * (`followedStage`), worked out again from every new view so that the panel
 * follows a live run until the user picks a stage.
 */
function selectionOf(view: RunView, picked: Pick | null): Selection | null {
  if (picked) return { node: picked.node, visit: picked.visit ?? latestStage(view.stages, picked.node)?.visit ?? 1 };
  const stage = followedStage(view);
  return stage ? { node: stage.node_id, visit: stage.visit } : null;
}

/** What led to a gate's question: the previous stage's response or stdout tail. */
function workBefore(files: StageFiles | null, node: string): { title: string; text: string } | null {
  if (!files) return null;
  if (files.response) return { title: `What ${node} answered`, text: files.response };
  const out = files.stdout || files.stderr;
  if (!out) return null;
  const lines = out.trimEnd().split('\n');
  return { title: `The end of ${node}'s output`, text: lines.slice(-40).join('\n') };
}

/** The question panel of the run screen, with the work that led to it. */
function RunQuestion({ host, view, question }: { host: Host; view: RunView; question: QuestionRecord }) {
  const permission = question.permission ?? null;
  // A permission request is about the agent's own call, not the stage before.
  const before = permission ? undefined : stageBefore(view.stages, question.node_id, question.visit);
  const [context, setContext] = useState<{ title: string; text: string } | null>(null);
  useEffect(() => {
    if (!before) return;
    let active = true;
    host.stageFiles(view.run.id, before.node_id, before.visit).then(
      (files) => active && setContext(workBefore(files, before.node_id)),
      () => {},
    );
    return () => {
      active = false;
    };
  }, [host, view.run.id, before?.node_id, before?.visit]);
  const attribute = (name: string) => nodeAttribute(view.graph_source, question.node_id, name);
  // A permission request waits `acp.permission_timeout` (the node's
  // `timeout` bounds the whole stage), then takes `acp.permission_default`.
  const timeout = attribute(permission ? 'acp.permission_timeout' : 'timeout');
  const defaultChoice = permission
    ? timeout
      ? permissionDefault(permission, attribute('acp.permission_default'))
      : null
    : attribute('human.default_choice');
  return <QuestionPanel host={host} question={question} context={context} timeout={timeout} defaultChoice={defaultChoice} />;
}

/** The questions the screen shows, first the one the route names (answered or not), then the pending ones. */
function questionsShown(view: RunView, routed: string | undefined): { routed: QuestionRecord | undefined; questions: QuestionRecord[] } {
  const pending = view.questions.filter((q) => q.status === 'pending');
  const named = routed ? view.questions.find((q) => q.id === routed) : undefined;
  return { routed: named, questions: named ? [named, ...pending.filter((q) => q.id !== named.id)] : pending };
}

/**
 * Brings the graph into view and focuses its node `node` (where Enter
 * selects and +, - and 0 zoom), else its first node, else the graph's area.
 */
function focusGraph(area: HTMLElement | null, node: string | null): void {
  if (!area) return;
  const nodes = [...area.querySelectorAll<SVGGElement>('g.node[tabindex]')];
  const target: HTMLElement | SVGGElement = nodes.find((g) => g.getAttribute('data-node-id') === node) ?? nodes[0] ?? area;
  area.scrollIntoView?.({ block: 'nearest' });
  target.focus();
}

/** The graph's layout starts with the view, while the events are still read. */
const USE_RUN = { onView: (view: RunView) => prefetchLayout(view.graph_source) };

const BAR_NAMES: Record<BarTab, string> = { timeline: 'Timeline', events: 'Events', retro: 'Retro', cost: 'Cost' };
const BAR_TAB_SPECS: TabSpec<BarTab>[] = BAR_TABS.map((t) => ({ id: t, label: BAR_NAMES[t], shortcut: BAR_TAB_KEYS[t] }));

/** What a deep link sets of the layout: its stage tab and its bar tab (which opens the bar). */
function openedLayout(route: RunRoute): Partial<RunLayout> {
  const opened: Partial<RunLayout> = {};
  if (route.tab) opened.stageTab = route.tab;
  if (route.bar) Object.assign(opened, { barTab: route.bar, barCollapsed: false });
  return opened;
}

/** The stage a route names, as picked (`visit` null: its latest). */
const pickOf = (route: RunRoute): Pick | null => (route.node ? { node: route.node, visit: route.visit ?? null } : null);

/**
 * A run: its header and any question on top; below them the graph (a pane
 * that resizes and collapses) beside the selected stage's summary and tabs,
 * and under both the run bar (Timeline, Events, Retro, Cost), which resizes
 * and collapses too. Sizes, collapsed panes and last tabs are remembered
 * (`useRunLayout`); the address names the stage, visit and tab on screen.
 */
export function RunScreen({ host, route }: { host: Host; route: RunRoute }) {
  const { load, events, live, reload } = useRun(host, route.run, USE_RUN);
  const view = load.kind === 'ready' ? load.view : null;
  const now = useNow(!!view && ACTIVE.has(view.run.status));
  const [layout, setLayout] = useRunLayout(openedLayout(route));
  // A node in the route counts as picked; a new run or route starts over.
  const [picked, setPicked] = useState<Pick | null>(() => pickOf(route));
  useEffect(() => setPicked(pickOf(route)), [route.run, route.node, route.visit]);
  useEffect(() => {
    const opened = openedLayout(route);
    if (Object.keys(opened).length > 0) setLayout(opened);
  }, [route.run, route.tab, route.bar, setLayout]);
  const selected = useMemo(() => (view ? selectionOf(view, picked) : null), [view, picked]);
  // The Files changed tab shows the whole run until a stage's changes are asked for.
  const [changesOf, setChangesOf] = useState<ChangesSource>(null);
  useEffect(() => setChangesOf(null), [route.run]);

  // The address follows what the user chose (not what the screen opened
  // on): the stage, visit and tab on screen once a stage or stage tab is
  // chosen, else the bar's tab once one is. Replaced, not pushed: one
  // history entry per run, as the back button expects.
  const chose = useRef({ stage: false, bar: false });
  // Counts the choices, so that choosing what is already shown still writes the address.
  const [choices, setChoices] = useState(0);
  useEffect(() => {
    chose.current = { stage: false, bar: false };
  }, [route.run, route.node, route.visit, route.tab, route.bar, route.question]);

  const select = useCallback(
    (node: string, visit?: number) => {
      if (!view) return;
      const stage = visit === undefined ? latestStage(view.stages, node) : view.stages.find((s) => s.node_id === node && s.visit === visit);
      chose.current.stage = true;
      setChoices((n) => n + 1);
      setPicked({ node, visit: stage?.visit ?? visit ?? 1 });
    },
    [view],
  );
  const chooseTab = useCallback(
    (tab: StageTab) => {
      chose.current.stage = true;
      setChoices((n) => n + 1);
      setLayout({ stageTab: tab });
    },
    [setLayout],
  );
  const chooseBar = useCallback(
    (tab: BarTab) => {
      chose.current.bar = true;
      setChoices((n) => n + 1);
      setLayout({ barTab: tab, barCollapsed: false });
    },
    [setLayout],
  );

  const decoration = useMemo(
    () => (view ? deriveGraph(view.stages, events, view.questions) : null),
    [view, events],
  );
  const timeline = useMemo(() => (view ? timelineOf(view.stages, events, now) : null), [view, events, now]);
  const failure = useMemo(() => (view ? failureSummary(view) : null), [view]);
  const container = useMemo(() => runContainer(events), [events]);
  const selectedStage = view && selected ? view.stages.find((s) => s.node_id === selected.node && s.visit === selected.visit) : undefined;
  const lastSeq = events.at(-1)?.seq ?? 0;
  const files = useStageFiles(host, view?.run.id ?? null, selected, selectedStage?.status ?? '', lastSeq);
  const agent = useMemo(() => (selectedStage ? isAgentStage(selectedStage, events) : false), [selectedStage, events]);
  const stageTab = shownStageTab(layout.stageTab, agent);

  useEffect(() => {
    const { stage, bar } = chose.current;
    const hash =
      stage && selected
        ? routeHash({ screen: 'run', run: route.run, node: selected.node, visit: selected.visit, tab: stageTab })
        : bar
          ? routeHash({ screen: 'run', run: route.run, bar: layout.barTab })
          : null;
    if (hash && window.location.hash !== hash) window.history.replaceState(null, '', hash);
  }, [choices, selected?.node, selected?.visit, stageTab, layout.barTab, route.run]);

  const shown = useMemo(() => (view ? questionsShown(view, route.question) : null), [view, route.question]);
  // The question on screen answers from the keyboard only while pending (QuestionPanel).
  const gate = useMemo(() => {
    const q = shown?.questions[0];
    return q && q.status === 'pending' ? { node: q.node_id, choices: choicesOf(q.options) } : null;
  }, [shown]);
  const order = useMemo(() => (timeline ? stageOrder(timeline) : []), [timeline]);
  const [shortcutsOpen, setShortcutsOpen] = useState(false);
  // Another run opened in the same screen starts without the list over it.
  useEffect(() => setShortcutsOpen(false), [route.run]);
  const graphArea = useRef<HTMLDivElement>(null);
  const barBody = useRef<HTMLDivElement>(null);
  const logSearch = useRef<HTMLInputElement>(null);

  // Work for after the next render, once the tab or pane it needs is drawn.
  const [after, setAfter] = useState<{ what: 'search' | 'graph' | 'timeline'; n: number } | null>(null);
  const later = (what: 'search' | 'graph' | 'timeline') => setAfter((a) => ({ what, n: (a?.n ?? 0) + 1 }));
  useEffect(() => {
    if (!after) return;
    if (after.what === 'search') {
      logSearch.current?.scrollIntoView?.({ block: 'nearest' });
      logSearch.current?.focus();
    } else if (after.what === 'graph') {
      focusGraph(graphArea.current, selected?.node ?? null);
    } else {
      barBody.current?.querySelector('.timeline__bar--selected')?.scrollIntoView?.({ block: 'nearest', inline: 'nearest' });
    }
    // Only when asked: `after` changes once per request.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [after]);

  // The keyboard: j/k or arrows between stages, g the graph, / the log
  // search, 1–6 the stage tabs, 7–0 the bar's, ? the list of shortcuts.
  // Read through a ref so that one listener serves every render.
  const onKey = useRef<(e: KeyboardEvent) => void>(() => {});
  onKey.current = (e: KeyboardEvent) => {
    if (e.defaultPrevented || withModifier(e)) return;
    if (e.key === 'Escape' && shortcutsOpen) {
      e.preventDefault();
      setShortcutsOpen(false);
      return;
    }
    if (typingIn(e.target)) return;
    // A gate's accelerator on the same key answers the question instead.
    if (gate && choiceForKey(gate.choices, e.key)) return;
    const action = runActionOf(e.key);
    if (!action) return;
    e.preventDefault();
    if (action === 'help') {
      if (!e.repeat) setShortcutsOpen((open) => !open);
    } else if (action === 'next' || action === 'previous') {
      const to = stepStage(order, selected, action === 'next' ? 1 : -1);
      if (to) {
        select(to.node, to.visit);
        if (!layout.barCollapsed && layout.barTab === 'timeline') later('timeline');
      }
    } else if (action === 'graph') {
      if (layout.graphCollapsed) setLayout({ graphCollapsed: false });
      later('graph');
    } else if (action === 'search') {
      if (!selectedStage) return;
      chooseTab('output');
      later('search');
    } else if (action.startsWith('stage:')) {
      chooseTab(action.slice('stage:'.length) as StageTab);
    } else {
      chooseBar(action.slice('bar:'.length) as BarTab);
    }
  };
  useEffect(() => {
    const listener = (e: KeyboardEvent) => onKey.current(e);
    window.addEventListener('keydown', listener);
    return () => window.removeEventListener('keydown', listener);
  }, []);

  if (load.kind === 'loading') return <p className="muted">Loading the run…</p>;
  if (load.kind === 'failed') {
    return (
      <p className="error" role="alert">
        {load.code === 'run.not_found' ? `No run matches “${route.run}”.` : `Could not load the run: ${load.message}`}
      </p>
    );
  }
  const v = load.view;
  const { routed, questions } = shown ?? questionsShown(v, route.question);
  const ended = !ACTIVE.has(v.run.status);

  return (
    <div className="run" data-testid="run-screen" data-run-id={v.run.id}>
      <RunHeader host={host} view={v} failure={failure} live={live} now={now} container={container} onJumpToStage={select} onActed={reload} />
      <BudgetWarnings events={events} />
      {route.question && !routed && <p className="error">This run has no question {route.question}.</p>}
      {questions.map((q, i) => (
        i === 0 ? <RunQuestion key={q.id} host={host} view={v} question={q} /> : null
      ))}
      {questions.length > 1 && <p className="muted">{questions.length - 1} more questions wait after this one.</p>}
      <div className={`run__panes${layout.graphCollapsed ? ' run__panes--no-graph' : ''}`} data-testid="run-panes">
        <div
          className="run__graph"
          id="run-graph-pane"
          ref={graphArea}
          tabIndex={-1}
          hidden={layout.graphCollapsed}
          style={{ width: `${layout.graphWidth}px` }}
          data-testid="graph-pane"
        >
          {v.graph_source ? (
            <GraphView
              dot={v.graph_source}
              states={decoration?.states ?? {}}
              visits={decoration?.visits ?? {}}
              takenEdges={decoration?.takenEdges ?? []}
              onSelectNode={(node) => select(node)}
            />
          ) : (
            <p className="muted">The workflow file of this run is missing, so there is no graph.</p>
          )}
        </div>
        {!layout.graphCollapsed && (
          <Splitter
            label="Graph width"
            target={graphArea}
            grows="right"
            value={layout.graphWidth}
            min={GRAPH_WIDTH.min}
            max={GRAPH_WIDTH.max}
            onResize={(graphWidth) => setLayout({ graphWidth })}
            controls="run-graph-pane"
            testId="graph-splitter"
          />
        )}
        <div className="run__side">
          <button
            type="button"
            className="run__collapse"
            aria-expanded={!layout.graphCollapsed}
            aria-controls="run-graph-pane"
            data-testid="graph-toggle"
            onClick={() => setLayout({ graphCollapsed: !layout.graphCollapsed })}
          >
            {layout.graphCollapsed ? '▸ Show graph' : '◂ Hide graph'}
          </button>
          {selectedStage ? (
            <StageDetail
              stage={selectedStage}
              files={files}
              events={events}
              host={host}
              run={v.run}
              tab={stageTab}
              onTab={chooseTab}
              onShowChanges={
                v.git
                  ? () => {
                      setChangesOf({ node: selectedStage.node_id, visit: selectedStage.visit });
                      chooseTab('files');
                    }
                  : undefined
              }
              panels={{
                output: (
                  <LogsPanel
                    host={host}
                    runId={v.run.id}
                    stage={selected}
                    stored={files.kind === 'ready' ? files.files : null}
                    storedSeq={files.kind === 'ready' ? files.seq : lastSeq}
                    events={events}
                    onSelectMatch={(m) => select(m.node_id, m.visit)}
                    searchRef={logSearch}
                  />
                ),
                files: <FilesChanged host={host} view={v} source={changesOf} onSource={setChangesOf} />,
                artifacts: (
                  <>
                    <ArtifactList artifacts={v.artifacts} onSelectStage={select} />
                    <ArtifactPreview host={host} runId={v.run.id} artifacts={v.artifacts} />
                  </>
                ),
              }}
            />
          ) : selected ? (
            <p className="muted">{selected.node} has not run yet.</p>
          ) : (
            <p className="muted">No stage has run yet.</p>
          )}
        </div>
      </div>
      <section className={`run__bar${layout.barCollapsed ? ' run__bar--collapsed' : ''}`} aria-label="Run" data-testid="run-bar">
        {!layout.barCollapsed && (
          <Splitter
            label="Run bar height"
            target={barBody}
            grows="up"
            value={layout.barHeight}
            min={BAR_HEIGHT.min}
            max={BAR_HEIGHT.max}
            onResize={(barHeight) => setLayout({ barHeight })}
            controls="run-bar-body"
            testId="bar-splitter"
          />
        )}
        <div className="run__bar-head">
          <TabList group="runbar" label="Run" tabs={BAR_TAB_SPECS} selected={layout.barTab} onSelect={chooseBar} className="run__bar-tabs" />
          <button
            type="button"
            className="run__collapse"
            aria-expanded={!layout.barCollapsed}
            aria-controls="run-bar-body"
            data-testid="bar-toggle"
            onClick={() => setLayout({ barCollapsed: !layout.barCollapsed })}
          >
            {layout.barCollapsed ? '▴ Show' : '▾ Hide'}
          </button>
        </div>
        <div
          className="run__bar-body"
          id="run-bar-body"
          ref={barBody}
          hidden={layout.barCollapsed}
          style={{ height: `${layout.barHeight}px` }}
        >
          {!layout.barCollapsed && (
            <TabPanel group="runbar" selected={layout.barTab}>
              {layout.barTab === 'timeline' ? (
                timeline && <TimelineView timeline={timeline} selected={selected} onSelect={select} />
              ) : layout.barTab === 'events' ? (
                <EventsPanel runId={v.run.id} events={events} />
              ) : layout.barTab === 'retro' ? (
                ended ? (
                  <RetroPanel host={host} runId={v.run.id} refresh={lastSeq} />
                ) : (
                  <p className="muted" data-testid="retro-pending">
                    The retro is written when the run ends.
                  </p>
                )
              ) : (
                <CostPanel view={v} events={events} onSelectStage={select} />
              )}
            </TabPanel>
          )}
        </div>
      </section>
      {shortcutsOpen && <ShortcutsList gate={gate} onClose={() => setShortcutsOpen(false)} />}
    </div>
  );
}
