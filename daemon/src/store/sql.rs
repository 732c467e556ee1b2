//! Conversions between Rust values and SQLite columns that every table
//! shares: unsigned integers, paths, JSON text.

use std::path::Path;

use rusqlite::ToSql;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Result, StoreError};

/// A `u64` as an SQLite integer (which is signed). Seqs, durations and sizes
/// never get near `i64::MAX`; one that did would be an error, not a wrap.
#[derive(Debug, Clone, Copy)]
pub(super) struct U64(pub(super) u64);

impl ToSql for U64 {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        i64::try_from(self.0)
            .map(ToSqlOutput::from)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
    }
}

impl FromSql for U64 {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<U64> {
        let n = value.as_i64()?;
        u64::try_from(n)
            .map(U64)
            .map_err(|_| FromSqlError::OutOfRange(n))
    }
}

/// A path as database text. Non-UTF-8 paths are refused rather than stored
/// lossily, since a mangled work dir would later send a resume elsewhere.
pub(super) fn path_text(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        StoreError::io(
            format!("cannot record the path {}", path.display()),
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the path is not valid UTF-8",
            ),
        )
    })
}

/// `value` as compact JSON text.
pub(super) fn to_json(value: &impl Serialize, what: impl FnOnce() -> String) -> Result<String> {
    serde_json::to_string(value).map_err(|source| StoreError::Json {
        what: what(),
        source,
    })
}

/// JSON text read back from a column.
pub(super) fn from_json<T: DeserializeOwned>(
    text: &str,
    what: impl FnOnce() -> String,
) -> Result<T> {
    serde_json::from_str(text).map_err(|source| StoreError::Json {
        what: what(),
        source,
    })
}
