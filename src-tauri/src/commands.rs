//! The app's commands: each a few lines that call `weft::views`
//! (history, read-only SQLite, on a blocking thread) or the daemon through
//! `weft::ipc::client::Client` (everything live). Every command fails with
//! an [`AppError`] `{code, message}`; the UI matches on the code.
//!
//! These are the implementations; the commands are declared (name,
//! arguments, result) in [`crate::surface`], which makes the Tauri commands
//! and the UI's typed command map from that declaration.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use weft::engine::fork::Forked;
use weft::ipc::client::Client;
use weft::ipc::protocol::{
    AnswerBy, CallerEnv, CancelRequested, DaemonInfo, DaemonStatus, NotificationsPause,
    NotificationsState, QuestionAnswer, QuestionList, RunApplied, RunApply, RunArchive, RunCancel,
    RunFork, RunList, RunResume, RunStart, RunStarted, RunSteer, SteerQueued,
};
use weft::lang::{Diagnostic, LoadOptions, Workflow};
use weft::llm::LlmSettings;
use weft::model::{Code, Event, Retro, RetroSummary, RunSummary};
use weft::store::{Home, QuestionRecord};
use weft::views::{
    AppError, AppSettings, ArtifactContent, Changes, DeepLink, LogMatch, RunView, RunsPage,
    Spending, SpendingQuery, StageFiles, TrayState, Views,
};

/// A page of events a history call returns when the UI names no limit.
const EVENTS_PAGE: u32 = 1_000;
/// Log matches a search returns.
const LOG_MATCHES: u32 = 1_000;

pub type Result<T> = std::result::Result<T, AppError>;

/// `WEFT_HOME`, or the platform data dir.
pub fn home() -> Result<Home> {
    Ok(Home::from_env()?)
}

/// Runs `read` on a fresh read-only [`Views`] of the home, on one of the
/// history threads (SQLite and file reads must not stall the UI's event
/// loop; a fixed pair of threads bounds the memory malloc keeps, see
/// [`crate::history_pool`]).
async fn history<T, F>(read: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Views) -> weft::store::Result<T> + Send + 'static,
{
    let home = home()?;
    let failed = || {
        AppError::new(
            weft::model::Code::AppInternal,
            "a history read failed: its thread stopped".to_string(),
        )
    };
    crate::history_pool::shared()
        .ok_or_else(failed)?
        .run(move || read(&Views::open(&home)?).map_err(AppError::from))
        .await
        .ok_or_else(failed)?
}

/// A client of the home's daemon; `daemon.not_running` when none listens.
pub async fn client() -> Result<Client> {
    Ok(Client::connect(&home()?).await?)
}

// ----- history (read-only, works with the daemon stopped) ----------------

pub async fn runs_page(query: RunList) -> Result<RunsPage> {
    history(move |views| match crate::first_page::take_for(&query) {
        // The UI's first request: the page read while the window started.
        Some(page) => Ok(page),
        None => views.runs(&query),
    })
    .await
}

pub async fn run_view(run: String) -> Result<RunView> {
    history(move |views| views.run(&run)).await
}

pub async fn run_events(run: String, after_seq: u64, limit: Option<u32>) -> Result<Vec<Event>> {
    history(move |views| views.events(&run, after_seq, limit.unwrap_or(EVENTS_PAGE))).await
}

pub async fn stage_files(run: String, node: String, visit: u32) -> Result<StageFiles> {
    history(move |views| views.stage_files(&run, &node, visit)).await
}

/// The run's `final.patch` for the Files Changed view.
pub async fn run_changes(run: String) -> Result<Changes> {
    history(move |views| views.run_changes(&run)).await
}

/// A stage visit's `diff.patch` for the Files Changed view.
pub async fn stage_changes(run: String, node: String, visit: u32) -> Result<Changes> {
    history(move |views| views.stage_changes(&run, &node, visit)).await
}

/// The latest captured version of artifact `path` of the run, for a preview.
pub async fn artifact_content(run: String, path: String) -> Result<ArtifactContent> {
    history(move |views| views.artifact(&run, &path)).await
}

