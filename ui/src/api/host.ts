import type {
  AnswerBy,
  AppError,
  ArtifactContent,
  CancelRequested,
  Code,
  DaemonInfo,
  Diagnostic,
  Event,
  InitialRoute,
  LogMatch,
  QuestionRecord,
  RunList,
  RunStart,
  RunStarted,
  RunSummary,
  RunView,
  RunsPage,
  StageFiles,
} from './wire';

export type * from './wire';

/** Stops a live subscription. */
export type Unsubscribe = () => void;

/**
 * Everything the UI may ask of the backend: one method per Tauri command
 * (`src-tauri/src/commands.rs`, `bridge.rs`). Each host implements all of
 * it, so a screen never knows whether it runs inside the desktop app or a
 * test. Failures reject with an `AppError` (`{code, message}`); screens
 * branch on `code` (`daemon.not_running`, `run.not_found`, ...), never on
 * the message.
 */
export interface Host {
  /** The version of the running Weft app, e.g. `0.1.0`. */
  appVersion(): Promise<string>;
  /** Where the app was asked to open (a clicked gate notification). */
  initialRoute(): Promise<InitialRoute | null>;
  /**
   * Later requests to open a route, while the app is open (a gate
   * notification clicked again starts a second app, which hands its route
   * over). Absent where nothing else can start the app (a plain browser).
   */
  onOpenRoute?(open: (route: InitialRoute) => void): Promise<Unsubscribe>;

  // History: read from the database, works with the daemon stopped.
  runsPage(query: RunList): Promise<RunsPage>;
  /**
   * The runs list's first page (200 runs, archived hidden) as the backend
   * read it while the window started, once, and only if fresh; null when
   * there is none. A head start only: ask `runsPage` as well.
   */
  firstRunsPage?(): RunsPage | null;
  runView(run: string): Promise<RunView>;
  runEvents(run: string, afterSeq: number, limit?: number): Promise<Event[]>;
  stageFiles(run: string, node: string, visit: number): Promise<StageFiles>;
  searchLogs(run: string, query: string): Promise<LogMatch[]>;
  /** The latest captured version of artifact `path` of the run, for a preview. */
  artifactContent(run: string, path: string): Promise<ArtifactContent>;
  /**
   * Writes the latest captured version of artifact `path` to `artifacts/PATH`
   * in the run directory and shows it in the system file manager; resolves
   * to that file's path. Rejects with `app.reveal_failed` (the message names
   * the file) when no file manager answers.
   */
  revealArtifact(run: string, path: string): Promise<string>;

  // Live: through weftd (rejects with code `daemon.not_running` when it is
  // not running; `daemonStart` starts it).
  daemonStatus(): Promise<DaemonInfo>;
  daemonStart(): Promise<DaemonInfo>;
  runStart(params: RunStart): Promise<RunStarted>;
  runCancel(run: string): Promise<CancelRequested>;
  /** Archives (hides from the runs list) or brings back a run. */
  runArchive(run: string, archived: boolean): Promise<RunSummary>;
  runResume(run: string): Promise<RunStarted>;
  questionList(run?: string): Promise<QuestionRecord[]>;
  questionAnswer(question: string, answer: AnswerBy): Promise<QuestionRecord>;
  validateWorkflow(path: string): Promise<Diagnostic[]>;
  /**
   * The native "open file" dialog for a workflow (`.fabro`, `.dot`,
   * `.toml`); null when cancelled. Absent where there is no native dialog
   * (a plain browser): the path is typed instead.
   */
  pickWorkflow?(): Promise<string | null>;
  /**
   * Live events of one run (after `afterSeq`, each once, in order) or of
   * every run (`run` null: new events only). Resolves once the daemon has
   * accepted the subscription.
   */
  subscribe(run: string | null, afterSeq: number, onEvent: (event: Event) => void): Promise<Unsubscribe>;
}

/**
 * An `AppError`-shaped rejection, whatever was thrown; its `code` is a
 * generated `Code`, so a screen's comparison with a code that does not
 * exist fails to compile.
 */
export function appError(e: unknown): AppError {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    return { code: String(e.code) as Code, message: String(e.message) };
  }
  return { code: 'app.error', message: String(e) };
}
