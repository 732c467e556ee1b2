//! Artifact capture (agents/outputs.mdx, "Automatic asset capture";
//! execution/run-configuration.mdx, `[run.artifacts]`): after each stage the
//! working directory is scanned for files matching the run's `include`
//! globs, and each one found is stored in the blob store and recorded for
//! the run, once per (path, content hash).
//!
//! - [`ArtifactRules`]: the compiled, validated globs and the limits.
//! - [`ArtifactRules::scan`]: what a scan finds; no database, no blobs.
//! - [`capture`]: scan, store the bytes, record what is new.
//!
//! Safety rests on the walk, not on the patterns: the scan never follows a
//! symlink (one that matches is reported as skipped), and every file is
//! re-checked when it is read (see [`capture`]), so nothing outside the
//! working directory is captured whatever the patterns say.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::model::Code;
use crate::store::{ArtifactRecord, Blobs, NewArtifact, Store, StoreError};

/// A file larger than this (10 MiB) is never captured.
pub(crate) const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// At most this many files are captured per collection (one scan).
pub(crate) const MAX_FILES: usize = 100;
/// At most this many bytes (50 MiB) are captured per collection.
pub(crate) const MAX_TOTAL_BYTES: u64 = 50 * 1024 * 1024;
/// Dependency, cache and build folders that are never entered, at any depth
/// and whatever the patterns say: they are large and never the point.
pub(crate) const PRUNED_DIRS: [&str; 6] =
    [".git", "node_modules", "target", ".venv", ".cache", "dist"];

/// The `[run.artifacts]` section of a run configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ArtifactsConfig {
    /// Globs rooted at the working directory; empty means no scan at all.
    #[serde(default)]
    pub include: Vec<String>,
}

/// The limits of one collection. [`Default`] is the documented limits
/// ([`MAX_FILE_BYTES`], [`MAX_FILES`], [`MAX_TOTAL_BYTES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactLimits {
    pub max_file_bytes: u64,
    pub max_files: usize,
    pub max_total_bytes: u64,
}

impl Default for ArtifactLimits {
    fn default() -> ArtifactLimits {
        ArtifactLimits {
            max_file_bytes: MAX_FILE_BYTES,
            max_files: MAX_FILES,
            max_total_bytes: MAX_TOTAL_BYTES,
        }
    }
}

/// What can go wrong in artifact capture. Each variant has a stable code.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// A pattern in `[run.artifacts] include` that cannot be used; `reason`
    /// says why and what to write instead.
    #[error("artifact pattern `{pattern}` {reason}")]
    InvalidPattern { pattern: String, reason: String },
    /// Storing a blob or recording an artifact failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ArtifactError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            ArtifactError::InvalidPattern { .. } => Code::ArtifactInvalidPattern,
            ArtifactError::Store(e) => e.code(),
        }
    }
}

/// Why a file that matched was not captured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// A symlink: never followed, wherever it points.
    Symlink,
    /// A FIFO, socket or device.
    NotRegularFile,
    /// Its name is not UTF-8, so it cannot be recorded as a path.
    NonUtf8Name,
    /// Larger than the per-file limit.
    TooLarge { size: u64, limit: u64 },
    /// The collection already holds the most files allowed.
    TooManyFiles { limit: usize },
    /// Adding it would take the collection over its byte limit.
    CollectionTooLarge { limit: u64 },
    /// Between the scan and the read it was removed, replaced or turned
    /// into a symlink; what is there now is not what the scan vetted.
    Changed,
    /// A file or folder that could not be read.
    Unreadable { error: String },
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::Symlink => f.write_str("a symlink (never followed)"),
            SkipReason::NotRegularFile => f.write_str("not a regular file"),
            SkipReason::NonUtf8Name => f.write_str("the name is not UTF-8"),
            SkipReason::TooLarge { size, limit } => {
                write!(f, "{size} bytes, over the {limit}-byte limit per file")
            }
            SkipReason::TooManyFiles { limit } => {
                write!(f, "over the limit of {limit} files per collection")
            }
            SkipReason::CollectionTooLarge { limit } => {
                write!(f, "over the limit of {limit} bytes per collection")
            }
            SkipReason::Changed => f.write_str("changed while it was being captured"),
            SkipReason::Unreadable { error } => write!(f, "cannot be read: {error}"),
        }
    }
}

