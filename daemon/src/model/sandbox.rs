//! `[run.sandbox]`: where a run's commands execute, as the run
//! configuration writes it, as it is sent over the wire and stored with a
//! run. Turning it into a container's settings and reaching the engine is
//! the sandbox layer's (`crate::sandbox`).

use serde::{Deserialize, Serialize};

/// The image when the configuration names none: Fabro's default, a
/// Debian-based image with the usual build tools. Weft does not pull it:
/// the engine must have it (`docker pull buildpack-deps:noble`).
pub const DEFAULT_IMAGE: &str = "buildpack-deps:noble";

/// Where commands run: on this machine, or in a container.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Directly on the host, in the work dir (no isolation).
    #[default]
    Local,
    /// In one container per run, through the Docker Engine API (Docker or
    /// Podman), with the work dir mounted at `/work`.
    Docker,
}

impl Provider {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Local => "local",
            Provider::Docker => "docker",
        }
    }
}

/// When a run's container outlives the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    /// Removed when the run ends, however it ends.
    #[default]
    Never,
    /// Kept when the run fails (or is cancelled), to look inside; removed
    /// when it succeeds.
    OnFailure,
    /// Kept whatever happens (`--preserve-sandbox`).
    Always,
}

impl Keep {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Keep::Never => "never",
            Keep::OnFailure => "on_failure",
            Keep::Always => "always",
        }
    }

    /// Whether a run that ended `succeeded` (or not) keeps its container.
    #[must_use]
    pub fn keeps(self, succeeded: bool) -> bool {
        match self {
            Keep::Never => false,
            Keep::OnFailure => !succeeded,
            Keep::Always => true,
        }
    }
}

/// `[run.sandbox]` of a run configuration (docs/sandbox.md). Every field
/// is optional; an empty one means the local provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SandboxConfig {
    /// `local` (the default) or `docker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub provider: Option<Provider>,
    /// The image of the run's container (`docker` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub image: Option<String>,
    /// The engine's address (`unix:///…`, `tcp://host:port`,
    /// `ssh://user@host`); absent: the caller's `DOCKER_HOST`, else the
    /// usual socket. A started run stores the address it resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub engine: Option<String>,
    /// CPUs the container may use (`1.5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cpus: Option<f64>,
    /// Memory the container may use, swap included: bytes, or a size
    /// (`512MiB`, `4GB`; units are powers of 1024, as Docker reads them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub memory: Option<String>,
    /// Processes and threads the container may have at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub pids: Option<i64>,
    /// `none` (the default: no network at all) or `bridge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub network: Option<String>,
    /// Host paths mounted besides the work dir: `HOST:CONTAINER`, read-only,
    /// or `HOST:CONTAINER:rw`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<String>>", optional)]
    pub mounts: Vec<String>,
    /// When the container outlives the run: `never` (the default),
    /// `on_failure` or `always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub keep: Option<Keep>,
    /// Fabro's spelling of `keep = "always"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub preserve: Option<bool>,
    /// Who commands run as inside (`UID:GID`, a name the image knows);
    /// absent: the daemon's own user and group, so that the files commands
    /// write in the work dir are the user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub user: Option<String>,
    /// Fabro's `[run.sandbox.docker]`: the same settings in its spelling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub docker: Option<FabroDocker>,
}

/// Fabro's `[run.sandbox.docker]` table (execution/environments.mdx).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct FabroDocker {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub image: Option<String>,
    /// `none` or `bridge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub network_mode: Option<String>,
    /// `4GB`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub memory_limit: Option<String>,
    /// Microseconds of CPU per 100 ms: 200000 is two CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cpu_quota: Option<i64>,
}

impl SandboxConfig {
    /// True when nothing is set (the local provider).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == SandboxConfig::default()
    }

    /// The provider asked for; local when none.
    #[must_use]
    pub fn provider(&self) -> Provider {
        self.provider.unwrap_or_default()
    }

    /// The image asked for (Weft's key, then Fabro's), else
    /// [`DEFAULT_IMAGE`].
    #[must_use]
    pub fn image(&self) -> String {
        self.image
            .clone()
            .or_else(|| self.docker.as_ref().and_then(|d| d.image.clone()))
            .unwrap_or_else(|| DEFAULT_IMAGE.to_string())
    }

    /// The keep policy, Fabro's `preserve = true` read as `always`.
    #[must_use]
    pub fn keep(&self) -> Keep {
        match (self.keep, self.preserve) {
            (Some(keep), _) => keep,
            (None, Some(true)) => Keep::Always,
            _ => Keep::Never,
        }
    }

    /// This one's fields where it sets them, `base`'s elsewhere (flags
    /// over the run configuration).
    #[must_use]
    pub fn or(self, base: SandboxConfig) -> SandboxConfig {
        SandboxConfig {
            provider: self.provider.or(base.provider),
            image: self.image.or(base.image),
            engine: self.engine.or(base.engine),
            cpus: self.cpus.or(base.cpus),
            memory: self.memory.or(base.memory),
            pids: self.pids.or(base.pids),
            network: self.network.or(base.network),
            mounts: if self.mounts.is_empty() {
                base.mounts
            } else {
                self.mounts
            },
            keep: self.keep.or(base.keep),
            preserve: self.preserve.or(base.preserve),
            user: self.user.or(base.user),
            docker: self.docker.or(base.docker),
        }
    }
}
