//! Reading files that may be hostile: regular files only, bounded in size.
//!
//! Agents and users hand Weft paths to read (workflows, `@file` references,
//! imports, output schemas, settings). A path may name `/dev/zero`, a FIFO
//! that nobody writes to, or a 50 GB log. [`read_capped`] opens without
//! blocking, checks what it opened (not what the path named a moment
//! earlier, so a path swapped for a FIFO in between is still refused), and
//! reads at most `cap` bytes.
//!
//! The caps are named constants here so that docs and errors quote one value.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// One mebibyte.
pub(crate) const MIB: u64 = 1024 * 1024;

/// Largest workflow file (`.fabro`/`.dot`, and each imported file) Weft
/// reads. Real workflows are a few kilobytes; the 10,000-node benchmark
/// graph is about 1 MiB.
pub(crate) const MAX_WORKFLOW_BYTES: u64 = 8 * MIB;

/// Largest file an `@file` reference (`prompt`, `goal`) or an output
/// schema may name.
pub(crate) const MAX_REFERENCED_BYTES: u64 = 4 * MIB;

/// Largest settings or run-config file (`settings.toml`, `run.toml`).
pub(crate) const MAX_CONFIG_BYTES: u64 = MIB;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("no such file")]
    NotFound,
    #[error("permission denied")]
    PermissionDenied,
    /// A directory, FIFO, socket or device: reading it could block forever
    /// or never end.
    #[error("it is not a regular file (it is {kind})")]
    NotRegular { kind: &'static str },
    #[error("it is larger than the limit of {}", human_bytes(*cap))]
    TooLarge { cap: u64 },
    #[error("{0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::NotFound,
            std::io::ErrorKind::PermissionDenied => ReadError::PermissionDenied,
            _ => ReadError::Io(e),
        }
    }
}

impl ReadError {
    /// The error as an `io::Error`, for callers that report those.
    #[must_use]
    pub fn into_io(self) -> std::io::Error {
        match self {
            ReadError::Io(e) => e,
            ReadError::NotFound => std::io::ErrorKind::NotFound.into(),
            ReadError::PermissionDenied => std::io::ErrorKind::PermissionDenied.into(),
            other @ ReadError::NotRegular { .. } => {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string())
            }
            other @ ReadError::TooLarge { .. } => {
                std::io::Error::new(std::io::ErrorKind::FileTooLarge, other.to_string())
            }
        }
    }
}

/// Reads the regular file at `path`, refusing anything else and anything
/// longer than `cap` bytes. Never blocks on a FIFO and never reads more
/// than `cap + 1` bytes, whatever the file claims its size is.
pub(crate) fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path)?;
    if file.metadata()?.len() > cap {
        return Err(ReadError::TooLarge { cap });
    }
    read_bounded(file, cap)
}

/// Opens the regular file at `path` for reading, refusing anything else
/// without blocking: for readers that stream a file of any size (a stage's
/// log) rather than load it.
pub(crate) fn open_regular(path: &Path) -> Result<std::fs::File, ReadError> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
    // writer. It changes nothing for regular files. O_NOCTTY: a terminal
    // device never becomes our controlling terminal.
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0))
        .open(path)?;
    let kind = file_kind(&file.metadata()?.file_type());
    if kind != "a regular file" {
        return Err(ReadError::NotRegular { kind });
    }
    Ok(file)
}

/// The last `max` bytes (at most) of the regular file at `path`: a log's
/// end, whatever its length.
pub(crate) fn read_tail(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_regular(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(max)))?;
    read_bounded(file, max)
}

/// [`read_capped`] for UTF-8 text; invalid UTF-8 is an `InvalidData` error.
pub(crate) fn read_text_capped(path: &Path, cap: u64) -> Result<String, ReadError> {
    let bytes = read_capped(path, cap)?;
    String::from_utf8(bytes).map_err(|_| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not UTF-8 text",
        ))
    })
}

/// Reads at most `cap` bytes from `reader`; more is [`ReadError::TooLarge`].
pub(crate) fn read_bounded(reader: impl Read, cap: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    reader.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { cap });
    }
    Ok(bytes)
}

/// What kind of file a `stat` found, in words for messages.
#[must_use]
pub(crate) fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// `8 MiB`, `512 KiB`, `300 bytes`.
#[must_use]
pub(crate) fn human_bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_within_the_cap_is_read_whole() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").expect("write");
        assert_eq!(read_capped(&path, 5).expect("read"), b"hello");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_with_the_cap_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f");
        std::fs::write(&path, vec![b'x'; 2048]).expect("write");
        let err = read_capped(&path, 1024).expect_err("too large");
        assert!(matches!(err, ReadError::TooLarge { cap: 1024 }), "{err:?}");
        assert_eq!(err.to_string(), "it is larger than the limit of 1 KiB");
    }

    #[test]
    fn devices_are_refused_before_any_byte_is_read() {
        // /dev/zero claims length 0 and never ends.
        let err = read_capped(Path::new("/dev/zero"), MIB).expect_err("device");
        assert!(
            matches!(
                err,
                ReadError::NotRegular {
                    kind: "a character device"
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("mkfifo");
        let err = read_capped(&path, MIB).expect_err("fifo");
        assert!(
            matches!(err, ReadError::NotRegular { kind: "a FIFO" }),
            "{err:?}"
        );
    }

    #[test]
    fn directories_are_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = read_capped(dir.path(), MIB).expect_err("dir");
        assert!(
            matches!(
                err,
                ReadError::NotRegular {
                    kind: "a directory"
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_stream_longer_than_the_cap_stops_at_cap_plus_one() {
        let err = read_bounded(std::io::repeat(b'a'), 100).expect_err("endless");
        assert!(matches!(err, ReadError::TooLarge { cap: 100 }));
    }
}
