//! The tray icon: how many gates wait and runs run, a menu item per
//! waiting gate that opens its question, "Pause notifications" and "Quit".
//!
//! What it shows is [`model`], a pure function of the home's history
//! ([`Attention`], read-only through [`Views`]) and of whether weftd's
//! notifications are paused. A thread of its own reads both every
//! [`REFRESH`] (or at once when poked) and rebuilds the menu on the main
//! thread only when the model changed. Without the tray library the app
//! runs as before, without a tray, after one line on stderr.
//!
//! An icon being made is not an icon being seen: the library (a
//! StatusNotifier item) makes one whether or not a tray host runs, and
//! stock GNOME has none. A host is whoever owns the session bus name
//! [`WATCHER`]; [`host`] asks the bus, and only with one does closing the
//! window hide it ([`keeps_running`]) or `--hidden` start it hidden. Else
//! the window behaves as if there were no tray.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Wry};
use weft::ipc::client::Client;
use weft::ipc::protocol::NotificationsPause;
use weft::store::Home;
use weft::views::{Attention, DeepLink, TrayState, Views};

/// How often the tray reads the history and the daemon.
const REFRESH: Duration = Duration::from_secs(2);
/// Gates listed in the menu; the rest are behind "N more…".
pub const MAX_GATES: u32 = 10;
/// The longest gate label, in characters.
const LABEL_CHARS: usize = 60;
/// How long asking weftd whether notifications are paused may take.
const DAEMON_TIMEOUT: Duration = Duration::from_secs(1);

/// What the tray shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub tooltip: String,
    /// The text beside the icon (where the tray shows one): the number of
    /// gates waiting, none when none wait.
    pub title: Option<String>,
    pub items: Vec<Item>,
    pub paused: bool,
}

/// One menu entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Action {
        id: String,
        label: String,
    },
    Check {
        id: String,
        label: String,
        checked: bool,
    },
    Separator,
}

/// What a menu item does, from its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Open,
    Question { run: String, question: String },
    Gates,
    Pause,
    Quit,
}

/// "1 gate", "3 gates".
fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The tray for `attention`, with notifications `paused` or not.
pub fn model(attention: &Attention, paused: bool) -> Model {
    let gates = match attention.gates_total {
        0 => "no gates waiting".to_string(),
        n => format!("{} waiting", count(n, "gate", "gates")),
    };
    let running = match attention.running {
        0 => "none running".to_string(),
        n => format!("{n} running"),
    };
    let mut tooltip = format!("Weft — {gates}, {running}");
    if paused {
        tooltip.push_str(" (notifications paused)");
    }
    let mut items = vec![Item::Action {
        id: "open".into(),
        label: "Open Weft".into(),
    }];
    if !attention.gates.is_empty() {
        items.push(Item::Separator);
    }
    for gate in &attention.gates {
        items.push(Item::Action {
            id: format!("gate/{}/{}", gate.run_id, gate.question_id),
            label: gate_label(&gate.workflow, &gate.question),
        });
    }
    let listed = attention.gates.len() as u64;
    if attention.gates_total > listed {
        items.push(Item::Action {
            id: "gates".into(),
            label: format!("{} more…", attention.gates_total - listed),
        });
    }
    items.extend([
        Item::Separator,
        Item::Check {
            id: "pause".into(),
            label: "Pause notifications".into(),
            checked: paused,
        },
        Item::Action {
            id: "quit".into(),
            label: "Quit".into(),
        },
    ]);
    Model {
        tooltip,
        title: (attention.gates_total > 0).then(|| attention.gates_total.to_string()),
        items,
        paused,
    }
}

/// "workflow: question" on one line, cut to [`LABEL_CHARS`]; `&` doubled
/// so the menu does not read it as a keyboard accelerator.
fn gate_label(workflow: &str, question: &str) -> String {
    let line: String = format!("{workflow}: {question}")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut label: String = line.chars().take(LABEL_CHARS).collect();
    if line.chars().count() > LABEL_CHARS {
        label.pop();
        label.push('…');
    }
    label.replace('&', "&&")
}