/// A regular file a scan selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Relative to the working directory, `/`-separated, normalised.
    pub path: String,
    /// Where it is.
    pub abs: PathBuf,
    /// Its size when scanned.
    pub size: u64,
    /// Its identity when scanned, so a read can tell it is the same file.
    dev: u64,
    ino: u64,
}

/// What a scan found: the files to capture, sorted by path and within the
/// limits, and the matching entries left out, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanResult {
    pub files: Vec<Found>,
    pub skipped: Vec<(String, SkipReason)>,
}

/// What one [`capture`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureReport {
    /// Files recorded by this capture (new paths, or new contents).
    pub captured: Vec<ArtifactRecord>,
    /// Files found whose path and content this run had already recorded.
    pub unchanged: usize,
    /// Matching entries not captured, and why, sorted by path.
    pub skipped: Vec<(String, SkipReason)>,
}

/// The run's validated `include` globs and the collection limits.
#[derive(Debug, Clone)]
pub struct ArtifactRules {
    patterns: Vec<String>,
    set: GlobSet,
    limits: ArtifactLimits,
}

impl ArtifactRules {
    /// Compiles `include` with the documented limits. See
    /// [`ArtifactRules::with_limits`].
    pub fn new(include: &[String]) -> Result<ArtifactRules, ArtifactError> {
        ArtifactRules::with_limits(include, ArtifactLimits::default())
    }

    /// Compiles `include` (rooted at the working directory; `*` and `?`
    /// stay within one path segment, `**` crosses directories) with
    /// `limits`. A leading `./` is dropped. Refuses, naming the pattern, an
    /// empty or absolute pattern, one with a `..` segment (it could only
    /// ever match outside the working directory) and one that is not a
    /// valid glob.
    pub(crate) fn with_limits(
        include: &[String],
        limits: ArtifactLimits,
    ) -> Result<ArtifactRules, ArtifactError> {
        let mut builder = GlobSetBuilder::new();
        let mut patterns = Vec::with_capacity(include.len());
        for pattern in include {
            let invalid = |reason: String| ArtifactError::InvalidPattern {
                pattern: pattern.clone(),
                reason,
            };
            let mut rooted = pattern.as_str();
            while let Some(rest) = rooted.strip_prefix("./") {
                rooted = rest;
            }
            if rooted.trim().is_empty() {
                return Err(invalid(
                    "is empty; write a path or glob such as `reports/**`".into(),
                ));
            }
            if rooted.starts_with('/') {
                return Err(invalid(
                    "is absolute; patterns are rooted at the working directory, so drop the leading `/`"
                        .into(),
                ));
            }
            if rooted.split('/').any(|segment| segment == "..") {
                return Err(invalid(
                    "contains `..`; only files inside the working directory are captured".into(),
                ));
            }
            let glob = GlobBuilder::new(rooted)
                .literal_separator(true)
                .build()
                .map_err(|e| invalid(format!("is not a valid glob: {}", e.kind())))?;
            builder.add(glob);
            patterns.push(rooted.to_string());
        }
        let set = builder.build().map_err(|e| ArtifactError::InvalidPattern {
            pattern: e.glob().unwrap_or_default().to_string(),
            reason: format!("is not a valid glob: {}", e.kind()),
        })?;
        Ok(ArtifactRules {
            patterns,
            set,
            limits,
        })
    }

