//! The records every layer shares: what happened in a run ([`Event`]),
//! how a stage ended ([`Outcome`]), a run's status and the line that lists
//! it ([`RunSummary`]), what a run was started with ([`ModelChoice`],
//! [`EnvPolicy`], [`ParentLink`]), what it spent ([`Spend`]), an external
//! agent's permission request put to a person ([`PermissionAsk`]), a place
//! in the desktop app ([`DeepLink`]), and the error [`Code`]s clients
//! branch on.
//!
//! This is the bottom layer: plain data with serde and TypeScript (ts-rs)
//! derives, and the rules that belong to the data itself (a status's name,
//! an outcome's redaction, adding up spend). It depends on nothing in the
//! crate but [`crate::secrets`] (for redaction) and [`crate::util`] (cutting
//! text). The store persists these records, the engine produces them, the
//! wire protocol carries them.

pub mod code;
pub mod env_policy;
pub mod event;
pub mod link;
pub mod outcome;
pub mod permission;
pub mod retro;
pub mod run;
pub mod sandbox;
pub mod spend;

pub use code::Code;
pub use env_policy::EnvPolicy;
pub use event::{EdgeReason, Event, EventKind, Stream};
pub use link::DeepLink;
pub(crate) use outcome::failure_signature;
pub use outcome::{Failure, FailureClass, LlmUsage, Outcome, Status};
pub use permission::{PermissionAsk, PermissionChoice};
pub use retro::{Retro, RetroSummary, Smoothness};
pub use run::{
    AgentDefaults, Budget, DEFAULT_WARN_AT, ModelChoice, ParentLink, RunSpend, RunStatus,
    RunSummary,
};
pub use sandbox::SandboxConfig;
pub use spend::{Spend, Usage};
