//! `$WEFT_HOME`: the one directory that holds all of Weft's state (the
//! database, run directories, blobs and settings).

use std::path::{Path, PathBuf};

use super::{Result, StoreError};

/// The root of Weft's state on disk. Nothing outside it is ever written, so
/// tests point it at a temp dir and stay out of the user's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// `WEFT_HOME` when it is set and non-empty, else the platform data dir
    /// (`~/.local/share/weft`, `~/Library/Application Support/weft`,
    /// `%APPDATA%\weft\data`). Fails with [`StoreError::NoHome`] when neither
    /// exists. Creates nothing; see [`Home::ensure`].
    pub fn from_env() -> Result<Home> {
        if let Some(root) = std::env::var_os("WEFT_HOME").filter(|value| !value.is_empty()) {
            return Ok(Home::at(root));
        }
        directories::ProjectDirs::from("", "", "weft")
            .map(|dirs| Home::at(dirs.data_dir()))
            .ok_or(StoreError::NoHome)
    }

    /// A home rooted at `root`, which need not exist yet.
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    /// The home directory itself.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The SQLite database, `weft.db`.
    #[must_use]
    pub fn db_path(&self) -> PathBuf {
        self.root.join("weft.db")
    }

    /// Where run directories live, `runs/`.
    #[must_use]
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// The content-addressed blob store, `blobs/`.
    #[must_use]
    pub fn blobs_dir(&self) -> PathBuf {
        self.root.join("blobs")
    }

    /// User settings, `settings.toml` (may not exist).
    #[must_use]
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.toml")
    }

    /// Creates the root, `runs/` and `blobs/` if missing; idempotent.
    pub fn ensure(&self) -> Result<()> {
        for dir in [self.root.clone(), self.runs_dir(), self.blobs_dir()] {
            std::fs::create_dir_all(&dir)
                .map_err(|e| StoreError::io(format!("cannot create {}", dir.display()), e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_hang_off_the_root_and_ensure_creates_the_directories() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path().join("home"));
        assert_eq!(home.db_path(), temp.path().join("home/weft.db"));
        assert_eq!(home.settings_path(), temp.path().join("home/settings.toml"));
        home.ensure().expect("ensure");
        home.ensure().expect("ensure is idempotent");
        assert!(home.runs_dir().is_dir());
        assert!(home.blobs_dir().is_dir());
    }
}
