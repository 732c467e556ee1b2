//! Compositing on machines without a GPU.
//!
//! WebKitGTK composites the page with OpenGL. Without a GPU (a VM, a remote
//! X session, CI under Xvfb) that GL is Mesa's software rasteriser,
//! llvmpipe, and it is slow: measured here, the runs list of a 10,000-run
//! home kept both cores busy in llvmpipe for five seconds after the first
//! rows appeared, with frames 120 ms apart (docs/performance.md). Painting
//! without compositing uses the CPU directly and was idle one second after
//! start. So when the machine has no GPU render node, the window turns
//! hardware acceleration off. `WEFT_GPU_COMPOSITING=1` keeps it on.

/// Turns compositing off for `window` when this machine has no GPU.
#[cfg(target_os = "linux")]
pub fn fit_to_machine(window: &tauri::WebviewWindow) {
    let forced = std::env::var_os("WEFT_GPU_COMPOSITING").is_some_and(|v| v == "1");
    if forced || has_gpu(std::path::Path::new("/dev/dri")) {
        return;
    }
    let applied = window.with_webview(|webview| {
        use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
        if let Some(settings) = WebViewExt::settings(&webview.inner()) {
            settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        }
    });
    if let Err(e) = applied {
        eprintln!("weft-desktop: cannot turn compositing off on this GPU-less machine: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
pub fn fit_to_machine(_window: &tauri::WebviewWindow) {}

/// Whether `dri` (`/dev/dri`) holds a render node (`renderD128`, ...):
/// what a GPU driver provides and a software-only machine lacks.
#[cfg(target_os = "linux")]
fn has_gpu(dri: &std::path::Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_machine_has_a_gpu_when_dri_holds_a_render_node() {
        let temp = tempfile::tempdir().expect("temp dir");
        assert!(!has_gpu(&temp.path().join("missing")), "no /dev/dri at all");
        std::fs::write(temp.path().join("card0"), b"").expect("card");
        assert!(
            !has_gpu(temp.path()),
            "a display node alone renders nothing"
        );
        std::fs::write(temp.path().join("renderD128"), b"").expect("render node");
        assert!(has_gpu(temp.path()));
    }
}
