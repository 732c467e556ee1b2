//! The database's write-ahead log. In WAL mode SQLite appends every commit
//! to `weft.db-wal` and copies it into `weft.db` only at a checkpoint, so a
//! WAL that is deleted or cut takes the commits since the last checkpoint
//! with it, silently: SQLite opens what is left.
//!
//! Two defences: the daemon checkpoints after migrating, when it goes idle
//! and when it stops (so the main file is rarely far behind), and every
//! open first inspects the files, so a lost log is named as such instead of
//! passing for an empty or outdated database.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Home, Result, StoreError};

/// The size of an SQLite database file header.
const DB_HEADER_BYTES: usize = 100;
/// The size of a WAL file header.
const WAL_HEADER_BYTES: u64 = 32;
/// The size of a WAL frame header (a page follows each).
const WAL_FRAME_HEADER_BYTES: u64 = 24;

/// What [`inspect`] found that is worth a warning but does not stop an
/// open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct WalReport {
    /// The WAL ends in the middle of a frame: it was cut (or a crash
    /// interrupted a write); what followed the cut is lost.
    pub cut: Option<String>,
}

/// The write-ahead log of the database at `db`.
#[must_use]
pub(crate) fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// Inspects `home`'s database files before SQLite opens them.
///
/// Fails with [`StoreError::WalMissing`] when the main file is in WAL mode
/// and holds no schema, its WAL has no frames, and yet run folders exist:
/// the history lived in a log that is gone, and opening (let alone
/// migrating) would pass the loss off as an empty database. Reports a WAL
/// that ends mid-frame in [`WalReport::cut`]. A missing or brand-new
/// database is fine.
pub(crate) fn inspect(home: &Home) -> Result<WalReport> {
    let db = home.db_path();
    let Some(header) = read_header(&db)? else {
        return Ok(WalReport::default());
    };
    let wal_mode = header[18] == 2 && header[19] == 2;
    let user_version = u32::from_be_bytes([header[60], header[61], header[62], header[63]]);
    let wal = wal_path(&db);
    let wal_len = std::fs::metadata(&wal).map_or(0, |m| m.len());
    let page_size = wal_page_size(&wal).unwrap_or_else(|| db_page_size(&header));
    let frame = WAL_FRAME_HEADER_BYTES + page_size;
    let mut report = WalReport::default();
    if wal_len > 0
        && (wal_len < WAL_HEADER_BYTES || !(wal_len - WAL_HEADER_BYTES).is_multiple_of(frame))
    {
        report.cut = Some(format!(
            "the write-ahead log {} ends in the middle of a frame ({wal_len} bytes): it was \
             cut, or a crash interrupted a write; commits after the cut are lost",
            wal.display()
        ));
    }
    let has_frames = wal_len >= WAL_HEADER_BYTES + frame;
    if wal_mode && user_version == 0 && !has_frames {
        lost_history(home, &db, &wal, frame)?;
    }
    Ok(report)
}

/// Confirms a suspected lost log, reading in an order that another process
/// opening the same home cannot fool.
///
/// The first look read the header, then the WAL, without a lock, while a
/// concurrent `weft run --no-daemon` may migrate, checkpoint, create its run
/// folder and close (deleting its WAL) in between: a stale header, a
/// vanished WAL and a new run folder look like loss. So: run folders first
/// (each is made only after its process's migration committed), then the
/// WAL, then the header. Whatever committed before the folders were counted
/// is by then in the WAL, or checkpointed into the header before the WAL
/// went away.
fn lost_history(home: &Home, db: &Path, wal: &Path, frame: u64) -> Result<()> {
    let run_dirs = count_run_dirs(&home.runs_dir());
    if run_dirs == 0 {
        return Ok(());
    }
    let wal_len = std::fs::metadata(wal).map_or(0, |m| m.len());
    if wal_len >= WAL_HEADER_BYTES + frame {
        return Ok(());
    }
    let Some(header) = read_header(db)? else {
        return Ok(());
    };
    if u32::from_be_bytes([header[60], header[61], header[62], header[63]]) != 0 {
        return Ok(());
    }
    Err(StoreError::WalMissing {
        path: db.display().to_string(),
        wal: wal.display().to_string(),
        run_dirs,
    })
}

/// The first [`DB_HEADER_BYTES`] of the database, or `None` when there is
/// no database yet (or not even a header: SQLite will create one).
fn read_header(db: &Path) -> Result<Option<[u8; DB_HEADER_BYTES]>> {
    let file = match std::fs::File::open(db) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(format!("cannot open {}", db.display()), e)),
    };
    let mut header = [0u8; DB_HEADER_BYTES];
    let mut read = 0;
    let mut file = file.take(DB_HEADER_BYTES as u64);
    while read < DB_HEADER_BYTES {
        match file.read(&mut header[read..]) {
            Ok(0) => return Ok(None),
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::io(format!("cannot read {}", db.display()), e)),
        }
    }
    Ok(Some(header))
}

