//! The database schema, as an append-only list of migrations.
//!
//! Migration `i` (0-based in [`MIGRATIONS`]) brings the schema from version
//! `i` to `i + 1`; the version is kept in `PRAGMA user_version`. A migration
//! that has shipped is NEVER edited, reordered or removed, because databases
//! in the field have already applied it: change the schema by appending a new
//! migration at the end.

use rusqlite::{Connection, TransactionBehavior};

use super::{Result, StoreError};

/// Every migration, in order. Append only.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the initial schema. JSON columns hold compact JSON text. Times are
    // RFC 3339 UTC with milliseconds, so they sort as text.
    r"
    CREATE TABLE runs (
        id             TEXT PRIMARY KEY NOT NULL,
        workflow_name  TEXT NOT NULL,
        workflow_path  TEXT,
        goal           TEXT,
        status         TEXT NOT NULL,
        run_dir        TEXT NOT NULL,
        work_dir       TEXT NOT NULL,
        inputs         TEXT NOT NULL DEFAULT '{}',
        options        TEXT NOT NULL DEFAULT 'null',
        labels         TEXT NOT NULL DEFAULT '[]',
        created_at     TEXT NOT NULL,
        started_at     TEXT,
        finished_at    TEXT,
        failure_reason TEXT,
        pid            INTEGER,
        last_seq       INTEGER NOT NULL DEFAULT 0,
        checkpoint     TEXT,
        node_count     INTEGER NOT NULL DEFAULT 0,
        edge_count     INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX runs_by_created_at ON runs (created_at);

    CREATE TABLE stages (
        run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        node_id        TEXT NOT NULL,
        visit          INTEGER NOT NULL,
        rank           INTEGER NOT NULL,
        handler        TEXT NOT NULL,
        status         TEXT NOT NULL,
        attempts       INTEGER NOT NULL DEFAULT 0,
        started_at     TEXT NOT NULL,
        finished_at    TEXT,
        duration_ms    INTEGER,
        failure_reason TEXT,
        outcome        TEXT,
        PRIMARY KEY (run_id, node_id, visit)
    );
    CREATE INDEX stages_by_rank ON stages (run_id, rank);

    CREATE TABLE events (
        run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        ts         TEXT NOT NULL,
        event      TEXT NOT NULL,
        node_id    TEXT,
        visit      INTEGER,
        properties TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;

    CREATE TABLE questions (
        id          TEXT PRIMARY KEY NOT NULL,
        run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        node_id     TEXT NOT NULL,
        visit       INTEGER NOT NULL,
        text        TEXT NOT NULL,
        options     TEXT NOT NULL DEFAULT '[]',
        freeform    INTEGER NOT NULL DEFAULT 0,
        status      TEXT NOT NULL,
        answer      TEXT,
        asked_at    TEXT NOT NULL,
        answered_at TEXT
    );
    CREATE INDEX questions_by_run_status ON questions (run_id, status);

    CREATE TABLE blobs (
        hash       TEXT PRIMARY KEY NOT NULL,
        size       INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );

    -- Filled by the artifact store; nothing writes it yet.
    CREATE TABLE artifacts (
        run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        node_id    TEXT NOT NULL,
        visit      INTEGER NOT NULL,
        path       TEXT NOT NULL,
        blob_hash  TEXT NOT NULL,
        size       INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (run_id, node_id, visit, path)
    );
    ",
    // 2: a (path, content hash) pair is captured once per run
    // (agents/outputs.mdx, "Automatic asset capture"): the unique index makes
    // the database hold that rule and answers "already captured?" by lookup.
    // Nothing wrote `artifacts` before this migration, so no row conflicts.
    r"
    CREATE UNIQUE INDEX artifacts_by_path_hash ON artifacts (run_id, path, blob_hash);
    ",
    // 3: the parallel branch a stage ran in (NULL outside parallel
    // sections), so run history can show branches side by side.
    r"
    ALTER TABLE stages ADD COLUMN branch TEXT;
    ",
    // 4: when the process executing a run started (clock ticks since boot
    // on Linux), so a recycled pid is not mistaken for that process.
    r"
    ALTER TABLE runs ADD COLUMN pid_start INTEGER;
    ",
    // 5: runs the user archived (hidden from the app's list by default).
    r"
    ALTER TABLE runs ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
    ",
    // 6: the external agent's request behind a permission question (JSON,
    // `model::PermissionAsk`); NULL for a human gate's question.
    r"
    ALTER TABLE questions ADD COLUMN permission TEXT;
    ",
    // 7: spending over a window (`weft cost`, the app's Spending view)
    // reads the stages finished since a time, by this index rather than
    // every stage of every run.
    r"
    CREATE INDEX stages_by_finished_at ON stages (finished_at);
    ",
    // 8: run retrospectives (docs/engine.md, "Retros"): the whole retro as
    // JSON, and the columns the retros list shows, so it needs no files.
    r"
    CREATE TABLE retros (
        run_id         TEXT PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        created_at     TEXT NOT NULL,
        smoothness     TEXT,
        friction_count INTEGER NOT NULL DEFAULT 0,
        duration_ms    INTEGER,
        cost           REAL NOT NULL DEFAULT 0,
        tokens         INTEGER NOT NULL DEFAULT 0,
        error          TEXT,
        retro          TEXT NOT NULL
    );
    CREATE INDEX retros_by_created_at ON retros (created_at);
    ",
    // 9: budgets across runs (docs/llm.md, "Budgets"). A run's budget
    // counts its sub-workflows' child runs, found by their parent link
    // before every model call; a daily limit raised at a budget pause
    // holds for the rest of that (local) day.
    r"
    CREATE INDEX runs_by_parent ON runs (json_extract(options, '$.parent.run_id'));
    CREATE TABLE day_budgets (
        day        TEXT PRIMARY KEY NOT NULL,
        max_cost   REAL,
        max_tokens INTEGER
    );
    ",
    // 10: a stage's own files in the run directory (status.json, a
    // command's invocation and timing, its empty logs) as JSON, committed
    // with the stage: a writer thread writes them off the critical path,
    // and a resume restores any a crash kept it from writing.
    r"
    ALTER TABLE stages ADD COLUMN files TEXT;
    ",
];

/// The schema version this build writes: the number of migrations.
pub(crate) fn known_version() -> i64 {
    // The list is a compile-time constant of a handful of entries.
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

/// The database's schema version (`PRAGMA user_version`).
pub(crate) fn user_version(conn: &Connection) -> Result<i64> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Applies the migrations the database has not seen, all in one immediate
/// transaction (so two processes opening a fresh home cannot both migrate).
/// Refuses a database written by a newer build ([`StoreError::SchemaTooNew`])
/// rather than guess at a schema it does not know.
pub(crate) fn migrate(conn: &mut Connection, path: &std::path::Path) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = user_version(&tx)?;
    let known = known_version();
    if found > known {
        return Err(StoreError::SchemaTooNew {
            path: path.display().to_string(),
            found,
            known,
        });
    }
    for (version, sql) in (1..)
        .zip(MIGRATIONS.iter())
        .skip_while(|(v, _)| *v <= found)
    {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version)?;
    }
    tx.commit()?;
    Ok(())
}
