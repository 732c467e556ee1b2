//! The engine run in-process, shared by the engine and prompt-node tests:
//! one run of a workflow in a fresh WEFT_HOME and working directory, with
//! every event it emits collected. Everything is real — SQLite, the run
//! directory, the blob store, child processes — except the clock, which is
//! fake so that retry backoff and wait stages do not sleep, and the human
//! gates, which take scripted answers. Also the fake provider server the
//! LLM tests share.

// A test that cannot set itself up should stop there, with the reason.
#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use weft::engine::clock::Clock;
use weft::engine::interviewer::{Interviewer, Scripted};
use weft::engine::{Conclusion, RunRequest, Services};
use weft::exec::cancel::Cancel;
use weft::model::ModelChoice;
use weft::model::RunStatus;
use weft::model::{Event, EventKind};
use weft::store::{Home, Store};
use weft_fakellm::FakeLlm;

/// The engine fixture `name` (`tests/fixtures/engine/`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/engine")
        .join(name)
}

/// One finished run, with the homes it ran in (removed when it is dropped).
pub struct Run {
    pub conclusion: Conclusion,
    /// Every event, in the order the engine emitted them.
    pub events: Vec<Event>,
    /// The run's clock: what it slept.
    pub clock: Clock,
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

impl Run {
    /// `node` or `node@visit`, in execution order.
    pub fn sequence(&self) -> Vec<String> {
        self.conclusion
            .stages
            .iter()
            .map(|s| {
                if s.visit > 1 {
                    format!("{}@{}", s.node_id, s.visit)
                } else {
                    s.node_id.clone()
                }
            })
            .collect()
    }

    pub fn status(&self) -> RunStatus {
        self.conclusion.status
    }

    pub fn reason(&self) -> String {
        self.conclusion.failure_reason.clone().unwrap_or_default()
    }

    /// The outcome status of `node`'s last stage, as the conclusion lists it.
    pub fn outcome_of(&self, node: &str) -> String {
        self.conclusion
            .stages
            .iter()
            .rev()
            .find(|s| s.node_id == node)
            .map(|s| s.outcome.clone())
            .unwrap_or_default()
    }

    /// The committed outcome of `node`'s (last) stage, from its event.
    pub fn outcome(&self, node: &str) -> weft::model::Outcome {
        self.events
            .iter()
            .rev()
            .find_map(|e| match &e.kind {
                EventKind::StageCompleted { outcome, .. }
                | EventKind::StageFailed { outcome, .. }
                    if e.node_id.as_deref() == Some(node) =>
                {
                    Some(outcome.clone())
                }
                _ => None,
            })
            .expect("the node ran")
    }

    /// The events named `name` (`stage.failed`, ...).
    pub fn named(&self, name: &str) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.kind.name() == name)
            .collect()
    }

    /// The file `file` of `node`'s stage folder, or "" when there is none.
    pub fn stage_file(&self, node: &str, file: &str) -> String {
        std::fs::read_to_string(self.conclusion.run_dir.join("nodes").join(node).join(file))
            .unwrap_or_default()
    }

    /// The last checkpoint's context.
    pub fn context(&self) -> serde_json::Map<String, Value> {
        self.checkpoint()["context_values"]
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    /// The last checkpoint, as the store holds it.
    pub fn checkpoint(&self) -> Value {
        let store = Store::open(&Home::at(self.home.path())).expect("store");
        let run = store.find_run(&self.conclusion.run_id).expect("run");
        serde_json::from_str(run.checkpoint.as_deref().expect("checkpoint"))
            .expect("checkpoint json")
    }
}

/// How to run: what differs between tests. The default is a seed of 7,
/// no gate answers, no inputs, the default model, and no caller
/// environment.
#[derive(Default)]
pub struct Options {
    /// The human gates' answers, in the order they are asked.
    pub answers: Vec<&'static str>,
    pub seed: Option<u64>,
    pub dry_run: bool,
    pub inputs: BTreeMap<String, String>,
    /// The caller's environment the run's commands and providers see.
    pub env: Option<Vec<(String, String)>>,
    pub model: ModelChoice,
    /// `--no-checkpoint` and `--include-dirty` (git checkpoint mode).
    pub no_checkpoint: bool,
    pub include_dirty: bool,
}

/// Runs the engine fixture `name` in a fresh WEFT_HOME and working directory.
pub async fn run(name: &str, options: Options) -> Run {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    run_in(fixture(name), options, home, work).await
}

/// Runs the workflow at `path` in the given WEFT_HOME and working directory.
pub async fn run_in(
    path: PathBuf,
    options: Options,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
) -> Run {
    let source = std::fs::read_to_string(&path).expect("workflow");
    let weft_home = Home::at(home.path());
    let store = Store::open(&weft_home).expect("store");
    let clock = Clock::fake();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let interviewer: Arc<dyn Interviewer> = Arc::new(Scripted::new(options.answers.clone()));
    let services = Services {
        caller_env: None,
        home: weft_home,
        store: Arc::new(Mutex::new(store)),
        interviewer,
        clock: clock.clone(),
        cancel: Cancel::new(),
        observer: Some(Arc::new(move |e: &Event| {
            sink.lock().expect("events").push(e.clone());
        })),
        nesting: 0,
        agents: weft::engine::steering::RunningAgents::default(),
        budget: None,
        sandbox: None,
    };
    let request = RunRequest {
        workflow_path: Some(path),
        source,
        goal: None,
        inputs: options.inputs,
        dry_run: options.dry_run,
        auto_approve: false,
        seed: Some(options.seed.unwrap_or(7)),
        work_dir: work.path().to_path_buf(),
        env: options.env,
        model: options.model,
        no_checkpoint: options.no_checkpoint,
        include_dirty: options.include_dirty,
        ..RunRequest::default()
    };
    let conclusion = weft::engine::start(request, &services)
        .await
        .expect("the run starts");
    let events = events.lock().expect("events").clone();
    Run {
        conclusion,
        events,
        clock,
        home,
        work,
    }
}

/// `&["a", "b"]` as owned strings, to compare with [`Run::sequence`].
pub fn seq(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// The fake provider server (`weft-fakellm`) on loopback, shared by every
/// test of this binary; tests keep apart by scripting their own key.
pub fn fake_llm() -> &'static FakeLlm {
    static SERVER: OnceLock<FakeLlm> = OnceLock::new();
    SERVER.get_or_init(FakeLlm::start)
}

/// A key no other test uses, so tests share the server without interfering.
pub fn fresh_key(tag: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "sk-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