/// The action of the menu item `id`.
pub fn action(id: &str) -> Option<Action> {
    match id {
        "open" => Some(Action::Open),
        "gates" => Some(Action::Gates),
        "pause" => Some(Action::Pause),
        "quit" => Some(Action::Quit),
        _ => {
            let (run, question) = id.strip_prefix("gate/")?.split_once('/')?;
            Some(Action::Question {
                run: run.to_string(),
                question: question.to_string(),
            })
        }
    }
}

// ----- the real tray -----------------------------------------------------

/// The app's tray (managed state): the icon when there is one, the menu it
/// shows now, and a way to have it read again at once.
///
/// Locks: no lock here is held across a call into Tauri's menu or tray
/// objects. Those calls run on the main thread and wait for it when made
/// from another thread, and the main thread takes these locks too (in
/// [`Tray::show`], on a close request): holding one across such a call
/// would freeze the app. Handles are cloned out of the lock instead.
pub struct Tray {
    live: Mutex<Option<Live>>,
    /// The check mark the user last asked for (or weftd last reported).
    paused: AtomicBool,
    /// One pause request to weftd at a time, so that the last one sent is
    /// the last click's.
    pausing: tokio::sync::Mutex<()>,
    poke: Mutex<Option<Sender<()>>>,
}

#[derive(Clone)]
struct Live {
    icon: TrayIcon<Wry>,
    menu: Option<Menu<Wry>>,
    tooltip: String,
}

/// What the tray's facts are now: the history's attention, and weftd's
/// pause state (`None`: no weftd answered).
struct Reading {
    attention: Attention,
    /// What weftd says: `None` when no weftd answers; `Some(None)` when it
    /// answers without a pause to report (an older weftd).
    paused: Option<Option<bool>>,
}