    /// No patterns: capture is off and no scan runs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns as compiled (a leading `./` dropped).
    #[must_use]
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The limits each collection is held to.
    #[must_use]
    pub fn limits(&self) -> ArtifactLimits {
        self.limits
    }

    /// Whether the relative, `/`-separated `path` matches a pattern.
    #[must_use]
    pub fn is_match(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    /// Walks `work_dir` and returns the matching regular files within the
    /// limits. The walk never follows a symlink (one whose path matches is
    /// skipped as [`SkipReason::Symlink`], wherever it points), never enters
    /// a folder named in [`PRUNED_DIRS`], and looks at nothing but names,
    /// types and sizes (no timestamps). The limits are applied in path
    /// order, so the same tree always gives the same result: a file over the
    /// per-file limit is skipped; after that, a file is skipped when the
    /// collection already has the most files allowed or when it would take
    /// the total over the byte limit (a later, smaller file may still fit).
    /// A folder that cannot be read is reported as skipped (`.` for
    /// `work_dir` itself). With no patterns nothing is read.
    #[must_use]
    pub fn scan(&self, work_dir: &Path) -> ScanResult {
        let mut result = ScanResult::default();
        if self.is_empty() {
            return result;
        }
        let mut matched = Vec::new();
        let mut folders = vec![PathBuf::new()];
        while let Some(rel_dir) = folders.pop() {
            let shown = || {
                if rel_dir.as_os_str().is_empty() {
                    ".".to_string()
                } else {
                    rel_dir.to_string_lossy().into_owned()
                }
            };
            let entries = match std::fs::read_dir(work_dir.join(&rel_dir)) {
                Ok(entries) => entries,
                Err(e) => {
                    result.skipped.push((shown(), unreadable(&e)));
                    continue;
                }
            };
            for entry in entries {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(e) => {
                        result.skipped.push((shown(), unreadable(&e)));
                        continue;
                    }
                };
                let rel = rel_dir.join(entry.file_name());
                // `DirEntry::metadata` does not follow symlinks on Unix.
                let meta = match entry.metadata() {
                    Ok(meta) => meta,
                    Err(e) => {
                        result
                            .skipped
                            .push((rel.to_string_lossy().into_owned(), unreadable(&e)));
                        continue;
                    }
                };
                let kind = meta.file_type();
                if kind.is_dir() {
                    let name = entry.file_name();
                    if !PRUNED_DIRS.iter().any(|pruned| name == *pruned) {
                        folders.push(rel);
                    }
                    continue;
                }
                if !self.set.is_match(&rel) {
                    continue;
                }
                let Some(path) = rel.to_str() else {
                    result
                        .skipped
                        .push((rel.to_string_lossy().into_owned(), SkipReason::NonUtf8Name));
                    continue;
                };
                if kind.is_symlink() {
                    result.skipped.push((path.to_string(), SkipReason::Symlink));
                } else if kind.is_file() {
                    matched.push(Found {
                        path: path.to_string(),
                        abs: entry.path(),
                        size: meta.len(),
                        dev: meta.dev(),
                        ino: meta.ino(),
                    });
                } else {
                    result
                        .skipped
                        .push((path.to_string(), SkipReason::NotRegularFile));
                }
            }
        }
        matched.sort_by(|a, b| a.path.cmp(&b.path));
        let limits = self.limits;
        let mut total: u64 = 0;
        for found in matched {
            let reason = if found.size > limits.max_file_bytes {
                Some(SkipReason::TooLarge {
                    size: found.size,
                    limit: limits.max_file_bytes,
                })
            } else if result.files.len() >= limits.max_files {
                Some(SkipReason::TooManyFiles {
                    limit: limits.max_files,
                })
            } else if total.saturating_add(found.size) > limits.max_total_bytes {
                Some(SkipReason::CollectionTooLarge {
                    limit: limits.max_total_bytes,
                })
            } else {
                None
            };
            match reason {
                Some(reason) => result.skipped.push((found.path, reason)),
                None => {
                    total += found.size;
                    result.files.push(found);
                }
            }
        }
        result.skipped.sort_by(|a, b| a.0.cmp(&b.0));
        result
    }
}

