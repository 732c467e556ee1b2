//! Each run executes on a thread of its own, with its own event loop.
//!
//! The daemon's thread serves clients: requests, subscriptions, the event
//! fan-out. A run's stages do blocking work between their awaits (SQLite
//! commits, spawning processes, files), so ten runs sharing that thread
//! made every subscriber wait for all of them (docs/performance.md, "The
//! daemon under load"), and a second core sat idle. On threads of their
//! own, runs use every core and the daemon's thread only relays what they
//! record. The engine's futures are `Send`, and everything a run shares
//! with the daemon (the store, the event hub, the gates, the cancel
//! tokens) is thread-safe.

use tokio::sync::oneshot;

use crate::engine::EngineError;
use crate::engine::launch::{Conclusion, Prepared, Resumable, Services};

/// A run's stack: parallel fan-outs and sub-workflows nest up to
/// `MAX_NESTING` levels, each a frame of the run loop on this thread
/// (about 150 KB a level in a debug build; the main thread's 8 MiB was
/// what they ran on before).
const RUN_STACK: usize = 16 * 1024 * 1024;

/// What a run thread executes.
pub(crate) enum Execution {
    Start(Box<Prepared>),
    Resume(Box<Resumable>),
}

impl Execution {
    async fn run(self, services: &Services) -> Result<Conclusion, EngineError> {
        match self {
            Execution::Start(prepared) => prepared.run(services).await,
            Execution::Resume(resumable) => resumable.run(services).await,
        }
    }
}

/// Executes `execution` with `services` on a new thread named after
/// `run_id`, and resolves to its result.
pub(crate) async fn run_on_own_thread(
    run_id: &str,
    execution: Execution,
    services: Services,
) -> Result<Conclusion, EngineError> {
    let (done, result) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name(format!("run-{}", &run_id[run_id.len().saturating_sub(8)..]))
        .stack_size(RUN_STACK)
        .spawn(move || {
            let outcome = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(execution.run(&services)),
                Err(e) => Err(EngineError::Io(format!(
                    "cannot start the run's event loop: {e}"
                ))),
            };
            let _ = done.send(outcome);
        });
    if let Err(e) = spawned {
        return Err(EngineError::Io(format!(
            "cannot start a thread for the run: {e}"
        )));
    }
    result.await.unwrap_or_else(|_| {
        Err(EngineError::Io(
            "the run's thread ended without a result (it panicked; see weftd's log)".into(),
        ))
    })
}
