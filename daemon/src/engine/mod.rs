//! The execution engine: walks a workflow graph stage by stage, routes
//! along its edges and records every step durably (see docs/engine.md).
//!
//! - [`launch`]: starting and resuming runs (the front door).
//! - [`run`]: the run loop; [`routing`]: edge selection; [`retry`]: backoff.
//! - [`handlers`]: one file per node type.
//! - [`recorder`]: events to the database, the run directory and observers.
//!
//! Stage processes, cancellation and the environment commands inherit are
//! in [`crate::exec`].

pub mod apply;
pub mod artifacts;
pub mod checkpoint;
pub mod clock;
pub mod context;
pub mod fork;
pub mod handlers;
pub mod interviewer;
pub(crate) mod launch;
pub mod models;
pub mod output;
pub mod preamble;
pub(crate) mod recorder;
pub mod retro;
pub mod retry;
pub mod routing;
pub mod run;
pub(crate) mod run_git;
pub mod steering;

pub use handlers::budget::RunBudget;
pub use launch::{Conclusion, EngineError, RunRequest, Services, StageSummary, resume, start};
