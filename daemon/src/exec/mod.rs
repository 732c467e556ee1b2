//! Running stage processes: each script in its own process group behind a
//! start gate, watched by the executor's reaper so none outlives it
//! ([`process`], [`reaper`]); cancellation shared by a run's stages
//! ([`cancel`]); and the environment a process inherits, secrets withheld
//! by the run's `[run.env]` policy ([`environment`]). The engine's command
//! stages and the agent's `shell` tool both run through here.

pub mod cancel;
pub mod environment;
pub mod interactive;
pub mod process;
pub mod reaper;