/// "Reveal in folder": writes the latest captured version of artifact
/// `path` to `artifacts/PATH` in the run directory, shows it in the file
/// manager and returns where it is (so the UI can say so even when no file
/// manager answers: `app.reveal_failed`, whose message names the file).
pub async fn reveal_artifact(run: String, path: String) -> Result<String> {
    let file = history(move |views| views.export_artifact(&run, &path)).await?;
    let shown = file.clone();
    tauri::async_runtime::spawn_blocking(move || crate::reveal::reveal(&shown))
        .await
        .map_err(|e| {
            AppError::new(
                weft::model::Code::AppInternal,
                format!("revealing failed: {e}"),
            )
        })?
        .map_err(|message| {
            AppError::new(
                weft::model::Code::AppRevealFailed,
                format!("{message}; the file is at {}", file.display()),
            )
        })?;
    Ok(file.display().to_string())
}

pub async fn search_logs(run: String, query: String) -> Result<Vec<LogMatch>> {
    history(move |views| views.search_logs(&run, &query, LOG_MATCHES)).await
}

/// Language-model spending over a window: what `weft cost --json` prints
/// for the same query (one read model).
pub async fn spending(query: SpendingQuery) -> Result<Spending> {
    history(move |views| views.spending(&query)).await
}

pub async fn workflow_names() -> Result<Vec<String>> {
    history(Views::workflow_names).await
}

pub async fn run_retro(run: String) -> Result<Option<Retro>> {
    history(move |views| views.retro(&run)).await
}

pub async fn retros() -> Result<Vec<RetroSummary>> {
    history(Views::retros).await
}

// ----- live (through the daemon) -----------------------------------------

pub async fn daemon_status() -> Result<DaemonInfo> {
    Ok(client().await?.call(DaemonStatus {}).await?)
}

/// Starts weftd for the home (or finds the one running) and returns its
/// status.
pub async fn daemon_start() -> Result<DaemonInfo> {
    let home = home()?;
    let weftd = weftd_path(std::env::current_exe().ok().as_deref());
    weft::server::detach::start_detached(&home, &weftd)
        .await
        .map(|(info, _started)| info)
        .map_err(|message| AppError::new(weft::model::Code::DaemonStartFailed, message))
}

/// Starts a run with the app's environment (its keys included) unless the
/// UI sent one: the daemon holds no keys of its own.
pub async fn run_start(mut params: RunStart) -> Result<RunStarted> {
    if params.env.is_empty() {
        params.env = CallerEnv::current();
    }
    Ok(client().await?.call(params).await?)
}

/// Archives or unarchives a run (a write, so through the daemon).
pub async fn run_archive(run: String, archived: bool) -> Result<RunSummary> {
    Ok(client().await?.call(RunArchive { run, archived }).await?)
}

pub async fn run_cancel(run: String) -> Result<CancelRequested> {
    Ok(client().await?.call(RunCancel { run }).await?)
}

pub async fn run_resume(run: String) -> Result<RunStarted> {
    let params = RunResume {
        run,
        auto_approve: false,
        // The daemon holds no keys of its own: the run uses the app's.
        env: CallerEnv::current(),
    };
    Ok(client().await?.call(params).await?)
}

/// Forks (or rewinds) `run` at `target` (`node@visit`, absent for the
/// latest checkpoint); the new run waits, cancelled, for `run_resume`.
pub async fn run_fork(run: String, target: Option<String>, rewind: bool) -> Result<Forked> {
    let params = RunFork {
        run,
        target,
        rewind,
    };
    Ok(client().await?.call(params).await?)
}

/// Applies a checkpointed run to its checkout (the daemon's `run.apply`,
/// into the branch checked out); refusals keep the daemon's code and paths.
pub async fn run_apply(run: String, patch: bool, force: bool) -> Result<RunApplied> {
    let params = RunApply {
        run,
        to: None,
        patch,
        force,
    };
    Ok(client().await?.call(params).await?)
}

/// Queues a steering message for the running agent stage `node` of `run`.
pub async fn steer_stage(run: String, node: String, text: String) -> Result<SteerQueued> {
    let params = RunSteer {
        run,
        node: Some(node),
        text,
    };
    Ok(client().await?.call(params).await?)
}

/// Pending questions, of one run or of all.
pub async fn question_list(run: Option<String>) -> Result<Vec<QuestionRecord>> {
    let params = QuestionList {
        run,
        pending_only: true,
    };
    Ok(client().await?.call(params).await?)
}

