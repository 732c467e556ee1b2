//! The runs list's first page, handed to the page before its scripts run.
//!
//! Asking for it over IPC once the UI has started cost about 0.35 s of a
//! one-second start (docs/performance.md): the request waits for the
//! scripts and the first render, and the answer comes back through Tauri's
//! postMessage IPC. Instead the page is read on a thread of its own while
//! GTK and the webview start, and the window's initialisation script sets
//! `window.__WEFT_FIRST_RUNS__ = {at, page}` (`at`: when it was read, in ms
//! since the epoch). The UI shows it at once and asks for the page again
//! anyway, so it is only ever a head start; a page load long after start
//! (a reload) ignores it as stale.

use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weft::ipc::protocol::RunList;
use weft::views::Views;

/// The first page of the runs list as the UI first asks for it: 200 runs,
/// archived ones hidden (`PAGE_SIZE` and the default filters in
/// `ui/src/runs/useRunPages.ts`).
pub fn first_page_query() -> RunList {
    RunList {
        limit: Some(200),
        archived: Some(false),
        ..RunList::default()
    }
}

/// The page being read; see [`FirstPage::script`].
pub struct FirstPage(Option<JoinHandle<Option<String>>>);

impl FirstPage {
    /// Starts reading the first page on a thread of its own.
    pub fn read_in_background() -> FirstPage {
        let spawned = std::thread::Builder::new()
            .name("first-runs-page".into())
            .spawn(|| {
                let home = crate::commands::home().ok()?;
                let page = Views::open(&home).ok()?.runs(&first_page_query()).ok()?;
                Some(script_for(&serde_json::to_string(&page).ok()?, now_ms()))
            });
        FirstPage(spawned.ok())
    }

    /// The initialisation script, when the page was read within `wait`;
    /// `None` (the UI asks over IPC as usual) when reading failed or is
    /// still going, which it is left to finish.
    pub fn script(self, wait: Duration) -> Option<String> {
        let handle = self.0?;
        let deadline = Instant::now() + wait;
        while !handle.is_finished() {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        handle.join().ok().flatten()
    }
}

/// `window.__WEFT_FIRST_RUNS__ = {...};` with the page's JSON, which is
/// valid JavaScript as it is.
fn script_for(page_json: &str, at_ms: u128) -> String {
    format!("window.__WEFT_FIRST_RUNS__ = {{\"at\":{at_ms},\"page\":{page_json}}};")
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_sets_the_page_and_when_it_was_read() {
        let script = script_for(
            r#"{"runs":[],"total":0,"open_questions":{}}"#,
            1_700_000_000_123,
        );
        assert_eq!(
            script,
            r#"window.__WEFT_FIRST_RUNS__ = {"at":1700000000123,"page":{"runs":[],"total":0,"open_questions":{}}};"#
        );
    }

    #[test]
    fn a_home_without_history_still_hands_over_an_empty_page() {
        let temp = tempfile::tempdir().expect("temp dir");
        // WEFT_HOME is read by the thread; a fresh home has no database.
        let views = Views::open(&weft::store::Home::at(temp.path())).expect("views");
        let page = views.runs(&first_page_query()).expect("runs");
        let json = serde_json::to_string(&page).expect("json");
        assert!(script_for(&json, 1).contains(r#""total":0"#));
    }
}
