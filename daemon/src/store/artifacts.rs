//! The run's artifact records: which files of the working directory a stage
//! captured, each pointing at its bytes in the blob store.
//!
//! The rule (agents/outputs.mdx, "Automatic asset capture"): a (path,
//! content hash) pair is recorded once per run, however many later stages
//! still find the file unchanged. Migration 2's unique index
//! `artifacts_by_path_hash` holds it in the database.

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::{BLOB_PREFIX, BlobRef, Result, Store, StoreError, timestamp};

/// One captured file as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ArtifactRecord {
    pub run_id: String,
    /// The stage whose post-stage scan captured it.
    pub node_id: String,
    pub visit: u32,
    /// Relative to the working directory, `/`-separated (see
    /// [`is_artifact_path`]).
    pub path: String,
    /// The lowercase hex SHA-256 of the bytes, naming the blob.
    pub blob_hash: String,
    /// In bytes.
    pub size: u64,
    /// RFC 3339 UTC, when it was recorded.
    pub created_at: String,
}

impl ArtifactRecord {
    /// The blob holding the bytes; `None` only for a row whose hash is not
    /// 64 hex digits (written by hand, never by [`Store::record_artifact`]).
    #[must_use]
    pub fn blob(&self) -> Option<BlobRef> {
        BlobRef::parse(&format!("{BLOB_PREFIX}{}", self.blob_hash))
    }
}

/// A file to record for a stage; its bytes must already be in the blob
/// store (so no row ever names a missing blob).
#[derive(Debug, Clone)]
pub(crate) struct NewArtifact<'a> {
    pub run_id: &'a str,
    pub node_id: &'a str,
    pub visit: u32,
    /// Relative and normalised; see [`is_artifact_path`].
    pub path: &'a str,
    pub blob: &'a BlobRef,
    pub size: u64,
}

/// Whether `path` may name an artifact: relative, `/`-separated, with no
/// empty, `.` or `..` segment and no NUL. Such a name can be shown, matched
/// and joined under a directory without ever leaving it.
#[must_use]
pub(crate) fn is_artifact_path(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\0')
        && path
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
}

/// The `artifacts` columns in the order [`read_row`] expects.
const ARTIFACT_COLUMNS: &str = "run_id, node_id, visit, path, blob_hash, size, created_at";