/// Captures stage `node_id@visit`'s artifacts: scans `work_dir` with
/// `rules`, puts each selected file's bytes in `blobs` and records it in
/// `store` unless this run already recorded the same path with the same
/// content hash (counted as `unchanged`). With no patterns it does nothing.
///
/// Each file is re-checked as it is read: it is opened without following a
/// symlink in its last component and without blocking (a FIFO swapped in
/// cannot hang the run), and must still be a regular file with the device
/// and inode the scan saw. A swap of any folder on its path for a symlink
/// therefore yields [`SkipReason::Changed`], never a file from elsewhere.
/// The bytes read are held to the per-file and collection limits again, in
/// case the file grew after the scan.
///
/// Errors only when the blob store or the database fails; a file that
/// cannot be read is skipped, not an error.
pub fn capture(
    rules: &ArtifactRules,
    work_dir: &Path,
    store: &mut Store,
    blobs: &Blobs,
    run_id: &str,
    node_id: &str,
    visit: u32,
) -> Result<CaptureReport, ArtifactError> {
    let mut report = CaptureReport::default();
    if rules.is_empty() {
        return Ok(report);
    }
    let scan = rules.scan(work_dir);
    report.skipped = scan.skipped;
    let limits = rules.limits;
    let mut total: u64 = 0;
    for found in scan.files {
        let bytes = match read_found(&found, limits.max_file_bytes) {
            Ok(bytes) => bytes,
            Err(reason) => {
                report.skipped.push((found.path, reason));
                continue;
            }
        };
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if total.saturating_add(size) > limits.max_total_bytes {
            report.skipped.push((
                found.path,
                SkipReason::CollectionTooLarge {
                    limit: limits.max_total_bytes,
                },
            ));
            continue;
        }
        total += size;
        let (blob, _) = blobs.put(&bytes)?;
        let recorded = store.record_artifact(&NewArtifact {
            run_id,
            node_id,
            visit,
            path: &found.path,
            blob: &blob,
            size,
        })?;
        match recorded {
            Some(record) => report.captured.push(record),
            None => report.unchanged += 1,
        }
    }
    report.skipped.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(report)
}

/// The bytes of `found`, if it is still the regular file the scan saw and
/// at most `max_bytes` long.
fn read_found(found: &Found, max_bytes: u64) -> Result<Vec<u8>, SkipReason> {
    use rustix::fs::OFlags;
    let flags = (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits();
    let Ok(flags) = i32::try_from(flags) else {
        // The flags are small constants; this cannot happen, and reading
        // without them would not be safe.
        return Err(SkipReason::Unreadable {
            error: "cannot open files without following symlinks on this system".into(),
        });
    };
    let mut file: File = match OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(&found.abs)
    {
        Ok(file) => file,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || rustix::io::Errno::from_io_error(&e) == Some(rustix::io::Errno::LOOP) =>
        {
            return Err(SkipReason::Changed);
        }
        Err(e) => return Err(unreadable(&e)),
    };
    let meta = file.metadata().map_err(|e| unreadable(&e))?;
    if !meta.is_file() || meta.dev() != found.dev || meta.ino() != found.ino {
        return Err(SkipReason::Changed);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(max_bytes)).unwrap_or(0));
    // One byte past the limit tells a file that grew too large from one
    // exactly at it.
    file.by_ref()
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(&e))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > max_bytes {
        return Err(SkipReason::TooLarge {
            size: meta.len().max(read),
            limit: max_bytes,
        });
    }
    Ok(bytes)
}

