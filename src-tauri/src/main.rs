//! The Weft desktop app.
//!
//! A thin shell: the UI lives in `ui/` and is embedded from `ui/dist` at
//! compile time (there is no dev server). Commands are declared once in
//! [`surface`] and stay a few lines each ([`commands`], [`bridge`]): history is read straight from the SQLite
//! database (read-only, so it browses with the daemon stopped); everything
//! live goes to weftd over its socket. The app reads and asks, the daemon
//! does the work.

// Release builds on Windows get no console window.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod app_settings;
mod autostart;
mod bridge;
mod commands;
mod first_page;
mod history_pool;
#[cfg(unix)]
mod instance;
mod rendering;
mod reveal;
mod surface;
mod tray;

use weft::views::DeepLink;

/// The event that has the UI open a link; its payload is a [`DeepLink`].
pub const OPEN_ROUTE_EVENT: &str = "open-route";

fn main() {
    // A `weft://` link (a clicked gate notification, `weft open`, the
    // desktop's scheme handler), or the older `--run RUN --question ID`. A
    // link that does not parse is said and the app opens as usual.
    // An argument that is not UTF-8 is no link and no flag of ours: skipped
    // (`std::env::args` would panic on it).
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .filter_map(|arg| arg.into_string().ok())
        .collect();
    let route = DeepLink::from_args(&args).unwrap_or_else(|e| {
        eprintln!("weft-desktop: not opening the link: {e}");
        None
    });
    // Started at login (the autostart entry): hidden to the tray, if any.
    let hidden = args.iter().any(|arg| arg == "--hidden");
    #[cfg(unix)]
    let later_starts = match commands::home() {
        Ok(home) => match instance::claim(&home, route.as_ref()) {
            // The app already open for this home shows the route instead.
            instance::Claim::HandedOver => return,
            // It did not take it (said on stderr); it still owns the home.
            instance::Claim::Refused => std::process::exit(1),
            instance::Claim::First(listener) => listener,
        },
        // The first command shows the home error in the window.
        Err(_) => None,
    };
    first_page::read_in_background();
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .setup(move |app| {
            use tauri::Manager;
            let tray = tray::start(app, commands::home().ok());
            // Hidden only into a tray somebody sees; else the window shows.
            let visible = !(hidden && tray::visible(&tray));
            app.manage(tray);
            let window = main_window(app, first_page::script(), visible)?;
            rendering::fit_to_machine(&window);
            #[cfg(unix)]
            if let Some(listener) = later_starts {
                let handle = app.handle().clone();
                instance::serve(listener, move |route| show(&handle, route));
            }
            Ok(())
        })
        .manage(route)
        .manage(bridge::Bridges::default())
        .on_window_event(|window, event| match event {
            tauri::WindowEvent::Destroyed => {
                use tauri::Manager;
                window.state::<bridge::Bridges>().stop_all();
            }
            // With a tray, closing may hide the window instead (runs are
            // active, the tray is seen): decided off the main thread.
            tauri::WindowEvent::CloseRequested { api, .. }
                if tauri::Manager::state::<tray::Tray>(window).shown() =>
            {
                api.prevent_close();
                tray::close_or_hide(window.clone());
            }
            _ => {}
        })
        .invoke_handler(surface::handler())
        .run(tauri::generate_context!());
    if let Err(e) = result {
        eprintln!("weft-desktop: could not start the app window: {e}");
        std::process::exit(1);
    }
}

/// The one window (label `main`, which the capability names), with the
/// runs list's first page on it when it was read already.
fn main_window(
    app: &tauri::App,
    first_page: Option<String>,
    visible: bool,
) -> tauri::Result<tauri::WebviewWindow> {
    let mut builder = tauri::WebviewWindowBuilder::new(app, "main", tauri::WebviewUrl::default())
        .title("Weft")
        .visible(visible)
        .inner_size(1100.0, 720.0)
        .min_inner_size(640.0, 420.0);
    if let Some(script) = first_page {
        builder = builder.initialization_script(&script);
    }
    builder.build()
}

/// Shows the window at `link` (the tray's gate items and "N more…").
fn open_link(app: &tauri::AppHandle, link: Result<DeepLink, String>) {
    match link {
        Ok(link) => show(app, Some(link)),
        // An id the history holds that a link cannot carry: show the window.
        Err(e) => {
            eprintln!("weft-desktop: cannot open that place: {e}");
            show(app, None);
        }
    }
}

/// Raises the window for a later start of the app, and has the UI open
/// the link it brings, if any.
fn show(app: &tauri::AppHandle, route: Option<DeepLink>) {
    use tauri::{Emitter, Manager};
    if let Some(window) = app.get_webview_window("main") {
        // Best effort: a window manager may refuse focus; the route still opens.
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    if let Some(route) = route
        && let Err(e) = app.emit(OPEN_ROUTE_EVENT, route)
    {
        eprintln!("weft-desktop: cannot tell the window to open the link: {e}");
    }
}