impl Store {
    /// Records that stage `node_id@visit` captured `path` with the given
    /// blob, unless this run already recorded the same path with the same
    /// hash (from any stage): then nothing changes and the result is
    /// `None`. Otherwise the blob's row and the artifact row are written in
    /// one transaction and the new record is returned.
    ///
    /// A stage captures a path once; if the same stage captures it again
    /// with other bytes (a stage re-run after a crash, before its completion
    /// was committed), the newer capture replaces the older.
    /// [`StoreError::InvalidArtifactPath`] for a path that fails
    /// [`is_artifact_path`]; a run that does not exist is a foreign-key
    /// error.
    pub(crate) fn record_artifact(
        &mut self,
        artifact: &NewArtifact<'_>,
    ) -> Result<Option<ArtifactRecord>> {
        if !is_artifact_path(artifact.path) {
            return Err(StoreError::InvalidArtifactPath(artifact.path.to_string()));
        }
        let size = i64::try_from(artifact.size)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        let hash = artifact.blob.hex();
        let now = timestamp();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let seen = tx
            .prepare_cached(
                "SELECT 1 FROM artifacts WHERE run_id = ?1 AND path = ?2 AND blob_hash = ?3",
            )?
            .query_row(params![artifact.run_id, artifact.path, hash], |_| Ok(()))
            .optional()?
            .is_some();
        if seen {
            return Ok(None);
        }
        tx.prepare_cached(
            "INSERT OR IGNORE INTO blobs (hash, size, created_at) VALUES (?1, ?2, ?3)",
        )?
        .execute(params![hash, size, now])?;
        // The check above rules out a clash on (run, path, hash), so the
        // only row REPLACE can remove is this stage's own older capture of
        // the path. Replacing gives the row a new rowid, which keeps rowid
        // order equal to capture order.
        tx.prepare_cached(&format!(
            "INSERT OR REPLACE INTO artifacts ({ARTIFACT_COLUMNS}) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        ))?
        .execute(params![
            artifact.run_id,
            artifact.node_id,
            artifact.visit,
            artifact.path,
            hash,
            size,
            now,
        ])?;
        tx.commit()?;
        Ok(Some(ArtifactRecord {
            run_id: artifact.run_id.to_string(),
            node_id: artifact.node_id.to_string(),
            visit: artifact.visit,
            path: artifact.path.to_string(),
            blob_hash: hash.to_string(),
            size: artifact.size,
            created_at: now,
        }))
    }

    /// The run's artifacts in the order they were captured (so the last
    /// record of a path is its latest version).
    pub fn artifacts(&self, run_id: &str) -> Result<Vec<ArtifactRecord>> {
        let rows = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE run_id = ?1 ORDER BY rowid"
            ))?
            .query_map([run_id], read_row)?
            .collect::<rusqlite::Result<Vec<ArtifactRecord>>>()?;
        Ok(rows)
    }
}

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ArtifactRecord> {
    let size: i64 = row.get(5)?;
    Ok(ArtifactRecord {
        run_id: row.get(0)?,
        node_id: row.get(1)?,
        visit: row.get(2)?,
        path: row.get(3)?,
        blob_hash: row.get(4)?,
        size: u64::try_from(size).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                5,
                rusqlite::types::Type::Integer,
                Box::new(e),
            )
        })?,
        created_at: row.get(6)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Home, NewRun};

    fn store_with_run() -> (tempfile::TempDir, Store) {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path().join("home"));
        let mut store = Store::open(&home).expect("open");
        store
            .create_run(&NewRun {
                id: "R1".into(),
                workflow_name: "wf".into(),
                workflow_path: None,
                goal: None,
                run_dir: temp.path().join("run"),
                work_dir: temp.path().join("work"),
                inputs: serde_json::Map::new(),
                options: serde_json::Value::Null,
                labels: Vec::new(),
                node_count: 0,
                edge_count: 0,
                created_at: "2026-01-01T00:00:00.000Z".into(),
            })
            .expect("create run");
        (temp, store)
    }

    fn new<'a>(node: &'a str, visit: u32, path: &'a str, blob: &'a BlobRef) -> NewArtifact<'a> {
        NewArtifact {
            run_id: "R1",
            node_id: node,
            visit,
            path,
            blob,
            size: 3,
        }
    }

    #[test]
    fn a_path_and_hash_is_recorded_once_per_run() {
        let (_temp, mut store) = store_with_run();
        let v1 = BlobRef::of(b"one");
        let v2 = BlobRef::of(b"two");
        let first = store
            .record_artifact(&new("build", 1, "out/report.txt", &v1))
            .expect("record")
            .expect("new");
        assert_eq!(first.blob(), Some(v1.clone()));
        assert!(
            store
                .record_artifact(&new("test", 1, "out/report.txt", &v1))
                .expect("record again")
                .is_none(),
            "a later stage finding the same bytes records nothing"
        );
        assert!(
            store
                .record_artifact(&new("test", 1, "out/report.txt", &v2))
                .expect("changed")
                .is_some(),
            "changed bytes are a new version"
        );
        assert!(
            store
                .record_artifact(&new("test", 1, "copy.txt", &v1))
                .expect("other path")
                .is_some(),
            "the same bytes under another path are another artifact"
        );
        let listed: Vec<(String, String, String)> = store
            .artifacts("R1")
            .expect("list")
            .into_iter()
            .map(|a| (a.node_id, a.path, a.blob_hash))
            .collect();
        assert_eq!(
            listed,
            [
                ("build".into(), "out/report.txt".into(), v1.hex().into()),
                ("test".into(), "out/report.txt".into(), v2.hex().into()),
                ("test".into(), "copy.txt".into(), v1.hex().into()),
            ],
            "in capture order"
        );
        let blobs: i64 = store
            .conn
            .query_row("SELECT count(*) FROM blobs", [], |row| row.get(0))
            .expect("count");
        assert_eq!(blobs, 2, "each blob is recorded once");
    }

    #[test]
    fn a_stage_capturing_a_path_again_replaces_its_older_capture() {
        let (_temp, mut store) = store_with_run();
        let v1 = BlobRef::of(b"one");
        let v2 = BlobRef::of(b"two");
        let other = BlobRef::of(b"other");
        store
            .record_artifact(&new("build", 1, "a.txt", &v1))
            .expect("first");
        store
            .record_artifact(&new("build", 1, "b.txt", &other))
            .expect("second file");
        store
            .record_artifact(&new("build", 1, "a.txt", &v2))
            .expect("re-run");
        let listed: Vec<(String, String)> = store
            .artifacts("R1")
            .expect("list")
            .into_iter()
            .map(|a| (a.path, a.blob_hash))
            .collect();
        assert_eq!(
            listed,
            [
                ("b.txt".into(), other.hex().into()),
                ("a.txt".into(), v2.hex().into())
            ],
            "the replacement is the latest capture"
        );
    }

    #[test]
    fn names_that_could_leave_the_working_directory_are_refused() {
        let (_temp, mut store) = store_with_run();
        let blob = BlobRef::of(b"x");
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a//b",
            "./a",
            "a/",
            "a\0b",
        ] {
            assert!(!is_artifact_path(bad), "{bad:?}");
            let error = store
                .record_artifact(&new("build", 1, bad, &blob))
                .expect_err("refused");
            assert_eq!(error.code(), "artifact.invalid_path", "{bad:?}");
        }
        for good in ["a", "a/b.txt", ".ai/reports/x.md", "..hidden", "a..b/c"] {
            assert!(is_artifact_path(good), "{good:?}");
        }
        assert!(store.artifacts("R1").expect("list").is_empty());
    }
}
