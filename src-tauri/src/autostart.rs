//! "Start at login": an XDG autostart entry that starts the app hidden to
//! the tray (`--hidden`) on one home. Desktop sessions that follow the XDG
//! autostart spec (GNOME, KDE, Xfce, ...) start it when the user logs in.
//!
//! The entry is the user's (`$XDG_CONFIG_HOME/autostart/`, `~/.config`
//! when the variable is unset or not absolute) but the setting is the
//! home's (`app.json`), so each home has an entry of its own: the default
//! home's is `weft.desktop`, another home's `weft-HASH.desktop`, HASH a
//! short stable hash of the home's absolute path. The entry names its
//! home by that absolute path, so login opens the same home whatever the
//! session's environment.

use std::path::{Path, PathBuf};

use weft::store::Home;

/// The default home's entry.
const DEFAULT_NAME: &str = "weft.desktop";
/// Where the Debian package installs the app; preferred over the path
/// the process was started by when both are the same file.
const INSTALLED: &str = "/usr/bin/weft-desktop";
/// What Linux appends to `/proc/self/exe` once the running program's file
/// was replaced or removed (a package upgrade while the app runs).
const DELETED: &str = " (deleted)";

/// The entry's file name for the home at `home` (absolute), the default
/// home being at `default_home`.
pub fn file_name(home: &Path, default_home: Option<&Path>) -> String {
    if default_home == Some(home) {
        return DEFAULT_NAME.to_string();
    }
    format!("weft-{:012x}.desktop", path_hash(home) & 0xffff_ffff_ffff)
}

/// FNV-1a over the path's bytes: stable across builds and Rust versions
/// (the standard library's hasher is not promised to be), so an entry
/// written by one version is found by the next.
fn path_hash(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// The autostart directory: `config_home/autostart` when `config_home` is
/// an absolute path (the spec ignores a relative one), else
/// `home/.config/autostart`; `None` without either.
pub fn autostart_dir(config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let config = match config_home.filter(|p| p.is_absolute()) {
        Some(dir) => dir.to_path_buf(),
        None => home.filter(|p| p.is_absolute())?.join(".config"),
    };
    Some(config.join("autostart"))
}

/// The absolute, resolved path of `home` (resolved when it exists).
pub fn absolute_home(home: &Home) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(home.root())?;
    Ok(absolute.canonicalize().unwrap_or(absolute))
}

/// The program an entry starts, from the path this process runs from:
/// without the " (deleted)" Linux gives it after an upgrade replaced the
/// file, and the installed path when that is the same file.
pub fn program(exe: &Path, installed: &Path) -> PathBuf {
    let text = exe.to_string_lossy();
    let exe = match text.strip_suffix(DELETED) {
        Some(kept) => PathBuf::from(kept),
        None => exe.to_path_buf(),
    };
    if exe != installed && same_file(&exe, installed) {
        return installed.to_path_buf();
    }
    exe
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The entry's text: starts `exe --hidden` with `weft_home` as WEFT_HOME.
/// A path with a line break cannot be written in a key file: refused.
pub fn entry(exe: &Path, weft_home: &Path) -> Result<String, String> {
    for path in [exe, weft_home] {
        if path.to_string_lossy().contains(['\n', '\r']) {
            return Err(format!(
                "cannot start {:?} at login: its path has a line break",
                path
            ));
        }
    }
    let exec = format!(
        "env {} {} --hidden",
        quote(&format!("WEFT_HOME={}", weft_home.display())),
        quote(&exe.display().to_string())
    );
    Ok(format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Weft\n\
         Comment=Weft in the tray: gates waiting and runs in flight\n\
         Exec={exec}\n\
         Icon=weft\n\
         Terminal=false\n\
         X-GNOME-Autostart-enabled=true\n"
    ))
}

/// One argument of an `Exec` line: as it is when it holds only safe
/// characters, else in double quotes with `"`, `` ` ``, `$` and `\`
/// escaped, and `%` doubled (field codes), as the Desktop Entry spec asks.
/// The key file's own escaping then doubles each backslash.
fn quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        return arg.to_string();
    }
    let mut out = String::from("\"");
    for c in arg.chars() {
        match c {
            '"' | '`' | '$' => {
                out.push_str("\\\\");
                out.push(c);
            }
            '\\' => out.push_str("\\\\\\\\"),
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes (`enabled`) or removes the entry at `path`. Removing an entry
/// that is not there is done already.
pub fn apply(path: &Path, enabled: bool, text: &str) -> Result<(), String> {
    if enabled {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        // Whole or not at all: the session may read it at any time.
        weft::store::write_atomic(path, text.as_bytes()).map_err(|e| e.to_string())
    } else {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("cannot remove {}: {e}", path.display()))
            }
            _ => Ok(()),
        }
    }
}

