//! The app's own settings (not weftd's settings.toml): kept by the app in
//! `$WEFT_HOME/app.json`. A missing, oversized or unreadable file is the
//! defaults; a field the file lacks is its default.

use std::io::Read;
use std::path::{Path, PathBuf};

use weft::store::Home;
use weft::views::AppSettings;

/// The largest app.json read: the settings are a few booleans.
const MAX_BYTES: u64 = 64 * 1024;

/// `$WEFT_HOME/app.json`.
pub fn path(home: &Home) -> PathBuf {
    home.root().join("app.json")
}

/// The settings in `file`, or the defaults when it is missing or not
/// settings.
pub fn load(file: &Path) -> AppSettings {
    let mut text = String::new();
    let read =
        std::fs::File::open(file).and_then(|f| f.take(MAX_BYTES + 1).read_to_string(&mut text));
    match read {
        Ok(n) if n as u64 <= MAX_BYTES => serde_json::from_str(&text).unwrap_or_default(),
        _ => AppSettings::default(),
    }
}

/// Writes `settings` to `file` (whole or not at all: the store's atomic
/// write, a temp file of its own renamed over it).
pub fn save(file: &Path, settings: &AppSettings) -> Result<(), String> {
    let json = serde_json::to_vec_pretty(settings).map_err(|e| e.to_string())?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    weft::store::write_atomic(file, &json).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use super::*;

    #[test]
    fn a_missing_or_garbled_file_is_the_defaults() {
        let temp = tempfile::tempdir().expect("temp dir");
        let file = temp.path().join("app.json");
        assert_eq!(load(&file), AppSettings::default());
        assert!(AppSettings::default().keep_in_tray, "on by default");
        assert!(!AppSettings::default().start_at_login, "off by default");
        for garbage in [&b"{not json"[..], b"[1,2]", b"\xff\xfe", b""] {
            std::fs::write(&file, garbage).expect("write");
            assert_eq!(load(&file), AppSettings::default());
        }
        std::fs::write(&file, vec![b' '; 100 * 1024]).expect("write");
        assert_eq!(load(&file), AppSettings::default(), "oversized");
    }

    #[test]
    fn saved_settings_load_back_and_missing_fields_are_defaults() {
        let temp = tempfile::tempdir().expect("temp dir");
        let file = temp.path().join("home/app.json");
        let settings = AppSettings {
            keep_in_tray: false,
            start_at_login: true,
        };
        save(&file, &settings).expect("save");
        assert_eq!(load(&file), settings);
        std::fs::write(&file, r#"{"start_at_login": true, "unknown": 1}"#).expect("write");
        assert_eq!(
            load(&file),
            AppSettings {
                keep_in_tray: true,
                start_at_login: true
            }
        );
    }
}