/// The page size in a database header (bytes 16-17; 1 means 65,536).
fn db_page_size(header: &[u8; DB_HEADER_BYTES]) -> u64 {
    match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    }
}

/// The page size in a WAL header (bytes 8-11), when there is a header.
fn wal_page_size(wal: &Path) -> Option<u64> {
    let mut header = [0u8; 12];
    std::fs::File::open(wal)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    let size = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    (size.is_power_of_two() && (512..=65_536).contains(&size)).then_some(u64::from(size))
}

/// How many entries `runs/` holds (at most 1,000 are counted: one is
/// enough to know history existed).
fn count_run_dirs(runs: &Path) -> usize {
    std::fs::read_dir(runs).map_or(0, |entries| {
        entries
            .filter_map(std::result::Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .take(1_000)
            .count()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn home() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = Home::at(dir.path().join("home"));
        home.ensure().expect("home");
        (dir, home)
    }

    /// A database file in WAL mode with no schema: what a store created by
    /// a build that never checkpointed leaves once its WAL is deleted.
    fn schema_less_wal_database(home: &Home) {
        let conn = rusqlite::Connection::open(home.db_path()).expect("open");
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .expect("wal");
        assert_eq!(mode, "wal");
        drop(conn);
        assert!(!wal_path(&home.db_path()).exists());
    }

    #[test]
    fn a_schema_less_database_with_run_folders_and_no_wal_is_a_lost_wal_not_an_old_weft() {
        let (_dir, home) = home();
        schema_less_wal_database(&home);
        std::fs::create_dir_all(home.runs_dir().join("20261202-01JRUN")).expect("run dir");
        let error = Store::open(&home).expect_err("history lost");
        assert_eq!(error.code(), "store.wal_missing");
        let message = error.to_string();
        assert!(
            message.contains("write-ahead log") && message.contains("weft.db-wal"),
            "{message}"
        );
        let error = Store::open_read_only(&home).expect_err("history lost");
        assert_eq!(
            error.code(),
            "store.wal_missing",
            "not `written by an older Weft (schema version 0)`: {error}"
        );
        let header = read_header(&home.db_path()).expect("read").expect("header");
        assert_eq!(
            u32::from_be_bytes([header[60], header[61], header[62], header[63]]),
            0,
            "the refused open did not migrate over the lost history"
        );
    }

    #[test]
    fn a_schema_less_database_without_run_folders_is_simply_new() {
        let (_dir, home) = home();
        schema_less_wal_database(&home);
        Store::open(&home).expect("nothing was ever recorded: a fresh store");
    }

    #[test]
    fn opening_for_writing_checkpoints_so_the_schema_survives_a_lost_wal() {
        let (_dir, home) = home();
        let store = Store::open(&home).expect("open");
        std::fs::create_dir_all(home.runs_dir().join("20261202-01JRUN")).expect("run dir");
        // Deleted while the store is open, then the writer dies without
        // closing (as under kill -9).
        std::fs::remove_file(wal_path(&home.db_path())).expect("delete the WAL");
        std::mem::forget(store);
        assert_eq!(inspect(&home).expect("inspect"), WalReport::default());
        Store::open_read_only(&home).expect("the main file holds the schema");
    }

    #[test]
    fn a_stale_header_is_read_again_before_history_is_declared_lost() {
        // What a concurrent `weft run --no-daemon` can show between the
        // first look at the header and the look at the WAL: it migrated,
        // made its run folder and closed (its WAL checkpointed and deleted)
        // after the header was read.
        let (_dir, home) = home();
        drop(Store::open(&home).expect("open"));
        std::fs::create_dir_all(home.runs_dir().join("20261202-01JRUN")).expect("run dir");
        let db = home.db_path();
        let wal = wal_path(&db);
        assert!(!wal.exists(), "closing the last connection removed the WAL");
        lost_history(&home, &db, &wal, WAL_FRAME_HEADER_BYTES + 4096)
            .expect("the header read now holds the schema: nothing was lost");
    }

    #[test]
    fn a_wal_cut_mid_frame_is_reported() {
        let (_dir, home) = home();
        let mut store = Store::open(&home).expect("open");
        store.record_blob(&"ab".repeat(32), 1).expect("write");
        let wal = wal_path(&home.db_path());
        let len = std::fs::metadata(&wal).expect("wal").len();
        assert!(len > WAL_HEADER_BYTES, "the write is in the WAL");
        assert_eq!(inspect(&home).expect("inspect").cut, None, "an intact WAL");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&wal)
            .expect("wal");
        file.set_len(len - 100).expect("cut");
        let report = inspect(&home).expect("inspect");
        assert!(
            report.cut.as_deref().is_some_and(|c| c.contains("cut")),
            "{report:?}"
        );
        drop(store);
    }
}
