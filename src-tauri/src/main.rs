//! The Weft desktop app.
//!
//! For now one window that shows the app's name and version; the UI lives in
//! `ui/` and is embedded from `ui/dist` at compile time (there is no dev
//! server). Commands stay a few lines each: the app reads and asks, the
//! daemon does the work.

// Release builds on Windows get no console window.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

/// The version of this build of the app (the crate version, which is the
/// workspace version), shown by the UI under the header.
#[tauri::command]
fn app_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

fn main() {
    let result = tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![app_version])
        .run(tauri::generate_context!());
    if let Err(e) = result {
        eprintln!("weft-desktop: could not start the app window: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_version_is_the_crate_version() {
        // The UI shows this string verbatim; it must match what was released.
        assert_eq!(app_version(), env!("CARGO_PKG_VERSION"));
        assert!(
            !app_version().is_empty(),
            "an empty version would render as a blank line"
        );
    }
}
