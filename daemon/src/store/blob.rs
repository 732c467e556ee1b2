//! The content-addressed blob store: large values (LLM responses, command
//! output, artifacts) live here once, named by their SHA-256, and rows and
//! events hold a [`BlobRef`] to them.

use std::fmt;
use std::path::PathBuf;

use rusqlite::params;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use super::sql::U64;
use super::{Home, Result, Store, StoreError, timestamp, write_atomic};

/// How a blob reference is spelled in JSON, events and files.
pub(crate) const BLOB_PREFIX: &str = "blob://sha256/";

/// A reference to a blob: the lowercase hex SHA-256 of its bytes. Written
/// and read as `blob://sha256/{hex}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobRef(String);

impl BlobRef {
    /// Reads `blob://sha256/` followed by exactly 64 hex digits (either case;
    /// kept lowercase). Anything else is `None`.
    #[must_use]
    pub fn parse(text: &str) -> Option<BlobRef> {
        let hex = text.strip_prefix(BLOB_PREFIX)?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| BlobRef(hex.to_ascii_lowercase()))
    }

    /// The reference of `bytes`.
    #[must_use]
    pub fn of(bytes: &[u8]) -> BlobRef {
        let digest = Sha256::digest(bytes);
        let mut hex = String::with_capacity(64);
        for byte in digest.iter() {
            // Writing to a String cannot fail.
            let _ = fmt::Write::write_fmt(&mut hex, format_args!("{byte:02x}"));
        }
        BlobRef(hex)
    }

    /// The lowercase hex digest (64 characters).
    #[must_use]
    pub fn hex(&self) -> &str {
        &self.0
    }

    /// `blob://sha256/{hex}`.
    #[must_use]
    pub fn uri(&self) -> String {
        format!("{BLOB_PREFIX}{}", self.0)
    }
}

impl fmt::Display for BlobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{BLOB_PREFIX}{}", self.0)
    }
}

