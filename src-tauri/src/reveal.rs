//! "Reveal in folder": shows a file in the system's file manager.
//!
//! Linux asks the file manager over D-Bus (`org.freedesktop.FileManager1`
//! `ShowItems`, which opens the folder with the file selected; Files,
//! Dolphin, Nemo, Thunar and others implement it) with `dbus-send`, and
//! falls back to opening the folder with `xdg-open`. macOS uses `open -R`,
//! Windows `explorer /select,`. Plain child processes rather than a plugin:
//! a few lines here beat a D-Bus library in the build.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a helper program may take before it counts as launched.
const HELPER_WAIT: Duration = Duration::from_secs(5);

/// Shows `file` in the file manager; the error says what was tried.
pub fn reveal(file: &Path) -> Result<(), String> {
    platform_reveal(file)
}

#[cfg(all(unix, not(target_os = "macos")))]
fn platform_reveal(file: &Path) -> Result<(), String> {
    let uri = file_uri(file);
    let dbus = run(Command::new("dbus-send").args([
        "--session",
        "--print-reply",
        "--reply-timeout=4000",
        "--dest=org.freedesktop.FileManager1",
        "/org/freedesktop/FileManager1",
        "org.freedesktop.FileManager1.ShowItems",
        &format!("array:string:{uri}"),
        "string:",
    ]));
    let Err(dbus) = dbus else {
        return Ok(());
    };
    let folder = file.parent().unwrap_or(file);
    run(Command::new("xdg-open").arg(folder)).map_err(|xdg| {
        format!(
            "no file manager could show {}: {xdg} (D-Bus FileManager1: {dbus})",
            file.display()
        )
    })
}

#[cfg(target_os = "macos")]
fn platform_reveal(file: &Path) -> Result<(), String> {
    run(Command::new("open").arg("-R").arg(file))
}

#[cfg(windows)]
fn platform_reveal(file: &Path) -> Result<(), String> {
    let mut select = std::ffi::OsString::from("/select,");
    select.push(file);
    // Explorer's exit status is 1 even when it worked: only a failure to
    // start counts.
    Command::new("explorer")
        .arg(select)
        .spawn()
        .map(|_| ())
        .map_err(|e| format!("cannot start explorer: {e}"))
}

/// Runs a helper program: fails when it cannot start or exits unsuccessfully
/// within [`HELPER_WAIT`]; one still running then counts as launched (some
/// `xdg-open` handlers stay in the foreground), and is left to finish.
#[cfg(unix)]
fn run(command: &mut Command) -> Result<(), String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let started = Instant::now();
    while started.elapsed() < HELPER_WAIT {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{program} failed ({status})")),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("{program}: {e}")),
        }
    }
    // Reap it whenever it ends, so no zombie stays behind.
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// `file://` plus the path, percent-encoding every byte outside the
/// unreserved set and `/` (so a comma cannot split dbus-send's array).
#[cfg(all(unix, not(target_os = "macos")))]
fn file_uri(path: &Path) -> String {
    use std::fmt::Write;
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(char::from(b));
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri
}

#[cfg(all(test, unix, not(target_os = "macos")))]
mod tests {
    use super::*;

    #[test]
    fn file_uris_escape_what_a_uri_or_dbus_send_would_misread() {
        assert_eq!(
            file_uri(Path::new("/home/me/runs/a b,c/artifacts/r%port.md")),
            "file:///home/me/runs/a%20b%2Cc/artifacts/r%25port.md"
        );
        assert_eq!(file_uri(Path::new("/tmp/é")), "file:///tmp/%C3%A9");
    }

    #[test]
    fn a_helper_that_fails_is_an_error_and_one_that_stays_counts_as_launched() {
        assert!(run(&mut Command::new("false")).is_err());
        assert!(run(&mut Command::new("true")).is_ok());
        let missing = run(&mut Command::new("weft-no-such-program")).expect_err("missing");
        assert!(
            missing.contains("cannot start weft-no-such-program"),
            "{missing}"
        );
    }
}
