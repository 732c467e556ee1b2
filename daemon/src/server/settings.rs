//! `$WEFT_HOME/settings.toml`: the daemon's settings. A missing file means
//! the defaults; an unreadable or invalid one stops the daemon with the
//! file and the problem named.

use serde::Deserialize;

use crate::lang::Diagnostic;
use crate::store::Home;

/// Runs executing at once when settings.toml does not say.
pub(crate) const DEFAULT_MAX_CONCURRENT_RUNS: usize = 4;

/// Bytes of events and replies that may wait for one client when
/// settings.toml does not say: 4 MiB, thousands of ordinary events, so only
/// a client that has stopped reading falls behind.
pub(crate) const DEFAULT_SUBSCRIBER_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// The smallest buffer settings.toml may ask for (smaller values are
/// raised to it).
pub(crate) const MIN_SUBSCRIBER_BUFFER_BYTES: usize = 16 * 1024;

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
    /// The desktop app a click on a gate's notification (and `weft open`)
    /// starts, with a `weft://` link as its one argument; by default
    /// `weft-desktop` beside weftd (or weft), when it is installed.
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
    /// [`settings_warnings`] reports those nothing reads.
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

    /// The desktop app to start with a link: [`Settings::app`], else
    /// `weft-desktop` beside the running executable when it is there.
    #[must_use]
    pub fn desktop_app(&self) -> Option<std::path::PathBuf> {
        self.app.clone().or_else(|| {
            let name = format!("weft-desktop{}", std::env::consts::EXE_SUFFIX);
            std::env::current_exe()
                .ok()?
                .parent()
                .map(|dir| dir.join(name))
                .filter(|path| path.is_file())
        })
    }
}

/// Starts the desktop app `app` (see [`Settings::desktop_app`]) with
/// `link` as its one argument, without the caller's terminal (null stdio)
/// and in its own process group, so signals meant for the caller (a
/// terminal's Ctrl-C, weftd's stop) do not reach it. Whoever starts it
/// decides whether to wait for the child.
pub fn start_desktop_app(
    app: &std::path::Path,
    link: &crate::model::DeepLink,
) -> std::io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    Command::new(app)
        .arg(link.url())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

/// The keys of `$WEFT_HOME/settings.toml` that none of its readers (the
/// daemon's settings, the language-model settings, the external agents)
/// reads, as warnings. Nothing when the file is missing, unreadable or
/// invalid: whoever reads it for real reports that.
#[must_use]
pub(crate) fn settings_warnings(path: &std::path::Path) -> Vec<Diagnostic> {
    let Ok(Some(text)) = crate::config::read(path) else {
        return Vec::new();
    };
    let daemon = crate::config::parse::<Settings>(&text);
    let llm = crate::config::parse::<crate::llm::LlmSettings>(&text);
    let agents = crate::config::parse::<crate::agent::external::AgentSettings>(&text);
    let budget = crate::config::parse::<crate::engine::handlers::budget::BudgetSettings>(&text);
    let retros = crate::config::parse::<crate::engine::retro::RetroSettings>(&text);
    let (
        Ok((_, by_daemon)),
        Ok((_, by_llm)),
        Ok((_, by_agents)),
        Ok((_, by_budget)),
        Ok((_, by_retros)),
    ) = (daemon, llm, agents, budget, retros)
    else {
        return Vec::new();
    };
    // Each reader skips the others' keys: a key is unknown when every
    // reader skips it (or a table holding it).
    let readers = [by_daemon, by_llm, by_agents, by_budget, by_retros];
    let covers = |skipped: &[String], path: &str| {
        skipped
            .iter()
            .any(|s| path == s || path.starts_with(&format!("{s}.")))
    };
    let mut unknown: Vec<String> = Vec::new();
    for path in readers.iter().flatten() {
        if readers.iter().all(|skipped| covers(skipped, path)) && !unknown.contains(path) {
            unknown.push(path.clone());
        }
    }
    crate::config::warnings(&path.display().to_string(), &text, &unknown)
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

    #[test]
    fn settings_keys_read_by_any_part_are_known() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("settings.toml");
        std::fs::write(
            &path,
            "max_concurrent_runs = 2\nmax_concurent_runs = 3\n[llm]\nmax_retries = 1\n\
             [providers.ollama]\nbase_url = \"http://localhost:1/v1\"\n[[models]]\nid = \"m\"\nprovider = \"ollama\"\n[notify]\nx = 1\n\
             [agents.claude]\nmodel = \"m\"\nmodle = \"n\"\n\
             [budget]\nmax_cost_per_day = 5.0\nmax_cost_per_dya = 1.0\n",
        )
        .expect("write");
        let found: Vec<(String, Option<u32>)> = settings_warnings(&path)
            .into_iter()
            .map(|d| (d.message, d.span.map(|s| s.line)))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "unknown key `max_concurent_runs` in settings.toml; it is ignored".to_string(),
                    Some(2)
                ),
                (
                    "unknown key `notify` in settings.toml; it is ignored".to_string(),
                    Some(10)
                ),
                (
                    "unknown key `agents.claude.modle` in settings.toml; it is ignored".to_string(),
                    Some(14)
                ),
                (
                    "unknown key `budget.max_cost_per_dya` in settings.toml; it is ignored"
                        .to_string(),
                    Some(17)
                ),
            ]
        );
    }
}
