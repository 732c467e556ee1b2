//! "Start at login": an XDG autostart entry
//! (`$XDG_CONFIG_HOME/autostart/weft.desktop`, `~/.config` when the
//! variable is unset or not absolute) that starts the app hidden to the
//! tray (`--hidden`). Desktop sessions that follow the XDG autostart spec
//! (GNOME, KDE, Xfce, ...) start it when the user logs in.

use std::path::{Path, PathBuf};

/// The entry's file name.
const FILE_NAME: &str = "weft.desktop";

/// Where the entry goes: `config_home` when it is an absolute path (the
/// spec ignores a relative one), else `home/.config`; `None` without
/// either.
pub fn entry_path(config_home: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let config = match config_home.filter(|p| p.is_absolute()) {
        Some(dir) => dir.to_path_buf(),
        None => home.filter(|p| p.is_absolute())?.join(".config"),
    };
    Some(config.join("autostart").join(FILE_NAME))
}

/// The entry for this process's environment.
pub fn this_entry_path() -> Option<PathBuf> {
    let config_home = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    entry_path(config_home.as_deref(), home.as_deref())
}

/// The entry's text: starts `exe --hidden`, with `weft_home` as WEFT_HOME
/// when the app was given one (so login opens the same home).
pub fn entry(exe: &Path, weft_home: Option<&Path>) -> String {
    let mut exec = String::new();
    if let Some(home) = weft_home {
        exec.push_str("env ");
        exec.push_str(&quote(&format!("WEFT_HOME={}", home.display())));
        exec.push(' ');
    }
    exec.push_str(&quote(&exe.display().to_string()));
    exec.push_str(" --hidden");
    format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Weft\n\
         Comment=Weft in the tray: gates waiting and runs in flight\n\
         Exec={exec}\n\
         Icon=weft\n\
         Terminal=false\n\
         X-GNOME-Autostart-enabled=true\n"
    )
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
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes (`enabled`) or removes the entry at `path`. Removing an entry
/// that is not there is done already.
pub fn apply(path: &Path, enabled: bool, text: &str) -> std::io::Result<()> {
    if enabled {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // Whole or not at all: the session may read it at any time.
        let temp = path.with_extension("desktop.tmp");
        std::fs::write(&temp, text)?;
        std::fs::rename(&temp, path)
    } else {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// Writes or removes this app's entry.
pub fn set(enabled: bool) -> Result<(), String> {
    let path = this_entry_path()
        .ok_or("neither XDG_CONFIG_HOME nor HOME names a directory for the autostart entry")?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the app's program: {e}"))?;
    let weft_home = std::env::var_os("WEFT_HOME").map(PathBuf::from);
    apply(&path, enabled, &entry(&exe, weft_home.as_deref()))
        .map_err(|e| format!("cannot change {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use super::*;

    #[test]
    fn the_entry_goes_under_xdg_config_home_else_dot_config() {
        let home = Path::new("/home/ada");
        assert_eq!(
            entry_path(Some(Path::new("/cfg")), Some(home)),
            Some(PathBuf::from("/cfg/autostart/weft.desktop"))
        );
        assert_eq!(
            entry_path(None, Some(home)),
            Some(PathBuf::from("/home/ada/.config/autostart/weft.desktop"))
        );
        assert_eq!(
            entry_path(Some(Path::new("relative/cfg")), Some(home)),
            Some(PathBuf::from("/home/ada/.config/autostart/weft.desktop")),
            "a relative XDG_CONFIG_HOME is ignored, as the spec says"
        );
        assert_eq!(entry_path(None, None), None);
        assert_eq!(entry_path(None, Some(Path::new("rel"))), None);
    }

    #[test]
    fn the_entry_starts_the_app_hidden_with_its_home() {
        let plain = entry(Path::new("/usr/bin/weft-desktop"), None);
        assert_eq!(
            plain,
            "[Desktop Entry]\nType=Application\nName=Weft\n\
             Comment=Weft in the tray: gates waiting and runs in flight\n\
             Exec=/usr/bin/weft-desktop --hidden\nIcon=weft\nTerminal=false\n\
             X-GNOME-Autostart-enabled=true\n"
        );
        let odd = entry(
            Path::new("/opt/my apps/weft-desktop"),
            Some(Path::new("/data/weft $HOME 100%")),
        );
        assert!(
            odd.contains(
                "Exec=env \"WEFT_HOME=/data/weft \\\\$HOME 100%%\" \"/opt/my apps/weft-desktop\" --hidden\n"
            ),
            "{odd}"
        );
    }

    #[test]
    fn enabling_writes_the_entry_and_disabling_removes_it() {
        let temp = tempfile::tempdir().expect("temp dir");
        let path = temp.path().join("cfg/autostart/weft.desktop");
        apply(&path, true, "entry").expect("write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "entry");
        apply(&path, false, "entry").expect("remove");
        assert!(!path.exists());
        apply(&path, false, "entry").expect("removing twice is fine");
    }
}
