import type { CommandMethods } from './commands';
import type { AppError, Code, DeepLink, Event, RunsPage } from './wire';

export type * from './wire';

/** Stops a live subscription. */
export type Unsubscribe = () => void;

/**
 * Everything the UI may ask of the backend: one method per command of the
 * app, as declared in `src-tauri/src/surface.rs` (`CommandMethods`,
 * generated into `./commands.ts`), plus what a host adds around them. Each
 * host implements all of it, so a screen never knows whether it runs
 * inside the desktop app or a test. Failures reject with an `AppError`
 * (`{code, message}`); screens branch on `code` (`daemon.not_running`,
 * `run.not_found`, ...), never on the message.
 */
export interface Host extends CommandMethods {
  /**
   * Later requests to open a deep link, while the app is open (a gate
   * notification clicked, `weft open`: a second start of the app hands its
   * link over). Absent where nothing else can start the app (a plain
   * browser).
   */
  onOpenRoute?(open: (link: DeepLink) => void): Promise<Unsubscribe>;
  /**
   * The runs list's first page (200 runs, archived hidden) as the backend
   * read it while the window started, once, and only if fresh; null when
   * there is none. A head start only: ask `runsPage` as well.
   */
  firstRunsPage?(): RunsPage | null;
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
    const error: AppError = { code: String(e.code) as Code, message: String(e.message) };
    // The paths a refusal names (`apply.dirty`, `apply.conflicts`), kept when they are strings.
    if ('paths' in e && Array.isArray(e.paths)) error.paths = e.paths.filter((p): p is string => typeof p === 'string');
    return error;
  }
  return { code: 'app.error', message: String(e) };
}
