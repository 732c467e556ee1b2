//! The execution engine: walks a workflow graph stage by stage, routes
//! along its edges and records every step durably (see docs/engine.md).
//!
//! - [`launch`]: starting and resuming runs (the front door).
//! - [`run`]: the run loop; [`routing`]: edge selection; [`retry`]: backoff.
//! - [`handlers`]: one file per node type.
//! - [`recorder`]: events to the database, the run directory and observers.
//! - [`environment`]: what commands inherit (secrets withheld, `[run.env]`).

pub mod artifacts;
pub mod cancel;
pub mod checkpoint;
pub mod clock;
pub mod context;
pub mod environment;
pub mod handlers;
pub mod interviewer;
pub(crate) mod launch;
pub mod models;
pub mod output;
pub mod preamble;
pub mod process;
pub mod reaper;
pub(crate) mod recorder;
pub mod retry;
pub mod routing;
pub mod run;

pub use launch::{Conclusion, EngineError, RunRequest, Services, StageSummary, resume, start};