/// Writes or removes `home`'s entry for this process's environment.
pub fn set(home: &Home, enabled: bool) -> Result<(), String> {
    let config_home = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let dir = autostart_dir(config_home.as_deref(), user_home.as_deref())
        .ok_or("neither XDG_CONFIG_HOME nor HOME names a directory for the autostart entry")?;
    let weft_home = absolute_home(home).map_err(|e| format!("cannot find the home's path: {e}"))?;
    let default_home = Home::platform_default().and_then(|h| absolute_home(&h).ok());
    let path = dir.join(file_name(&weft_home, default_home.as_deref()));
    let text = if enabled {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find the app's program: {e}"))?;
        entry(&program(&exe, Path::new(INSTALLED)), &weft_home)?
    } else {
        String::new()
    };
    apply(&path, enabled, &text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use super::*;

    #[test]
    fn the_entries_go_under_xdg_config_home_else_dot_config() {
        let home = Path::new("/home/ada");
        assert_eq!(
            autostart_dir(Some(Path::new("/cfg")), Some(home)),
            Some(PathBuf::from("/cfg/autostart"))
        );
        assert_eq!(
            autostart_dir(None, Some(home)),
            Some(PathBuf::from("/home/ada/.config/autostart"))
        );
        assert_eq!(
            autostart_dir(Some(Path::new("relative/cfg")), Some(home)),
            Some(PathBuf::from("/home/ada/.config/autostart")),
            "a relative XDG_CONFIG_HOME is ignored, as the spec says"
        );
        assert_eq!(autostart_dir(None, None), None);
        assert_eq!(autostart_dir(None, Some(Path::new("rel"))), None);
    }

    #[test]
    fn each_home_has_its_own_entry_and_the_default_home_the_plain_one() {
        let default = Path::new("/home/ada/.local/share/weft");
        assert_eq!(file_name(default, Some(default)), "weft.desktop");
        let other = file_name(Path::new("/data/weft"), Some(default));
        assert_eq!(other, file_name(Path::new("/data/weft"), Some(default)));
        assert_eq!(other, file_name(Path::new("/data/weft"), None));
        assert!(
            other.starts_with("weft-") && other.ends_with(".desktop") && other.len() == 25,
            "{other}"
        );
        assert_ne!(other, file_name(Path::new("/data/weft2"), Some(default)));
        // The same name from every build: an entry written before an
        // upgrade is the one turned off after it.
        assert_eq!(
            file_name(Path::new("/data/weft"), None),
            "weft-04155a2ae589.desktop"
        );
    }

    #[test]
    fn the_entry_names_its_home_by_absolute_path() {
        let temp = tempfile::tempdir().expect("temp dir");
        let real = temp.path().canonicalize().expect("real");
        std::fs::create_dir(real.join("home")).expect("home");
        let linked = real.join("link");
        std::os::unix::fs::symlink(real.join("home"), &linked).expect("link");
        assert_eq!(
            absolute_home(&Home::at(&linked)).expect("path"),
            real.join("home")
        );
        let relative = absolute_home(&Home::at("not-yet/made")).expect("path");
        assert!(relative.is_absolute() && relative.ends_with("not-yet/made"));
    }

    #[test]
    fn the_program_is_the_upgraded_file_and_the_installed_path_when_the_same() {
        assert_eq!(
            program(
                Path::new("/usr/bin/weft-desktop (deleted)"),
                Path::new("/nowhere/weft-desktop")
            ),
            PathBuf::from("/usr/bin/weft-desktop")
        );
        let temp = tempfile::tempdir().expect("temp dir");
        let installed = temp.path().join("bin/weft-desktop");
        std::fs::create_dir(temp.path().join("bin")).expect("bin");
        std::fs::write(&installed, "app").expect("app");
        let linked = temp.path().join("lib-weft-desktop");
        std::fs::hard_link(&installed, &linked).expect("link");
        assert_eq!(program(&linked, &installed), installed);
        let other = temp.path().join("build/weft-desktop");
        assert_eq!(program(&other, &installed), other, "another file stays");
    }

    #[test]
    fn the_entry_starts_the_app_hidden_with_its_home() {
        let plain = entry(
            Path::new("/usr/bin/weft-desktop"),
            Path::new("/home/ada/.local/share/weft"),
        )
        .expect("entry");
        assert_eq!(
            plain,
            "[Desktop Entry]\nType=Application\nName=Weft\n\
             Comment=Weft in the tray: gates waiting and runs in flight\n\
             Exec=env WEFT_HOME=/home/ada/.local/share/weft /usr/bin/weft-desktop --hidden\n\
             Icon=weft\nTerminal=false\nX-GNOME-Autostart-enabled=true\n"
        );
        let odd = entry(
            Path::new("/opt/my apps/weft-desktop"),
            Path::new("/data/weft $HOME 100%"),
        )
        .expect("entry");
        assert!(
            odd.contains(
                "Exec=env \"WEFT_HOME=/data/weft \\\\$HOME 100%%\" \"/opt/my apps/weft-desktop\" --hidden\n"
            ),
            "{odd}"
        );
        assert!(entry(Path::new("/opt/a\nb/weft-desktop"), Path::new("/h")).is_err());
        assert!(
            entry(
                Path::new("/usr/bin/weft-desktop"),
                Path::new("/h\r\nExec=x")
            )
            .is_err()
        );
    }

    #[test]
    fn enabling_writes_the_entry_and_disabling_removes_it() {
        let temp = tempfile::tempdir().expect("temp dir");
        let path = temp.path().join("cfg/autostart/weft.desktop");
        apply(&path, true, "entry").expect("write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "entry");
        apply(&path, true, "again").expect("rewrite");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "again");
        let names: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["weft.desktop"], "no temp files left");
        apply(&path, false, "entry").expect("remove");
        assert!(!path.exists());
        apply(&path, false, "entry").expect("removing twice is fine");
    }
}