pub async fn question_answer(question: String, answer: AnswerBy) -> Result<QuestionRecord> {
    Ok(client()
        .await?
        .call(QuestionAnswer { question, answer })
        .await?)
}

/// The workflow file's diagnostics (empty when it is valid and clean);
/// `workflow.io` when it cannot be read.
pub async fn validate_workflow(path: PathBuf) -> Result<Vec<Diagnostic>> {
    tauri::async_runtime::spawn_blocking(move || {
        Workflow::load(&path, &LoadOptions::default())
            .map(|wf| wf.diagnostics)
            .map_err(|e| {
                AppError::new(
                    weft::model::Code::WorkflowIo,
                    format!("cannot read the workflow {}: {e}", path.display()),
                )
            })
    })
    .await
    .map_err(|e| {
        AppError::new(
            weft::model::Code::AppInternal,
            format!("validation failed: {e}"),
        )
    })?
}

// ----- the app itself ----------------------------------------------------

/// The model ids and aliases a run may name, for the Launch screen.
pub async fn model_names() -> Result<Vec<String>> {
    let home = home()?;
    tauri::async_runtime::spawn_blocking(move || model_names_in(&home))
        .await
        .map_err(|e| AppError::new(Code::AppInternal, format!("reading the models failed: {e}")))?
}

/// Every model id and alias of the catalog with `home`'s settings.toml laid
/// over it (a provider's own `models` list included), sorted, each once.
fn model_names_in(home: &Home) -> Result<Vec<String>> {
    let settings = LlmSettings::load(&home.settings_path())
        .map_err(|e| AppError::new(Code::LlmConfig, e.to_string()))?;
    let catalog = settings.catalog();
    let names: BTreeSet<String> = catalog
        .models
        .iter()
        .flat_map(|m| std::iter::once(&m.id).chain(&m.aliases))
        .chain(catalog.providers.values().flat_map(|p| &p.models))
        .cloned()
        .collect();
    Ok(names.into_iter().collect())
}

/// The version of this build of the app (the crate version, which is the
/// workspace version), shown by the UI under the header.
pub async fn app_version() -> Result<String> {
    Ok(env!("CARGO_PKG_VERSION").to_owned())
}

/// The link the app was started with (a clicked gate notification,
/// `weft open`, a `weft://` link the desktop handed over), if any.
pub async fn initial_route(app: &tauri::AppHandle) -> Result<Option<DeepLink>> {
    use tauri::Manager;
    Ok(app.state::<Option<DeepLink>>().inner().clone())
}

/// The app's settings from `$WEFT_HOME/app.json`.
pub async fn app_settings() -> Result<AppSettings> {
    Ok(crate::app_settings::load(&crate::app_settings::path(
        &home()?,
    )))
}

/// Saves the app's settings and, when Start at login changed, makes the
/// autostart entry match: app.json first, and back to what it was when the
/// entry cannot follow, so the setting never claims an entry that is not
/// there. One save at a time (two quick toggles must not put back each
/// other's files), off the async threads.
pub async fn set_app_settings(settings: AppSettings) -> Result<AppSettings> {
    static SAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let home = home()?;
    let save = move || {
        let _one = SAVING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let failed = |message: String| AppError::new(Code::AppError, message);
        let file = crate::app_settings::path(&home);
        let before = crate::app_settings::load(&file);
        crate::app_settings::save(&file, &settings).map_err(failed)?;
        if settings.start_at_login != before.start_at_login
            && let Err(e) = crate::autostart::set(&home, settings.start_at_login)
        {
            return Err(failed(match crate::app_settings::save(&file, &before) {
                Ok(()) => e,
                Err(back) => format!("{e}; and the settings could not be put back: {back}"),
            }));
        }
        Ok(settings)
    };
    tauri::async_runtime::spawn_blocking(save)
        .await
        .map_err(|e| AppError::new(Code::AppError, format!("saving the settings stopped: {e}")))?
}

/// What the tray shows, read from its real menu.
pub async fn tray_state(app: &tauri::AppHandle) -> Result<TrayState> {
    use tauri::Manager;
    // Asking the session bus and reading the menu items (which waits for
    // the main thread) block: not on the async threads.
    let app = app.clone();
    tauri::async_runtime::spawn_blocking(move || {
        app.state::<crate::tray::Tray>().state(crate::tray::host())
    })
    .await
    .map_err(|e| AppError::new(Code::AppError, format!("reading the tray stopped: {e}")))
}

