//! The runs list's first page, read while the window starts.
//!
//! Asking for it over IPC once the UI has started cost about 0.35 s of a
//! one-second start (docs/performance.md): the request waits for the
//! scripts and the first render, and the database read starts only then.
//! Instead the page is read on a thread of its own from the app's first
//! moment, while GTK and the webview start. When it is read by the time the
//! window is built, the window's initialisation script sets
//! `window.__WEFT_FIRST_RUNS__ = {at, page}` (`at`: when it was read, in ms
//! since the epoch) and the UI shows it in its first render. The window
//! never waits for it: from a cold database on a busy machine the read
//! takes longer than GTK's start, and waiting (150 ms, until 2026-12-04)
//! put the whole wait on the start. Then the UI's own `runs_page` request
//! for that page, sent as its scripts start, gets the page the thread read
//! ([`take_for`]) instead of a second read. Either way the UI asks, so the
//! hand-over is only ever a head start; a page load long after start (a
//! reload) ignores it as stale.

use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weft::ipc::protocol::RunList;
use weft::views::{RunsPage, Views};

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

/// How long after it was read the page may still answer the UI's request:
/// as the UI's own `FIRST_PAGE_FRESH_MS`, a start, not a later reload.
const FRESH: Duration = Duration::from_secs(5);

/// The page and when it was read.
struct Read {
    page: RunsPage,
    at: Instant,
    at_ms: u128,
}

enum State {
    Reading(JoinHandle<Option<Read>>),
    Read(Read),
    Taken,
}

static FIRST_PAGE: OnceLock<Mutex<State>> = OnceLock::new();

/// Starts reading the first page on a thread of its own (once).
pub fn read_in_background() {
    let spawned = std::thread::Builder::new()
        .name("first-runs-page".into())
        .spawn(|| {
            let home = crate::commands::home().ok()?;
            let page = Views::open(&home).ok()?.runs(&first_page_query()).ok()?;
            Some(Read {
                page,
                at: Instant::now(),
                at_ms: now_ms(),
            })
        });
    let state = spawned.map_or(State::Taken, State::Reading);
    let _ = FIRST_PAGE.set(Mutex::new(state));
}

/// The initialisation script, when the page is read already; `None` (the
/// UI asks over IPC, and [`take_for`] answers) when reading failed or is
/// still going, which it is left to finish.
pub fn script() -> Option<String> {
    let mut state = FIRST_PAGE.get()?.lock().ok()?;
    if let State::Reading(handle) = &*state {
        if !handle.is_finished() {
            return None;
        }
        let State::Reading(handle) = std::mem::replace(&mut *state, State::Taken) else {
            return None;
        };
        if let Some(read) = handle.join().ok().flatten() {
            *state = State::Read(read);
        }
    }
    let State::Read(read) = &*state else {
        return None;
    };
    Some(script_for(
        &serde_json::to_string(&read.page).ok()?,
        read.at_ms,
    ))
}

/// The page read at start, for the UI's request `query`, once: when the
/// query is the first page's and the page is fresh. Waits for the read
/// when it is still going (the caller is a history thread).
pub fn take_for(query: &RunList) -> Option<RunsPage> {
    if !is_first_page(query) {
        return None;
    }
    let mut state = FIRST_PAGE.get()?.lock().ok()?;
    let read = match std::mem::replace(&mut *state, State::Taken) {
        State::Reading(handle) => handle.join().ok().flatten()?,
        State::Read(read) => read,
        State::Taken => return None,
    };
    (read.at.elapsed() < FRESH).then_some(read.page)
}

/// Whether `query` asks for exactly the page read at start (the UI sends
/// `offset: 0`, the same as none).
fn is_first_page(query: &RunList) -> bool {
    let mut asked = query.clone();
    if asked.offset == Some(0) {
        asked.offset = None;
    }
    asked == first_page_query()
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
    fn only_the_uis_unfiltered_first_page_is_answered_from_the_start_read() {
        let ui_first = RunList {
            offset: Some(0),
            ..first_page_query()
        };
        assert!(is_first_page(&ui_first));
        assert!(is_first_page(&first_page_query()));
        let second = RunList {
            offset: Some(200),
            ..first_page_query()
        };
        let failed = RunList {
            status: Some(weft::model::RunStatus::Failed),
            ..first_page_query()
        };
        let archived_too = RunList {
            archived: None,
            ..first_page_query()
        };
        for other in [second, failed, archived_too] {
            assert!(!is_first_page(&other), "{other:?}");
        }
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
