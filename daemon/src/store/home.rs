//! `$WEFT_HOME`: the one directory that holds all of Weft's state (the
//! database, run directories, blobs and settings).
//!
//! Everything in it is private to the user: the home and every directory
//! Weft creates in it are [`PRIVATE_DIR_MODE`] (0700), every file Weft
//! writes there [`PRIVATE_FILE_MODE`] (0600). Command output, prompts and
//! answers are recorded there, and other local users have no business
//! reading them.

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{Result, StoreError};

/// The mode of `WEFT_HOME` and of every directory Weft creates in it.
pub(crate) const PRIVATE_DIR_MODE: u32 = 0o700;

/// The mode of every file Weft writes under `WEFT_HOME` (the database and
/// its WAL and shared-memory files, blobs, run-directory files, logs).
pub(crate) const PRIVATE_FILE_MODE: u32 = 0o600;

/// Creates `dir` and its missing parents as [`PRIVATE_DIR_MODE`]
/// directories (existing ones are left as they are). For directories
/// inside the home, whose parents are Weft's own.
pub(crate) fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(dir)
}

/// Makes `path` [`PRIVATE_DIR_MODE`] or [`PRIVATE_FILE_MODE`] when it
/// exists and lets group or others in. Returns the old mode when it
/// changed it. Symlinks are left alone (a chmod would follow them).
fn tighten(path: &Path) -> std::io::Result<Option<u32>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mode = meta.permissions().mode() & 0o7777;
    let private = if meta.is_dir() {
        PRIVATE_DIR_MODE
    } else if meta.is_file() {
        PRIVATE_FILE_MODE
    } else {
        return Ok(None);
    };
    if mode & 0o077 == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(private))?;
    Ok(Some(mode))
}

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
        Home::platform_default().ok_or(StoreError::NoHome)
    }

    /// The home used when `WEFT_HOME` is not set: the platform data dir,
    /// if the platform names one.
    #[must_use]
    pub fn platform_default() -> Option<Home> {
        directories::ProjectDirs::from("", "", "weft").map(|dirs| Home::at(dirs.data_dir()))
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
    pub(crate) fn blobs_dir(&self) -> PathBuf {
        self.root.join("blobs")
    }

    /// User settings, `settings.toml` (may not exist).
    #[must_use]
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.toml")
    }

    /// Creates the root, `runs/` and `blobs/` if missing, as 0700
    /// directories (the root's missing parents get the default mode);
    /// idempotent.
    ///
    /// A home that other users can read (made by an older Weft, or by
    /// hand) is tightened to 0700, and so are `runs/`, `blobs/` and the
    /// database files; the first such change prints a notice on stderr. A
    /// mode that cannot be changed (another user's directory) is reported
    /// the same way and is not an error.
    pub fn ensure(&self) -> Result<()> {
        if let Some(parent) = self.root.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| StoreError::io(format!("cannot create {}", parent.display()), e))?;
        }
        for dir in [self.root.clone(), self.runs_dir(), self.blobs_dir()] {
            create_private_dir_all(&dir)
                .map_err(|e| StoreError::io(format!("cannot create {}", dir.display()), e))?;
        }
        let db = self.db_path();
        let mut wal = db.clone().into_os_string();
        wal.push("-wal");
        let mut shm = db.clone().into_os_string();
        shm.push("-shm");
        for path in [
            self.root.clone(),
            self.runs_dir(),
            self.blobs_dir(),
            db,
            wal.into(),
            shm.into(),
        ] {
            match tighten(&path) {
                Ok(None) => {}
                Ok(Some(old)) => eprintln!(
                    "weft: notice: {} was readable by other users (mode {old:04o}); \
                     it is now {:04o}",
                    path.display(),
                    if path.is_dir() {
                        PRIVATE_DIR_MODE
                    } else {
                        PRIVATE_FILE_MODE
                    }
                ),
                Err(e) => eprintln!(
                    "weft: warning: {} is readable by other users and its mode cannot be \
                     changed: {e}",
                    path.display()
                ),
            }
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

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn a_new_home_and_its_folders_are_private() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path().join("data/home"));
        home.ensure().expect("ensure");
        for dir in [home.root().to_path_buf(), home.runs_dir(), home.blobs_dir()] {
            assert_eq!(mode(&dir), 0o700, "{} is private", dir.display());
        }
    }

    #[test]
    fn an_open_home_is_tightened() {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path().join("home"));
        std::fs::create_dir_all(home.runs_dir()).expect("mkdir");
        std::fs::write(home.db_path(), b"").expect("db");
        for (path, open) in [
            (home.root().to_path_buf(), 0o755),
            (home.runs_dir(), 0o775),
            (home.db_path(), 0o644),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(open)).expect("chmod");
        }
        home.ensure().expect("ensure");
        assert_eq!(mode(home.root()), 0o700);
        assert_eq!(mode(&home.runs_dir()), 0o700);
        assert_eq!(mode(&home.db_path()), 0o600);
    }

    #[test]
    fn directories_made_inside_the_home_are_private_at_every_level() {
        let temp = tempfile::tempdir().expect("temp dir");
        let deep = temp.path().join("a/b/c");
        create_private_dir_all(&deep).expect("mkdir");
        for dir in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&temp.path().join(dir)), 0o700, "{dir}");
        }
    }
}
