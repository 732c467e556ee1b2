//! What the webview keeps in memory.
//!
//! WebKit's default cache model is a web browser's: decoded resources stay
//! in a memory cache and left pages in a back/forward cache, sized from the
//! machine's RAM. The app is one page from embedded files, changing screens
//! by its URL's hash, so neither cache saves it anything; the document
//! viewer model turns both off (docs/performance.md, "The real app window").

/// Sets `window`'s web context to WebKit's document viewer cache model.
#[cfg(target_os = "linux")]
pub fn keep_little(window: &tauri::WebviewWindow) {
    let applied = window.with_webview(|webview| {
        use webkit2gtk::{CacheModel, WebContextExt, WebViewExt};
        if let Some(context) = WebViewExt::context(&webview.inner()) {
            context.set_cache_model(CacheModel::DocumentViewer);
        }
    });
    if let Err(e) = applied {
        eprintln!("weft-desktop: cannot set the webview's cache model: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
pub fn keep_little(_window: &tauri::WebviewWindow) {}