impl Serialize for BlobRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for BlobRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<BlobRef, D::Error> {
        let text = String::deserialize(deserializer)?;
        BlobRef::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{text}` is not a blob reference ({BLOB_PREFIX} and 64 hex digits)"
            ))
        })
    }
}

/// The blob files under `$WEFT_HOME/blobs/`, at `ab/cdef…` (the first two
/// hex digits name a folder, the other 62 the file). This type only touches
/// files; the caller records each new blob in the database
/// ([`super::Store::record_blob`]).
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The blob store of `home` (created on first put).
    #[must_use]
    pub fn new(home: &Home) -> Blobs {
        Blobs {
            dir: home.blobs_dir(),
        }
    }

    /// Where the blob `r` is (or would be) stored.
    #[must_use]
    pub fn path(&self, r: &BlobRef) -> PathBuf {
        let (folder, file) = r.hex().split_at(2);
        self.dir.join(folder).join(file)
    }

    /// Stores `bytes` once however often they recur: when a blob with the
    /// same hash exists it is not written again and the flag is `false`;
    /// otherwise it is written atomically and the flag is `true`.
    pub fn put(&self, bytes: &[u8]) -> Result<(BlobRef, bool)> {
        let r = BlobRef::of(bytes);
        let path = self.path(&r);
        if path.is_file() {
            return Ok((r, false));
        }
        if let Some(folder) = path.parent() {
            super::create_private_dir_all(folder)
                .map_err(|e| StoreError::io(format!("cannot create {}", folder.display()), e))?;
        }
        // Two writers racing on the same blob both rename identical bytes
        // into place, which is harmless.
        write_atomic(&path, bytes)?;
        Ok((r, true))
    }

    /// Stores `value` serialised as compact JSON; see [`Blobs::put`].
    pub(crate) fn put_json(&self, value: &serde_json::Value) -> Result<(BlobRef, bool)> {
        let bytes = serde_json::to_vec(value).map_err(|source| StoreError::Json {
            what: "a blob being stored".into(),
            source,
        })?;
        self.put(&bytes)
    }

    /// The bytes of blob `r`; [`StoreError::BlobMissing`] when absent.
    pub fn get(&self, r: &BlobRef) -> Result<Vec<u8>> {
        let path = self.path(r);
        std::fs::read(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StoreError::BlobMissing(r.uri())
            } else {
                StoreError::io(format!("cannot read {}", path.display()), e)
            }
        })
    }

    /// Blob `r` parsed as JSON.
    pub(crate) fn get_json(&self, r: &BlobRef) -> Result<serde_json::Value> {
        let bytes = self.get(r)?;
        serde_json::from_slice(&bytes).map_err(|source| StoreError::Json {
            what: format!("blob {r}"),
            source,
        })
    }
}

/// The `blobs` table: the blobs stored so far, with their sizes.
impl Store {
    /// Records that blob `hash` (lowercase hex) of `size` bytes exists;
    /// recording it again changes nothing.
    pub(crate) fn record_blob(&mut self, hash: &str, size: u64) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO blobs (hash, size, created_at) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![hash, U64(size), timestamp()])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::home;

    #[test]
    fn refs_parse_only_the_prefix_and_64_hex_digits() {
        let hex = "a".repeat(64);
        let r = BlobRef::parse(&format!("{BLOB_PREFIX}{hex}")).expect("valid");
        assert_eq!(r.hex(), hex);
        assert_eq!(r.to_string(), format!("blob://sha256/{hex}"));
        assert_eq!(r.uri(), r.to_string());
        let upper = BlobRef::parse(&format!("{BLOB_PREFIX}{}", "A".repeat(64))).expect("valid");
        assert_eq!(upper, r, "kept lowercase");
        assert!(BlobRef::parse(&hex).is_none(), "no prefix");
        assert!(BlobRef::parse(&format!("{BLOB_PREFIX}{}", "a".repeat(63))).is_none());
        assert!(BlobRef::parse(&format!("{BLOB_PREFIX}{}", "a".repeat(65))).is_none());
        assert!(BlobRef::parse(&format!("{BLOB_PREFIX}{}g", "a".repeat(63))).is_none());
        let json = serde_json::to_value(&r).expect("serialises");
        assert_eq!(json, serde_json::json!(r.uri()));
        assert_eq!(serde_json::from_value::<BlobRef>(json).expect("reads"), r);
        assert!(serde_json::from_value::<BlobRef>(serde_json::json!("nope")).is_err());
    }

    #[test]
    fn the_same_bytes_stored_twice_are_written_once() {
        let temp = tempfile::tempdir().expect("temp dir");
        let blobs = Blobs::new(&Home::at(temp.path()));
        let (first, written) = blobs.put(b"hello").expect("put");
        assert!(written);
        // sha256("hello")
        assert_eq!(
            first.hex(),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(
            blobs.path(&first),
            temp.path()
                .join("blobs/2c/f24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        );
        let (second, written) = blobs.put(b"hello").expect("put again");
        assert_eq!(second, first);
        assert!(!written, "a stored blob is not written again");
        assert_eq!(blobs.get(&first).expect("get"), b"hello");
        let folder = std::fs::read_dir(temp.path().join("blobs/2c")).expect("folder");
        assert_eq!(folder.count(), 1, "one file, no temp files");
    }

    #[test]
    fn json_blobs_round_trip_compactly() {
        let temp = tempfile::tempdir().expect("temp dir");
        let blobs = Blobs::new(&Home::at(temp.path()));
        let value = serde_json::json!({"a": [1, 2], "b": "x"});
        let (r, _) = blobs.put_json(&value).expect("put");
        assert_eq!(blobs.get(&r).expect("bytes"), br#"{"a":[1,2],"b":"x"}"#);
        assert_eq!(blobs.get_json(&r).expect("json"), value);
    }

    #[test]
    fn a_missing_blob_is_an_error() {
        let temp = tempfile::tempdir().expect("temp dir");
        let blobs = Blobs::new(&Home::at(temp.path()));
        let r = BlobRef::of(b"never stored");
        let error = blobs.get(&r).expect_err("missing");
        assert!(matches!(error, StoreError::BlobMissing(ref uri) if *uri == r.uri()));
        assert_eq!(error.code(), "blob.missing");
    }

    #[test]
    fn recording_a_blob_twice_keeps_one_row() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store.record_blob("ab12", 5).expect("record");
        store.record_blob("ab12", 5).expect("record again");
        let count: i64 = store
            .conn
            .query_row("SELECT count(*) FROM blobs", [], |row| row.get(0))
            .expect("count");
        assert_eq!(count, 1);
    }
}
