//! The floor of the app's start: a bare Tauri window, same crate versions
//! and window settings as weft-desktop, whose page puts one row in the DOM
//! from a module script and nothing else. `tests/app/perf.py --floor`
//! starts it the way it starts the app, so the difference between the two
//! is what the app itself adds (docs/performance.md, "The real app window").
//!
//! ```sh
//! cargo build --release -p weft-desktop --example floor
//! ```

// The same compositing choice as the app's window (no GPU: painted without
// OpenGL), so the floor paints the way the app does.
#[path = "../src/rendering.rs"]
mod rendering;

fn main() {
    let result = tauri::Builder::default()
        .setup(|app| {
            let window =
                tauri::WebviewWindowBuilder::new(app, "main", tauri::WebviewUrl::default())
                    .title("Weft floor")
                    .inner_size(1100.0, 720.0)
                    .build()?;
            rendering::fit_to_machine(&window);
            Ok(())
        })
        .run(tauri::generate_context!("examples/floor/tauri.conf.json"));
    if let Err(e) = result {
        eprintln!("floor: could not start the window: {e}");
        std::process::exit(1);
    }
}
