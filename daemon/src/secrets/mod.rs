//! Secrets: which environment variables and values are credentials
//! ([`is_secret`]), taking them out of recorded text ([`Redactor`]), and
//! keeping them away from the commands a process runs ([`protect_process`]).
//!
//! The policy is documented in docs/engine.md ("Secrets"). Everything that
//! decides whether a value is a secret goes through this module, so that
//! what commands are denied, what is stored and what is redacted agree.

mod guard;
mod pattern;
mod redact;

pub use guard::{held, is_non_dumpable, protect_process};
pub(crate) use guard::{is_internal, process_env, scrubbed_env};
pub(crate) use pattern::is_secret;
#[cfg(test)]
pub(crate) use pattern::is_secret_name;
pub use redact::{REDACTED, Redactor};
