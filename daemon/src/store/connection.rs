//! The store's connection to SQLite: opening it for writing (WAL mode, the
//! pragmas, migrations) or for reading, checkpoints of the write-ahead log,
//! and groups of statements in one transaction.
//!
//! The tables' methods are `impl Store` blocks of their own, one file per
//! table: `runs`, `stages`, `events`, `questions`, `artifacts` and `blob`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{Home, Result, StoreError, migrations};

/// A connection to the run database.
///
/// Exactly one process (weftd) writes, through a store from [`Store::open`];
/// every other reader uses [`Store::open_read_only`]. In WAL mode readers
/// never block the writer nor the writer them, and each read method is one
/// SQL statement, so it sees one consistent snapshot.
pub struct Store {
    /// Visible to the sibling modules that add methods to the store (one
    /// file per table); nothing outside `store` sees it.
    pub(super) conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// How long a connection waits for a lock before giving up with
/// SQLITE_BUSY. Writes are short, so this is only reached if something is
/// badly wrong.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

/// Pages in the write-ahead log past which a checkpoint is asked for:
/// SQLite's own default for its automatic checkpoints.
const CHECKPOINT_PAGES: std::ffi::c_int = 1000;

impl Store {
    /// Opens (creating if needed) the database of `home` for writing: makes
    /// the home's folders, sets WAL mode, `synchronous=NORMAL` (a killed
    /// process loses nothing committed), foreign keys and a busy timeout,
    /// then applies any pending migrations. Fails with
    /// [`StoreError::SchemaTooNew`] if a newer Weft wrote the database.
    ///
    /// Only the daemon should hold a store opened this way (one writer).
    /// Refuses a database whose write-ahead log was lost
    /// ([`StoreError::WalMissing`], see [`super::wal::inspect`]) rather than
    /// migrate over it, and checkpoints after migrating, so the main file
    /// holds the schema whatever happens to the log.
    pub fn open(home: &Home) -> Result<Store> {
        home.ensure()?;
        super::wal::inspect(home)?;
        let path = home.db_path();
        // Created private before SQLite opens it: SQLite gives the WAL and
        // shared-memory files the database file's mode.
        std::os::unix::fs::OpenOptionsExt::mode(
            std::fs::OpenOptions::new().write(true).create(true),
            super::PRIVATE_FILE_MODE,
        )
        .open(&path)
        .map_err(|e| StoreError::io(format!("cannot create {}", path.display()), e))?;
        let mut conn = Connection::open(&path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        use_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Room for every statement of the hot paths, so none is re-prepared.
        conn.set_prepared_statement_cache_capacity(32);
        migrations::migrate(&mut conn, &path)?;
        let store = Store { conn, path };
        store.checkpoint(Checkpoint::Passive)?;
        Ok(store)
    }

    /// Moves the log's automatic checkpoints off the writing thread: when a
    /// commit leaves [`CHECKPOINT_PAGES`] or more pages in the write-ahead
    /// log, a thread of this store's own copies them into the main file
    /// (a passive checkpoint, on a connection of its own), and the commit
    /// returns at once. SQLite would otherwise checkpoint inside that
    /// commit, with two `fsync`s, while the daemon's runs wait for the
    /// writer (issue 20: the tail of the events' delay under load). The
    /// thread ends with the store.
    pub fn checkpoint_off_thread(&mut self) -> Result<()> {
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let db = self.path.clone();
        std::thread::Builder::new()
            .name("weft-checkpoint".into())
            .spawn(move || {
                // One request at a time; those made meanwhile are one. The
                // connection is kept: while a reader holds an old snapshot
                // the log stays long and every commit asks again.
                let mut conn = None;
                while woken.recv().is_ok() {
                    let done = match &conn {
                        Some(conn) => checkpoint_on(conn, Checkpoint::Passive),
                        None => checkpointer(&db).and_then(|opened| {
                            checkpoint_on(conn.insert(opened), Checkpoint::Passive)
                        }),
                    };
                    if let Err(e) = done {
                        eprintln!("weft: checkpoint of {} failed: {e}", db.display());
                    }
                }
            })
            .map_err(|e| StoreError::io("cannot start the checkpoint thread", e))?;
        self.conn
            .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
                if pages >= CHECKPOINT_PAGES {
                    // Full: a checkpoint is already asked for.
                    let _ = wake.try_send(());
                }
                Ok(())
            }))?;
        Ok(())
    }

    /// Copies the write-ahead log into the main database file (see
    /// [`Checkpoint`]). Readers holding an older snapshot keep the frames
    /// they still need, so a checkpoint may be partial; that is not an error.
    pub fn checkpoint(&self, mode: Checkpoint) -> Result<()> {
        checkpoint_on(&self.conn, mode)
    }

    /// [`Store::checkpoint`] on a connection of its own to the database at
    /// `db`, so it can run on another thread than the store's owner.
    pub(crate) fn checkpoint_file(db: &Path, mode: Checkpoint) -> Result<()> {
        checkpoint_on(&checkpointer(db)?, mode)
    }

    /// Opens the database of `home` read-only (the app, CLI inspection),
    /// with a busy timeout and without migrating. A missing database is a
    /// [`StoreError::Io`] saying that no runs have been recorded yet; a
    /// database from a newer Weft is [`StoreError::SchemaTooNew`]; one whose
    /// write-ahead log was lost is [`StoreError::WalMissing`].
    pub fn open_read_only(home: &Home) -> Result<Store> {
        super::wal::inspect(home)?;
        let path = home.db_path();
        if !path.is_file() {
            return Err(StoreError::io(
                format!(
                    "no runs have been recorded yet under {} (there is no {})",
                    home.root().display(),
                    path.display()
                ),
                std::io::Error::new(std::io::ErrorKind::NotFound, "database file not found"),
            ));
        }
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.set_prepared_statement_cache_capacity(32);
        let found = migrations::user_version(&conn)?;
        let known = migrations::known_version();
        if found > known {
            return Err(StoreError::SchemaTooNew {
                path: path.display().to_string(),
                found,
                known,
            });
        }
        // A reader cannot migrate (weftd, the one writer, does when it
        // starts): an older schema lacks columns the queries read.
        if found < known {
            return Err(StoreError::SchemaTooOld {
                path: path.display().to_string(),
                found,
                known,
            });
        }
        Ok(Store { conn, path })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One consistent view of the database for a group of reads (a page of
    /// runs with its count and questions): a deferred transaction, ended
    /// when the returned guard is dropped. Nothing is written through it.
    ///
    /// # Errors
    /// When SQLite cannot begin the transaction.
    pub(crate) fn snapshot(&self) -> Result<rusqlite::Transaction<'_>> {
        Ok(self.conn.unchecked_transaction()?)
    }

    /// Runs `work` in one write transaction, committed when it returns
    /// `Ok` (bulk inserts, as benchmarks and tests make them).
    ///
    /// # Errors
    /// What `work` returns, or SQLite failing to begin or commit.
    pub fn in_transaction<T>(&mut self, work: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match work(self) {
            Ok(value) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// How much a checkpoint does (SQLite's `wal_checkpoint` modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoint {
    /// Copies what it can without waiting for readers or writers: for an
    /// idle daemon, never blocks.
    Passive,
    /// Waits (up to the busy timeout) for readers, copies everything and
    /// empties the log: when the daemon stops.
    Truncate,
}

/// Puts the database in WAL mode, waiting out other processes.
///
/// SQLite does not call the busy handler for a journal-mode change: while
/// another `weft run --no-daemon` opens the same fresh home, or closes its
/// last connection (checkpointing and removing the WAL), the pragma fails
/// at once with "database is locked". The mode is persistent, so a database
/// already in WAL mode needs no change; otherwise the change is retried
/// until the busy timeout.
fn use_wal(conn: &Connection) -> Result<()> {
    let started = std::time::Instant::now();
    loop {
        let attempt = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0))
            .and_then(|mode| {
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(mode)
                } else {
                    conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
                }
            });
        match attempt {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < BUSY_TIMEOUT => {}
            // A mode that did not change (another process held a lock
            // SQLite would not wait for) is tried again too.
            Ok(_) if started.elapsed() < BUSY_TIMEOUT => {}
            Ok(mode) => {
                return Err(StoreError::io(
                    "cannot switch the database to WAL mode".to_string(),
                    std::io::Error::other(format!(
                        "it stayed in {mode} mode while other processes held it"
                    )),
                ));
            }
            Err(e) => return Err(e.into()),
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A connection to the database at `db` for checkpoints only.
fn checkpointer(db: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

fn checkpoint_on(conn: &Connection, mode: Checkpoint) -> Result<()> {
    let sql = match mode {
        Checkpoint::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
        Checkpoint::Truncate => "PRAGMA wal_checkpoint(TRUNCATE)",
    };
    // One row: (busy, frames in the log, frames checkpointed); a busy
    // reader only leaves the checkpoint partial.
    conn.query_row(sql, [], |_| Ok(()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventKind;
    use crate::store::StageCommit;
    use crate::store::fixtures::{home, new_run, notice};

    /// Whether a thread of this process is called `name`.
    fn thread_named(name: &str) -> bool {
        std::fs::read_dir("/proc/self/task")
            .expect("tasks")
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
    }

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_store_checkpointing_off_thread_fills_the_main_file_and_its_thread_ends_with_it() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store.checkpoint_off_thread().expect("checkpoint thread");
        // The thread names itself once it runs.
        wait_for("the checkpoint thread", || thread_named("weft-checkpoint"));
        let main_file = || std::fs::metadata(home.db_path()).map_or(0, |m| m.len());
        let before = main_file();
        store
            .conn
            .execute_batch("CREATE TABLE filler (b BLOB)")
            .expect("table");
        // 1,500 commits of a page each: past the 1,000 pages that ask for
        // a checkpoint, which SQLite no longer does inside a commit.
        for _ in 0..1500 {
            store
                .conn
                .execute("INSERT INTO filler VALUES (zeroblob(4000))", [])
                .expect("insert");
        }
        wait_for("the log to reach the main file", || {
            main_file() > before + 1000 * 4096
        });
        drop(store);
        wait_for("the checkpoint thread to end", || {
            !thread_named("weft-checkpoint")
        });
    }

    #[test]
    fn migrations_run_once_and_reopening_is_a_no_op() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        assert_eq!(store.path(), home.db_path());
        assert_eq!(
            migrations::user_version(&store.conn).expect("version"),
            migrations::known_version()
        );
        store
            .create_run(&new_run("R1", "wf", "goal", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        drop(store);
        let store = Store::open(&home).expect("reopen");
        assert_eq!(
            migrations::user_version(&store.conn).expect("version"),
            migrations::known_version()
        );
        assert!(store.run("R1").expect("read").is_some(), "data survives");
        let journal: String = store
            .conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .expect("journal mode");
        assert_eq!(journal, "wal");
    }

    #[test]
    fn a_database_from_a_newer_weft_is_refused() {
        let (_temp, home) = home();
        drop(Store::open(&home).expect("open"));
        let conn = Connection::open(home.db_path()).expect("raw open");
        conn.pragma_update(None, "user_version", 99)
            .expect("bump version");
        drop(conn);
        let error = Store::open(&home).expect_err("too new");
        assert!(
            matches!(error, StoreError::SchemaTooNew { found: 99, .. }),
            "{error}"
        );
        let error = Store::open_read_only(&home).expect_err("too new");
        assert_eq!(error.code(), "store.schema_too_new");
    }

    #[test]
    fn read_only_open_of_a_fresh_home_says_no_runs_yet() {
        let (_temp, home) = home();
        let error = Store::open_read_only(&home).expect_err("no database");
        assert_eq!(error.code(), "store.io");
        assert!(
            error.to_string().contains("no runs have been recorded yet"),
            "{error}"
        );
        assert!(!home.db_path().exists(), "a reader creates nothing");
    }

    /// Acceptance: one writer, readers opening and reading concurrently,
    /// never an error (no SQLITE_BUSY) and always a gap-free prefix of the
    /// events.
    #[test]
    fn readers_see_gap_free_events_while_a_writer_appends() {
        const TOTAL: u64 = 10_000;
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&new_run("R1", "wf", "g", "2026-01-01T00:00:00.000Z"))
            .expect("create");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));

        let writer = {
            let done = std::sync::Arc::clone(&done);
            std::thread::spawn(move || {
                let sizes = [1usize, 3, 1, 7, 2, 25, 1, 64, 5, 1];
                let mut written = 0u64;
                let mut stage = 0u32;
                let mut round = 0usize;
                while written < TOTAL {
                    let left = usize::try_from(TOTAL - written).expect("small");
                    let size = sizes[round % sizes.len()].min(left);
                    round += 1;
                    let batch: Vec<(EventKind, Option<(&str, u32)>)> =
                        (0..size).map(|i| (notice(i), None)).collect();
                    let events = match round % 3 {
                        0 if size == 1 => vec![
                            store
                                .append_event("R1", &batch[0].0, None)
                                .expect("append one"),
                        ],
                        1 => {
                            stage += 1;
                            store
                                .stage_started("R1", "loop", stage, "command")
                                .expect("stage started");
                            store
                                .commit_stage(&StageCommit {
                                    run_id: "R1",
                                    node_id: "loop",
                                    visit: stage,
                                    status: "succeeded",
                                    attempts: 1,
                                    duration_ms: 1,
                                    failure_reason: None,
                                    outcome: serde_json::Value::Null,
                                    events: batch,
                                    checkpoint: format!("{{\"completed\":{stage}}}"),
                                    files: None,
                                })
                                .expect("commit stage")
                        }
                        _ => store.append_events("R1", &batch).expect("append batch"),
                    };
                    assert_eq!(events.len(), size);
                    assert_eq!(events[0].seq, written + 1, "seqs continue across calls");
                    written += u64::try_from(size).expect("small");
                }
                done.store(true, std::sync::atomic::Ordering::SeqCst);
                written
            })
        };

        let reader = {
            let home = home.clone();
            let done = std::sync::Arc::clone(&done);
            std::thread::spawn(move || {
                let mut reads = 0u32;
                let mut seen = 0u64;
                loop {
                    // Read after seeing `done`, so the last read sees all.
                    let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                    let reader = Store::open_read_only(&home).expect("open read-only");
                    let all = reader.events("R1", 0, None).expect("read all");
                    let n = u64::try_from(all.len()).expect("small");
                    assert!(
                        all.iter().map(|e| e.seq).eq(1..=n),
                        "events are exactly 1..={n}"
                    );
                    assert!(n >= seen, "the log never shrinks ({n} after {seen})");
                    // Paged reads from where the last read ended continue it.
                    let page = reader.events("R1", n, Some(100)).expect("read page");
                    assert!(
                        page.iter()
                            .map(|e| e.seq)
                            .eq(n + 1..n + 1 + page.len() as u64),
                        "a page continues the log without gaps"
                    );
                    let run = reader.run("R1").expect("read run").expect("run");
                    assert!(run.last_seq >= n, "last_seq covers what was read");
                    seen = n;
                    reads += 1;
                    if finished {
                        return (reads, seen);
                    }
                }
            })
        };

        let written = writer.join().expect("writer thread");
        let (reads, seen) = reader.join().expect("reader thread");
        assert_eq!(written, TOTAL);
        assert_eq!(seen, TOTAL, "the final read sees every event");
        assert!(reads >= 2, "the reader ran alongside the writer");
    }
}
