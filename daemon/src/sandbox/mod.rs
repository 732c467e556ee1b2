//! Sandboxes: a run's stages and agent commands executed inside a
//! container instead of on the host (issue 22).
//!
//! A sandbox is one long-lived container per run. It is created the first
//! time the run needs it, found again by its `weft.run` label (so a daemon
//! restarted after a crash reuses it rather than starting a second one),
//! and removed when the run finishes. The run's work directory is
//! bind-mounted at [`WORK_DIR`]; every command is an exec in that
//! container. The container has no network unless the settings ask for
//! one, and its CPU, memory and process limits come from [`Settings`].
//!
//! [`docker`] talks to the engine (Docker, or Podman's Docker-compatible
//! service) through the Docker Engine API; [`config`] reads `[run.sandbox]`
//! into [`Settings`]; [`run`] is a run's sandbox as command stages and the
//! agent's `shell` tool use it (docs/sandbox.md).

pub mod config;
pub mod docker;
pub mod run;
pub mod ssh;

use std::path::PathBuf;

/// Where the run's work directory appears inside the container.
pub const WORK_DIR: &str = "/work";

/// Where the run's stage folders (`nodes/` of its run folder) appear
/// inside: a command's status file and context are there.
pub const RUN_FILES_DIR: &str = "/weft/nodes";

/// The label naming the run a container belongs to.
pub const RUN_LABEL: &str = "weft.run";

/// The label every Weft sandbox carries, so that Weft's containers can be
/// listed apart from anyone else's on a shared engine.
pub const SANDBOX_LABEL: &str = "weft.sandbox";

/// How a sandbox is built: the image and its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The image, as the engine names it (`debian:bookworm`,
    /// `registry.example/tools:1`). It must have `sleep`, which keeps the
    /// container alive between commands, and `sh`, `tr`, `grep` and `kill`,
    /// with which a cancelled command is stopped.
    pub image: String,
    /// CPUs the container may use (`1.5` is one and a half); none: no limit.
    pub cpus: Option<f64>,
    /// Memory in bytes, swap included; none: no limit.
    pub memory_bytes: Option<u64>,
    /// Processes (and threads) the container may have at once; none: the
    /// engine's default.
    pub pids: Option<i64>,
    pub network: Network,
    /// Host paths mounted besides the work directory.
    pub mounts: Vec<Mount>,
    /// Environment every command in the container gets.
    pub env: Vec<(String, String)>,
}

impl Settings {
    /// A sandbox of `image` with no network and no limits besides the
    /// engine's defaults.
    #[must_use]
    pub fn new(image: &str) -> Settings {
        Settings {
            image: image.to_string(),
            cpus: None,
            memory_bytes: None,
            pids: None,
            network: Network::None,
            mounts: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// What network a sandbox has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// Only its own loopback: commands reach nothing outside, not even
    /// the host's loopback.
    #[default]
    None,
    /// The engine's default bridge: outbound access as the engine allows.
    Bridge,
}

/// A host directory or file mounted into the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: PathBuf,
    /// The absolute path inside the container.
    pub container: String,
    pub read_only: bool,
}
