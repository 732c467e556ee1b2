//! `$WEFT_HOME/settings.toml`: the daemon's settings. A missing file means
//! the defaults; an unreadable or invalid one stops the daemon with the
//! file and the problem named.

use serde::Deserialize;

use crate::store::Home;

/// Runs executing at once when settings.toml does not say.
pub const DEFAULT_MAX_CONCURRENT_RUNS: usize = 4;

/// Bytes of events and replies that may wait for one client when
/// settings.toml does not say: 4 MiB, thousands of ordinary events, so only
/// a client that has stopped reading falls behind.
pub const DEFAULT_SUBSCRIBER_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// The smallest buffer settings.toml may ask for (smaller values are
/// raised to it).
pub const MIN_SUBSCRIBER_BUFFER_BYTES: usize = 16 * 1024;

/// The daemon's settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// At most this many runs execute at once; the rest wait as `queued`.
    pub max_concurrent_runs: usize,
    /// Resume runs that a stopped or crashed daemon left unfinished.
    pub resume_interrupted: bool,
    /// Desktop notification when a human gate opens.
    pub notify_gates: bool,
    /// Desktop notification when a run fails.
    pub notify_failures: bool,
    /// Desktop notification when a run succeeds.
    pub notify_completions: bool,
    /// The desktop app a click on a gate's notification starts (with
    /// `--run RUN --question QUESTION`); by default `weft-desktop` beside
    /// weftd, when it is installed.
    pub app: Option<std::path::PathBuf>,
    /// The most bytes of events and replies waiting to be written to one
    /// client; a subscriber further behind has its subscription ended with
    /// a `lagged` notice and catches up from the database.
    pub subscriber_buffer_bytes: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_concurrent_runs: DEFAULT_MAX_CONCURRENT_RUNS,
            resume_interrupted: true,
            notify_gates: true,
            notify_failures: true,
            notify_completions: true,
            app: None,
            subscriber_buffer_bytes: DEFAULT_SUBSCRIBER_BUFFER_BYTES,
        }
    }
}

impl Settings {
    /// Reads `home`'s settings.toml (a regular file of at most
    /// [`crate::limits::MAX_CONFIG_BYTES`]). Keys it does not read are
    /// skipped: they belong to other parts of Weft, and
    /// [`crate::config::settings_warnings`] reports those nothing reads.
    pub fn load(home: &Home) -> Result<Settings, String> {
        let path = home.settings_path();
        let Some(text) = crate::config::read(&path)? else {
            return Ok(Settings::default());
        };
        let (mut settings, _): (Settings, _) =
            crate::config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        settings.max_concurrent_runs = settings.max_concurrent_runs.max(1);
        settings.subscriber_buffer_bytes = settings
            .subscriber_buffer_bytes
            .max(MIN_SUBSCRIBER_BUFFER_BYTES);
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_default_when_absent_and_read_when_present() {
        let dir = tempfile::tempdir().expect("dir");
        let home = Home::at(dir.path());
        assert_eq!(Settings::load(&home), Ok(Settings::default()));
        std::fs::write(
            home.settings_path(),
            "max_concurrent_runs = 1\nresume_interrupted = false\n[other]\nx = 1\n",
        )
        .expect("write");
        assert_eq!(
            Settings::load(&home),
            Ok(Settings {
                max_concurrent_runs: 1,
                resume_interrupted: false,
                ..Settings::default()
            })
        );
        std::fs::write(home.settings_path(), "max_concurrent_runs = \"many\"").expect("write");
        assert!(Settings::load(&home).is_err_and(|e| e.contains("settings.toml")));
    }
}