fn unreadable(error: &std::io::Error) -> SkipReason {
    SkipReason::Unreadable {
        error: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BlobRef, Home, NewRun};
    use std::os::unix::fs::symlink;

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create folders");
        }
        std::fs::write(path, bytes).expect("write file");
    }

    fn rules(include: &[&str]) -> ArtifactRules {
        let include: Vec<String> = include.iter().map(|p| (*p).to_string()).collect();
        ArtifactRules::new(&include).expect("valid patterns")
    }

    fn found_paths(scan: &ScanResult) -> Vec<&str> {
        scan.files.iter().map(|f| f.path.as_str()).collect()
    }

    fn skipped(scan: &[(String, SkipReason)]) -> Vec<(&str, &SkipReason)> {
        scan.iter().map(|(p, r)| (p.as_str(), r)).collect()
    }

    #[test]
    fn star_and_question_mark_stay_within_one_segment() {
        let dir = tempfile::tempdir().expect("temp dir");
        for rel in [
            "report.md",
            "sub/report.md",
            ".ai/plans/2026-01-02-login.md",
            ".ai/plans/2026-1-02-login.md",
            ".ai/plans/old/2026-01-02-x.md",
        ] {
            write(dir.path(), rel, b"x");
        }
        let scan = rules(&["*.md", ".ai/plans/????-??-??-*.md"]).scan(dir.path());
        assert_eq!(
            found_paths(&scan),
            [".ai/plans/2026-01-02-login.md", "report.md"],
            "`*` does not cross `/`, `?` is exactly one character"
        );
        assert!(scan.skipped.is_empty());
    }

    #[test]
    fn double_star_crosses_directories() {
        let dir = tempfile::tempdir().expect("temp dir");
        for rel in [
            "a.trace.zip",
            "x/y/b.trace.zip",
            "test-results/junit.xml",
            "test-results/deep/er/shot.png",
            "other/junit.xml",
        ] {
            write(dir.path(), rel, b"x");
        }
        let scan = rules(&["test-results/**", "**/*.trace.zip"]).scan(dir.path());
        assert_eq!(
            found_paths(&scan),
            [
                "a.trace.zip",
                "test-results/deep/er/shot.png",
                "test-results/junit.xml",
                "x/y/b.trace.zip"
            ]
        );
        let dotted = rules(&["./test-results/*.xml"]);
        assert_eq!(dotted.patterns(), ["test-results/*.xml"], "`./` is dropped");
        assert_eq!(
            found_paths(&dotted.scan(dir.path())),
            ["test-results/junit.xml"]
        );
    }

    #[test]
    fn pruned_folders_are_never_entered_at_any_depth() {
        let dir = tempfile::tempdir().expect("temp dir");
        for pruned in PRUNED_DIRS {
            write(dir.path(), &format!("{pruned}/a.txt"), b"x");
            write(dir.path(), &format!("pkg/{pruned}/b.txt"), b"x");
        }
        write(dir.path(), "pkg/kept.txt", b"x");
        write(dir.path(), "targets/kept.txt", b"x");
        let scan = rules(&["**/*.txt"]).scan(dir.path());
        assert_eq!(
            found_paths(&scan),
            ["pkg/kept.txt", "targets/kept.txt"],
            "only folders named exactly as pruned ones are skipped"
        );
        let explicit = rules(&["node_modules/**", "dist/*"]).scan(dir.path());
        assert!(
            explicit.files.is_empty(),
            "pruning wins over a pattern naming the folder"
        );
    }

    #[test]
    fn no_patterns_means_no_scan() {
        let dir = tempfile::tempdir().expect("temp dir");
        write(dir.path(), "a.txt", b"x");
        let none = rules(&[]);
        assert!(none.is_empty());
        assert_eq!(none.scan(dir.path()), ScanResult::default());
        let missing = dir.path().join("does-not-exist");
        assert_eq!(
            none.scan(&missing),
            ScanResult::default(),
            "not even the folder is read"
        );
        let scan = rules(&["*"]).scan(&missing);
        assert_eq!(scan.files, []);
        assert!(
            matches!(
                skipped(&scan.skipped)[..],
                [(".", SkipReason::Unreadable { .. })]
            ),
            "a missing working directory is reported: {:?}",
            scan.skipped
        );
    }

    #[test]
    fn files_over_the_per_file_limit_are_skipped() {
        let dir = tempfile::tempdir().expect("temp dir");
        write(dir.path(), "big.bin", &[0; 11]);
        write(dir.path(), "edge.bin", &[0; 10]);
        let limits = ArtifactLimits {
            max_file_bytes: 10,
            ..ArtifactLimits::default()
        };
        let scan = ArtifactRules::with_limits(&["*.bin".into()], limits)
            .expect("valid")
            .scan(dir.path());
        assert_eq!(
            found_paths(&scan),
            ["edge.bin"],
            "the limit itself is allowed"
        );
        assert_eq!(
            skipped(&scan.skipped),
            [(
                "big.bin",
                &SkipReason::TooLarge {
                    size: 11,
                    limit: 10
                }
            )]
        );
    }

    #[test]
    fn count_and_total_limits_apply_in_path_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, size) in [("a", 4), ("b", 4), ("c", 4), ("d", 1), ("e", 1)] {
            write(dir.path(), &format!("{name}.log"), &vec![b'x'; size]);
        }
        let limits = ArtifactLimits {
            max_file_bytes: 100,
            max_files: 3,
            max_total_bytes: 9,
        };
        let scan = ArtifactRules::with_limits(&["*.log".into()], limits)
            .expect("valid")
            .scan(dir.path());
        assert_eq!(
            found_paths(&scan),
            ["a.log", "b.log", "d.log"],
            "c would pass 9 bytes; d still fits; then the count is full"
        );
        assert_eq!(
            skipped(&scan.skipped),
            [
                ("c.log", &SkipReason::CollectionTooLarge { limit: 9 }),
                ("e.log", &SkipReason::TooManyFiles { limit: 3 }),
            ]
        );
        assert_eq!(
            ArtifactRules::with_limits(&["*.log".into()], limits)
                .expect("valid")
                .scan(dir.path()),
            scan,
            "the same tree scans the same"
        );
    }

    #[test]
    fn the_documented_limits_are_the_defaults() {
        let limits = rules(&["*"]).limits();
        assert_eq!(limits.max_file_bytes, 10 * 1024 * 1024);
        assert_eq!(limits.max_files, 100);
        assert_eq!(limits.max_total_bytes, 50 * 1024 * 1024);
    }

    #[test]
    fn symlinks_are_skipped_whether_they_point_in_or_out() {
        let outside = tempfile::tempdir().expect("outside");
        write(outside.path(), "secret.txt", b"secret");
        write(outside.path(), "dir/secret.txt", b"secret");
        let dir = tempfile::tempdir().expect("temp dir");
        write(dir.path(), "real.txt", b"real");
        symlink(
            outside.path().join("secret.txt"),
            dir.path().join("out.txt"),
        )
        .expect("symlink");
        symlink(dir.path().join("real.txt"), dir.path().join("in.txt")).expect("symlink");
        symlink(outside.path().join("dir"), dir.path().join("linked")).expect("symlink");
        let scan = rules(&["**"]).scan(dir.path());
        assert_eq!(found_paths(&scan), ["real.txt"]);
        assert_eq!(
            skipped(&scan.skipped),
            [
                ("in.txt", &SkipReason::Symlink),
                ("linked", &SkipReason::Symlink),
                ("out.txt", &SkipReason::Symlink),
            ],
            "a symlinked folder is not walked either"
        );
    }

    #[test]
    fn patterns_that_leave_the_working_directory_are_refused() {
        for (pattern, says) in [
            ("../x", "`..`"),
            ("a/../../b", "`..`"),
            ("/etc/*", "absolute"),
            ("", "empty"),
            ("./", "empty"),
            ("a/[b", "not a valid glob"),
        ] {
            let error = ArtifactRules::new(&["ok/**".into(), pattern.into()]).expect_err("refused");
            assert_eq!(error.code(), "artifact.invalid_pattern");
            let message = error.to_string();
            assert!(
                message.contains(&format!("`{pattern}`")) && message.contains(says),
                "{pattern:?}: {message}"
            );
        }
        assert!(ArtifactRules::new(&["..hidden/*".into(), "a..b".into()]).is_ok());
    }

    #[test]
    fn the_run_config_section_reads_include() {
        let config: ArtifactsConfig =
            toml::from_str("include = [\"test-results/**\"]").expect("parses");
        assert_eq!(config.include, ["test-results/**"]);
        let empty: ArtifactsConfig = toml::from_str("").expect("parses");
        assert!(empty.include.is_empty());
    }

    // ----- capture --------------------------------------------------------

    struct Fixture {
        _temp: tempfile::TempDir,
        work: PathBuf,
        store: Store,
        blobs: Blobs,
    }

    fn fixture() -> Fixture {
        let temp = tempfile::tempdir().expect("temp dir");
        let home = Home::at(temp.path().join("home"));
        let work = temp.path().join("work");
        std::fs::create_dir_all(&work).expect("work dir");
        let mut store = Store::open(&home).expect("open store");
        store
            .create_run(&NewRun {
                id: "R1".into(),
                workflow_name: "wf".into(),
                workflow_path: None,
                goal: None,
                run_dir: temp.path().join("run"),
                work_dir: work.clone(),
                inputs: serde_json::Map::new(),
                options: serde_json::Value::Null,
                labels: Vec::new(),
                node_count: 0,
                edge_count: 0,
                created_at: "2026-01-01T00:00:00.000Z".into(),
            })
            .expect("create run");
        Fixture {
            _temp: temp,
            work,
            blobs: Blobs::new(&home),
            store,
        }
    }

    fn captured_paths(report: &CaptureReport) -> Vec<&str> {
        report.captured.iter().map(|a| a.path.as_str()).collect()
    }

    #[test]
    fn capture_stores_bytes_readable_from_the_blob_store() {
        let mut fx = fixture();
        write(&fx.work, "out/report.txt", b"all green");
        let report = capture(
            &rules(&["out/*"]),
            &fx.work,
            &mut fx.store,
            &fx.blobs,
            "R1",
            "test",
            1,
        )
        .expect("capture");
        assert_eq!(captured_paths(&report), ["out/report.txt"]);
        let record = &report.captured[0];
        assert_eq!(
            (record.node_id.as_str(), record.visit, record.size),
            ("test", 1, 9)
        );
        let blob = record.blob().expect("a blob ref");
        assert_eq!(blob, BlobRef::of(b"all green"));
        assert_eq!(fx.blobs.get(&blob).expect("stored"), b"all green");
        assert_eq!(fx.store.artifacts("R1").expect("list"), report.captured);
    }

    #[test]
    fn the_same_content_is_recorded_once_and_changed_content_again() {
        let mut fx = fixture();
        let rules = rules(&["*.txt"]);
        write(&fx.work, "a.txt", b"one");
        write(&fx.work, "b.txt", b"steady");
        let first = capture(&rules, &fx.work, &mut fx.store, &fx.blobs, "R1", "build", 1)
            .expect("first capture");
        assert_eq!(captured_paths(&first), ["a.txt", "b.txt"]);
        assert_eq!(first.unchanged, 0);

        let again = capture(&rules, &fx.work, &mut fx.store, &fx.blobs, "R1", "test", 1)
            .expect("second capture");
        assert!(again.captured.is_empty(), "nothing changed");
        assert_eq!(again.unchanged, 2);

        write(&fx.work, "a.txt", b"two");
        let changed = capture(&rules, &fx.work, &mut fx.store, &fx.blobs, "R1", "build", 2)
            .expect("third capture");
        assert_eq!(captured_paths(&changed), ["a.txt"]);
        assert_eq!(changed.unchanged, 1);
        assert_eq!(changed.captured[0].blob(), Some(BlobRef::of(b"two")));

        write(&fx.work, "a.txt", b"one");
        let back = capture(&rules, &fx.work, &mut fx.store, &fx.blobs, "R1", "build", 3)
            .expect("fourth capture");
        assert!(
            back.captured.is_empty(),
            "content seen before at this path is not recorded again"
        );
        let all: Vec<(String, u32, String)> = fx
            .store
            .artifacts("R1")
            .expect("list")
            .into_iter()
            .map(|a| (a.path, a.visit, a.node_id))
            .collect();
        assert_eq!(
            all,
            [
                ("a.txt".into(), 1, "build".into()),
                ("b.txt".into(), 1, "build".into()),
                ("a.txt".into(), 2, "build".into()),
            ]
        );
    }

    #[test]
    fn capture_reports_skips_and_never_reads_through_symlinks() {
        let mut fx = fixture();
        let outside = tempfile::tempdir().expect("outside");
        write(outside.path(), "secret.txt", b"secret");
        symlink(outside.path().join("secret.txt"), fx.work.join("leak.txt")).expect("symlink");
        write(&fx.work, "ok.txt", b"ok");
        let report = capture(
            &rules(&["*.txt"]),
            &fx.work,
            &mut fx.store,
            &fx.blobs,
            "R1",
            "build",
            1,
        )
        .expect("capture");
        assert_eq!(captured_paths(&report), ["ok.txt"]);
        assert_eq!(
            skipped(&report.skipped),
            [("leak.txt", &SkipReason::Symlink)]
        );
        assert!(
            !fx.blobs.path(&BlobRef::of(b"secret")).exists(),
            "the target's bytes never reach the blob store"
        );
    }

    #[test]
    fn a_file_swapped_for_a_symlink_after_the_scan_is_not_read() {
        let fx = fixture();
        let outside = tempfile::tempdir().expect("outside");
        write(outside.path(), "secret.txt", b"secret");
        write(&fx.work, "report.txt", b"fine");
        write(&fx.work, "sub/inner.txt", b"fine");
        let scan = rules(&["**/*.txt"]).scan(&fx.work);
        assert_eq!(found_paths(&scan), ["report.txt", "sub/inner.txt"]);

        // The last component becomes a symlink.
        std::fs::remove_file(fx.work.join("report.txt")).expect("remove");
        symlink(
            outside.path().join("secret.txt"),
            fx.work.join("report.txt"),
        )
        .expect("symlink");
        // A folder on the path becomes a symlink to a look-alike outside.
        write(outside.path(), "sub/inner.txt", b"secret");
        std::fs::remove_dir_all(fx.work.join("sub")).expect("remove folder");
        symlink(outside.path().join("sub"), fx.work.join("sub")).expect("symlink");

        for found in &scan.files {
            assert_eq!(
                read_found(found, MAX_FILE_BYTES),
                Err(SkipReason::Changed),
                "{}",
                found.path
            );
        }
    }

    #[test]
    fn a_file_that_grew_past_the_limit_after_the_scan_is_skipped() {
        let fx = fixture();
        write(&fx.work, "log.txt", b"short");
        let scan = rules(&["*.txt"]).scan(&fx.work);
        let mut file = OpenOptions::new()
            .append(true)
            .open(fx.work.join("log.txt"))
            .expect("open");
        std::io::Write::write_all(&mut file, b" and now much longer").expect("append");
        assert_eq!(
            read_found(&scan.files[0], 10),
            Err(SkipReason::TooLarge {
                size: 25,
                limit: 10
            })
        );
        assert_eq!(
            read_found(&scan.files[0], 25).expect("within the limit"),
            b"short and now much longer"
        );
    }
}
