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

pub use guard::{
    SECRETS_FD_VAR, held, is_internal, is_non_dumpable, process_env, protect_process, scrubbed_env,
};
pub use pattern::{is_secret, is_secret_name, is_secret_value};
pub use redact::{MAX_KNOWN_SECRETS, MIN_KNOWN_SECRET_CHARS, REDACTED, Redactor};