/// How long pausing or resuming notifications waits for weftd.
const PAUSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Pauses, resumes or reports weftd's notifications; the tray follows at
/// once.
pub async fn notifications_pause(
    app: &tauri::AppHandle,
    paused: Option<bool>,
) -> Result<NotificationsState> {
    use tauri::Manager;
    // A weftd that takes the connection but never answers must not hold
    // the tray's Pause (one request at a time) for ever.
    let ask =
        async { Ok::<_, AppError>(client().await?.call(NotificationsPause { paused }).await?) };
    let answer = tokio::time::timeout(PAUSE_TIMEOUT, ask).await;
    app.state::<crate::tray::Tray>().refresh();
    answer.map_err(|_| {
        AppError::new(
            Code::AppError,
            format!("weftd did not answer within {} s", PAUSE_TIMEOUT.as_secs()),
        )
    })?
}

/// `weftd` beside the app's executable when it is there, else `weftd` to be
/// found on `PATH`.
pub fn weftd_path(exe: Option<&Path>) -> PathBuf {
    let name = format!("weftd{}", std::env::consts::EXE_SUFFIX);
    exe.and_then(Path::parent)
        .map(|dir| dir.join(&name))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_version_is_the_crate_version() {
        // The UI shows this string verbatim; it must match what was released.
        let version = tauri::async_runtime::block_on(app_version()).expect("a version");
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        assert!(
            !version.is_empty(),
            "an empty version would render as a blank line"
        );
    }

    #[test]
    fn model_names_are_the_catalog_with_the_settings_laid_over_it() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path());
        let builtin = model_names_in(&home).expect("the built-in catalog");
        assert!(
            builtin.iter().any(|n| n.starts_with("claude-")),
            "the built-in catalog names Anthropic's models: {builtin:?}"
        );
        let mut sorted = builtin.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(builtin, sorted, "sorted, each name once");

        std::fs::create_dir_all(temp.path()).expect("home");
        std::fs::write(
            home.settings_path(),
            "[providers.ollama]\nbase_url = \"http://localhost:11434/v1\"\nmodels = [\"llama3.1\"]\n",
        )
        .expect("settings.toml");
        let with_local = model_names_in(&home).expect("catalog with settings");
        assert!(
            with_local.iter().any(|n| n == "llama3.1"),
            "a provider added in settings.toml brings its models: {with_local:?}"
        );

        std::fs::write(home.settings_path(), "[providers.ollama\n").expect("broken settings");
        let err = model_names_in(&home).expect_err("a broken settings.toml is an error");
        assert_eq!(err.code, "llm.config");
    }

    #[test]
    fn weftd_is_found_beside_the_app_else_on_the_path() {
        let temp = tempfile::tempdir().expect("temp dir");
        let app = temp.path().join("weft-desktop");
        let name = format!("weftd{}", std::env::consts::EXE_SUFFIX);
        assert_eq!(
            weftd_path(Some(&app)),
            PathBuf::from(&name),
            "without a weftd beside the app, PATH decides"
        );
        std::fs::write(temp.path().join(&name), b"").expect("fake weftd");
        assert_eq!(weftd_path(Some(&app)), temp.path().join(&name));
        assert_eq!(weftd_path(None), PathBuf::from(&name));
    }

    #[test]
    fn a_stopped_daemon_is_reported_by_code() {
        // The UI offers "Start the daemon" on exactly this code.
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path());
        let err = tauri::async_runtime::block_on(Client::connect(&home))
            .map(|_| ())
            .map_err(AppError::from)
            .expect_err("no daemon listens in a fresh home");
        assert_eq!(err.code, "daemon.not_running");
    }

    #[test]
    fn history_of_an_empty_home_is_empty_not_an_error() {
        let temp = tempfile::tempdir().expect("temp dir");
        let views = Views::open(&Home::at(temp.path())).expect("views");
        let page = views.runs(&RunList::default()).expect("runs");
        assert_eq!(page.total, 0, "the app browses a fresh home without errors");
    }
}