/// Reads the history and asks weftd. Blocks (SQLite, a socket): never on
/// the main thread.
fn read(home: &Home) -> Reading {
    let attention = Views::open(home)
        .and_then(|views| views.attention(MAX_GATES))
        // An unreadable history shows as nothing waiting; the window says
        // what is wrong.
        .unwrap_or_default();
    Reading {
        attention,
        paused: notifications_paused(home),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Tray {
    /// A tray icon was made: the tray library loaded. Whether anybody
    /// shows it is [`host`]'s question.
    pub fn shown(&self) -> bool {
        lock(&self.live).is_some()
    }

    /// Reads the history and the daemon again now.
    pub fn refresh(&self) {
        if let Some(poke) = lock(&self.poke).as_ref() {
            let _ = poke.send(());
        }
    }

    /// What the tray shows, read back from its menu items. Not on the main
    /// thread's behalf while it waits: the item reads dispatch to it.
    pub fn state(&self, host: bool) -> TrayState {
        // Cloned out: the item reads below wait for the main thread.
        let live = lock(&self.live).clone();
        let Some(live) = live else {
            return TrayState {
                host,
                ..TrayState::default()
            };
        };
        let mut state = TrayState {
            shown: true,
            host,
            tooltip: live.tooltip,
            ..TrayState::default()
        };
        let items = live
            .menu
            .as_ref()
            .and_then(|m| m.items().ok())
            .unwrap_or_default();
        for item in items {
            if let Some(item) = item.as_menuitem() {
                state.items.extend(item.text().ok());
            } else if let Some(check) = item.as_check_menuitem() {
                state.items.extend(check.text().ok());
                state.paused = check.is_checked().unwrap_or(false);
            }
        }
        state
    }

    /// Shows `model`: a new menu, tooltip and title. On the main thread.
    fn show(&self, app: &AppHandle, model: &Model) {
        let Some(icon) = lock(&self.live).as_ref().map(|l| l.icon.clone()) else {
            return;
        };
        let built = match menu(app, model) {
            Ok(menu) => {
                if let Err(e) = icon.set_menu(Some(menu.clone())) {
                    eprintln!("weft-desktop: cannot update the tray menu: {e}");
                }
                Some(menu)
            }
            Err(e) => {
                eprintln!("weft-desktop: cannot build the tray menu: {e}");
                None
            }
        };
        let _ = icon.set_tooltip(Some(&model.tooltip));
        let _ = icon.set_title(model.title.as_deref());
        if let Some(live) = lock(&self.live).as_mut() {
            if built.is_some() {
                live.menu = built;
            }
            live.tooltip.clone_from(&model.tooltip);
        }
        self.paused.store(model.paused, Ordering::SeqCst);
    }
}

fn menu(app: &AppHandle, model: &Model) -> tauri::Result<Menu<Wry>> {
    let menu = Menu::new(app)?;
    for item in &model.items {
        match item {
            Item::Action { id, label } => {
                menu.append(&MenuItem::with_id(app, id, label, true, None::<&str>)?)?;
            }
            Item::Check { id, label, checked } => {
                menu.append(&CheckMenuItem::with_id(
                    app,
                    id,
                    label,
                    true,
                    *checked,
                    None::<&str>,
                )?)?;
            }
            Item::Separator => menu.append(&PredefinedMenuItem::separator(app)?)?,
        }
    }
    Ok(menu)
}

/// Makes the tray icon and starts reading what it shows (from `home`,
/// when the app has one). A missing tray library is one line on stderr
/// and a [`Tray`] without an icon; the app runs on without it.
pub fn start(app: &tauri::App, home: Option<Home>) -> Tray {
    let tray = Tray {
        live: Mutex::new(None),
        paused: AtomicBool::new(false),
        pausing: tokio::sync::Mutex::new(()),
        poke: Mutex::new(None),
    };
    // libappindicator is loaded when the first icon is made, and its
    // loader panics when the library is missing: caught, and said in one
    // line instead of a panic report. The panic hook is process-wide, so
    // the silent one is only in place while the icon is made and the
    // previous hook is put back right after: a panic on another thread in
    // those few milliseconds (the first-page reader, Tauri's) would go
    // unreported, later ones anywhere still report.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut builder = TrayIconBuilder::with_id("weft")
            .tooltip("Weft")
            .on_menu_event(|app, event| act(app, event.id().as_ref()));
        if let Some(icon) = app.default_window_icon() {
            builder = builder.icon(icon.clone());
        }
        builder.build(app)
    }));
    std::panic::set_hook(previous);
    let icon = match built {
        Ok(Ok(icon)) => icon,
        Ok(Err(e)) => {
            eprintln!("weft-desktop: no tray icon ({e}); closing the window quits the app");
            return tray;
        }
        Err(_) => {
            eprintln!(
                "weft-desktop: no tray icon (libayatana-appindicator3 could not be loaded); closing the window quits the app"
            );
            return tray;
        }
    };
    *lock(&tray.live) = Some(Live {
        icon,
        menu: None,
        tooltip: "Weft".into(),
    });
    // A menu from the start (Open, Pause, Quit), also for an app without a
    // home; the thread below fills in the counts.
    tray.show(app.handle(), &model(&Attention::default(), false));
    if let Some(home) = home {
        let (poke, poked) = channel();
        *lock(&tray.poke) = Some(poke);
        watch(app.handle().clone(), home, poked);
    }
    tray
}

/// The thread that reads what the tray shows and updates it when it
/// changed.
fn watch(app: AppHandle, home: Home, poked: Receiver<()>) {
    let spawned = std::thread::Builder::new()
        .name("tray".into())
        .spawn(move || {
            let mut shown: Option<Model> = None;
            loop {
                let reading = read(&home);
                let next = model(
                    &reading.attention,
                    reading.paused.flatten().unwrap_or(false),
                );
                if shown.as_ref() != Some(&next) {
                    let handle = app.clone();
                    let model = next.clone();
                    let _ = app.run_on_main_thread(move || {
                        handle.state::<Tray>().show(&handle, &model);
                    });
                    shown = Some(next);
                }
                match poked.recv_timeout(REFRESH) {
                    // Poked: shown again even when unchanged, since a click
                    // may have toggled the check mark that weftd refused.
                    Ok(()) => shown = None,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("weft-desktop: the tray cannot follow the runs ({e})");
    }
}

/// Whether weftd's notifications are paused: `None` when no weftd
/// answers, `Some(None)` when one answers with an error (a weftd older than
/// the pause is still a weftd whose runs are active).
fn notifications_paused(home: &Home) -> Option<Option<bool>> {
    tauri::async_runtime::block_on(async {
        let ask = async {
            let client = Client::connect(home).await.ok()?;
            Some(
                client
                    .call(NotificationsPause { paused: None })
                    .await
                    .ok()
                    .map(|s| s.paused),
            )
        };
        tokio::time::timeout(DAEMON_TIMEOUT, ask)
            .await
            .ok()
            .flatten()
    })
}

/// Carries out the menu item `id`.
fn act(app: &AppHandle, id: &str) {
    match action(id) {
        Some(Action::Open) => crate::show(app, None),
        Some(Action::Question { run, question }) => {
            crate::open_link(app, DeepLink::question(&run, &question));
        }
        Some(Action::Gates) => crate::open_link(app, DeepLink::screen("gates")),
        Some(Action::Pause) => {
            // Flipped at once, so a second click flips what the first one
            // asked for, not what the last reading said.
            app.state::<Tray>().paused.fetch_xor(true, Ordering::SeqCst);
            let handle = app.clone();
            tauri::async_runtime::spawn(async move {
                let tray = handle.state::<Tray>();
                // One request at a time, each sending the latest wish: two
                // quick clicks end where the second one asked.
                let _one = tray.pausing.lock().await;
                let pause = tray.paused.load(Ordering::SeqCst);
                if let Err(e) = crate::commands::notifications_pause(&handle, Some(pause)).await {
                    eprintln!("weft-desktop: cannot pause notifications: {}", e.message);
                    // The check mark goes back to what weftd says.
                    handle.state::<Tray>().refresh();
                }
            });
        }
        Some(Action::Quit) => app.exit(0),
        None => {}
    }
}

/// Closing the window (its close request was prevented): decided on a
/// thread of its own, since the history, weftd and the session bus are
/// asked, then the window is hidden ([`keeps_running`]) or destroyed,
/// which quits the app.
pub fn close_or_hide(window: tauri::Window) {
    let deciding = window.clone();
    let decide = move || {
        let keep = keeps_running(deciding.app_handle());
        let shut = deciding.clone();
        let _ = deciding.run_on_main_thread(move || {
            let done = if keep { shut.hide() } else { shut.destroy() };
            if let Err(e) = done {
                eprintln!("weft-desktop: cannot close the window: {e}");
            }
        });
    };
    if let Err(e) = std::thread::Builder::new()
        .name("close".into())
        .spawn(decide)
    {
        eprintln!("weft-desktop: closing without asking whether runs are active ({e})");
        let _ = window.destroy();
    }
}

/// Whether closing the window should hide it to the tray: the setting is
/// on, weftd answers and a run is active, and a tray is seen
/// ([`visible`]). No weftd, no active run: the history's "running" rows of
/// a weftd that died are no runs anybody waits for. Read afresh (not the
/// tray thread's last reading, up to [`REFRESH`] old: a run that just
/// ended would keep the app). Blocks: not on the main thread.
fn keeps_running(app: &AppHandle) -> bool {
    let Ok(home) = crate::commands::home() else {
        return false;
    };
    if !crate::app_settings::load(&crate::app_settings::path(&home)).keep_in_tray {
        return false;
    }
    let reading = read(&home);
    if reading.paused.is_none() || reading.attention.active == 0 {
        return false;
    }
    visible(&app.state::<Tray>())
}

/// Whether the tray is seen: an icon was made and a StatusNotifier host
/// shows it ([`host`]).
pub fn visible(tray: &Tray) -> bool {
    tray.shown() && host()
}

/// The D-Bus name of the StatusNotifier watcher: the tray host (a panel
/// or a shell extension) owns it, and icons register with it.
pub const WATCHER: &str = "org.kde.StatusNotifierWatcher";
/// How long asking the session bus for the watcher may take.
const HOST_TIMEOUT: Duration = Duration::from_millis(500);

/// Whether a StatusNotifier host runs: the session bus name [`WATCHER`]
/// has an owner. The tray library makes its icon either way (stock GNOME
/// has no host), so only this says whether anybody sees it. Blocks for
/// at most [`HOST_TIMEOUT`]; no bus or no answer is no host.
pub fn host() -> bool {
    let (tx, rx) = channel();
    let spawned = std::thread::Builder::new()
        .name("tray-host".into())
        .spawn(move || {
            let owned = tauri::async_runtime::block_on(async {
                let ask = async {
                    let bus = zbus::Connection::session().await?;
                    let dbus = zbus::fdo::DBusProxy::new(&bus).await?;
                    let name = zbus::names::BusName::try_from(WATCHER)?;
                    dbus.name_has_owner(name).await.map_err(zbus::Error::from)
                };
                tokio::time::timeout(HOST_TIMEOUT, ask).await
            });
            let _ = tx.send(matches!(owned, Ok(Ok(true))));
        });
    if spawned.is_err() {
        return false;
    }
    // The thread has its own timeout; this one bounds the caller even if
    // connecting blocks outside of it.
    rx.recv_timeout(HOST_TIMEOUT + Duration::from_millis(100))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use super::*;
    use weft::views::WaitingGate;

    fn gate(n: u32) -> WaitingGate {
        WaitingGate {
            run_id: format!("01RUN{n}"),
            question_id: format!("q-{n}"),
            workflow: "Release".into(),
            question: format!("Ship {n}?"),
        }
    }

    fn labels(model: &Model) -> Vec<&str> {
        model
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Action { label, .. } | Item::Check { label, .. } => Some(label.as_str()),
                Item::Separator => None,
            })
            .collect()
    }

    #[test]
    fn an_idle_home_says_nothing_waits_and_offers_open_pause_and_quit() {
        let m = model(&Attention::default(), false);
        assert_eq!(m.tooltip, "Weft — no gates waiting, none running");
        assert_eq!(m.title, None);
        assert_eq!(labels(&m), ["Open Weft", "Pause notifications", "Quit"]);
    }

    #[test]
    fn each_waiting_gate_is_an_item_that_opens_its_question() {
        let attention = Attention {
            gates: vec![gate(1), gate(2)],
            gates_total: 2,
            running: 3,
            active: 5,
        };
        let m = model(&attention, true);
        assert_eq!(
            m.tooltip,
            "Weft — 2 gates waiting, 3 running (notifications paused)"
        );
        assert_eq!(m.title.as_deref(), Some("2"));
        assert_eq!(
            labels(&m),
            [
                "Open Weft",
                "Release: Ship 1?",
                "Release: Ship 2?",
                "Pause notifications",
                "Quit"
            ]
        );
        let Item::Action { id, .. } = &m.items[2] else {
            panic!("a gate item: {:?}", m.items[2]);
        };
        assert_eq!(
            action(id),
            Some(Action::Question {
                run: "01RUN1".into(),
                question: "q-1".into()
            })
        );
        assert!(m.items.contains(&Item::Check {
            id: "pause".into(),
            label: "Pause notifications".into(),
            checked: true
        }));
    }

    #[test]
    fn gates_past_the_listed_ones_are_one_more_item_opening_the_gates_screen() {
        let attention = Attention {
            gates: (1..=MAX_GATES).map(gate).collect(),
            gates_total: 13,
            running: 1,
            active: 13,
        };
        let m = model(&attention, false);
        assert_eq!(m.tooltip, "Weft — 13 gates waiting, 1 running");
        let more = m
            .items
            .iter()
            .find(|i| matches!(i, Item::Action { label, .. } if label == "3 more…"))
            .expect("a more item");
        let Item::Action { id, .. } = more else {
            unreachable!()
        };
        assert_eq!(action(id), Some(Action::Gates));
        assert_eq!(labels(&m).len(), 1 + 10 + 1 + 2);
    }

    #[test]
    fn a_gate_label_is_one_short_line_and_shows_ampersands() {
        let long = "x".repeat(100);
        let label = gate_label("Deploy", &format!("Ship\nnow & {long}"));
        assert!(!label.contains('\n'));
        assert!(label.starts_with("Deploy: Ship now && x"), "{label}");
        assert!(label.ends_with('…'));
        assert_eq!(label.replace("&&", "&").chars().count(), LABEL_CHARS);
        let one = model(
            &Attention {
                gates: vec![gate(1)],
                gates_total: 1,
                running: 1,
                active: 1,
            },
            false,
        );
        assert_eq!(one.tooltip, "Weft — 1 gate waiting, 1 running");
    }

    #[test]
    fn menu_ids_name_their_actions_and_unknown_ids_none() {
        assert_eq!(action("open"), Some(Action::Open));
        assert_eq!(action("quit"), Some(Action::Quit));
        assert_eq!(action("pause"), Some(Action::Pause));
        assert_eq!(action("gate/only-run"), None);
        assert_eq!(action("elsewhere"), None);
    }
}
