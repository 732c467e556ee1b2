//! Finding what a stage changed in the run's worktree: the files to add to
//! the index and the ones to remove from it.
//!
//! libgit2's status scan is always right and is the fallback. While the
//! index matches the branch's head (the last checkpoint wrote both and
//! nothing touched them since), a quicker walk does the same job: it is
//! most of a checkpoint's cost, and libgit2 stats every file by its full
//! path, one at a time, where the walk stats each by its name in an open
//! directory, on two threads (docs/performance.md, "Git checkpoints").
//!
//! The walk only has to be cautious, not exact: a file whose stat data
//! differs from its index entry in any way is a candidate, and adding a
//! candidate whose content did not change leaves the index's blob and the
//! commit's tree as they were. What it must never do is miss a change, so
//! whatever it does not handle (conflicts, submodules, nested
//! repositories, flagged entries, names that are not UTF-8, a directory
//! it cannot read) sends the scan to libgit2.

use std::collections::{HashMap, HashSet};
use std::fs::{DirEntry, Metadata};
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use git2::{Index, Repository, Status};

use super::GitError;

/// Which scan found a stage's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanKind {
    /// The walk, while the index was as the last checkpoint left it.
    Walk,
    /// libgit2's status scan.
    Status,
}

/// What a scan found.
pub(super) struct Scan {
    pub(super) kind: ScanKind,
    /// The worktree's changes to stage, by path.
    pub(super) to_stage: Vec<(String, Change)>,
    /// Every path whose entry may differ from the head's tree once staged
    /// (changed in the worktree, or staged in the index by someone else,
    /// e.g. `git add` in a command stage); `None` when one of them cannot
    /// be named (not UTF-8) or is in conflict.
    pub(super) changed: Option<Vec<String>>,
    /// The size of the files to stage.
    pub(super) bytes_to_stage: u64,
}

pub(super) enum Change {
    Written,
    Deleted,
}

/// Scans the worktree: new and modified files are to be added, deleted
/// ones removed. Only the changed paths are then touched (an `add_all`
/// over the whole tree matches every path against a pathspec and re-reads
/// more than it needs). `index_matches_head` says the index has nothing
/// staged that the head lacks, so only the worktree and the index are
/// compared.
pub(super) fn scan(
    repo: &Repository,
    index: &Index,
    worktree: &Path,
    index_matches_head: bool,
) -> Result<Scan, GitError> {
    if index_matches_head && let Some(scan) = walk(repo, index, worktree) {
        return Ok(scan);
    }
    status_scan(repo, worktree, index_matches_head)
}

/// libgit2's status scan.
fn status_scan(
    repo: &Repository,
    worktree: &Path,
    index_matches_head: bool,
) -> Result<Scan, GitError> {
    let mut options = super::changes_options();
    if index_matches_head {
        options.show(git2::StatusShow::Workdir);
    }
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| GitError::from_git("cannot scan the worktree", &e))?;
    let mut scan = Scan {
        kind: ScanKind::Status,
        to_stage: Vec::new(),
        changed: Some(Vec::with_capacity(statuses.len())),
        bytes_to_stage: 0,
    };
    for entry in statuses.iter() {
        let status = entry.status();
        let Some(path) = entry.path() else {
            scan.changed = None;
            continue;
        };
        if status.contains(Status::CONFLICTED) {
            scan.changed = None;
        }
        if status.contains(Status::WT_DELETED) {
            scan.to_stage.push((path.to_string(), Change::Deleted));
        } else if status.intersects(
            Status::WT_NEW | Status::WT_MODIFIED | Status::WT_TYPECHANGE | Status::WT_RENAMED,
        ) {
            scan.bytes_to_stage += std::fs::symlink_metadata(worktree.join(path))
                .map(|m| m.len())
                .unwrap_or(0);
            scan.to_stage.push((path.to_string(), Change::Written));
        }
        if let Some(changed) = scan.changed.as_mut() {
            changed.push(path.to_string());
        }
    }
    Ok(scan)
}

/// An index entry's stat data, as git records it (truncated to 32 bits).
struct Recorded {
    mode: u32,
    size: u32,
    mtime: (i32, u32),
    ctime: (i32, u32),
    ino: u32,
    uid: u32,
    gid: u32,
    seen: AtomicBool,
}

/// Entry flags the walk leaves to libgit2: assume-valid, and (extended)
/// intent-to-add and skip-worktree.
const FLAG_ASSUME_VALID: u16 = 0x8000;
const FLAG_STAGE_MASK: u16 = 0x3000;
const MODE_TYPE: u32 = 0o170000;
const MODE_FILE: u32 = 0o100000;
const MODE_LINK: u32 = 0o120000;

/// The walk: every directory the index has files in is read (on up to two
/// threads), each file in it stat'ed by name and compared with its entry;
/// what the index lacks is checked against the ignore rules afterwards.
/// `None` when it meets something it leaves to libgit2.
fn walk(repo: &Repository, index: &Index, worktree: &Path) -> Option<Scan> {
    if index.has_conflicts() {
        return None;
    }
    let index_mtime = index_mtime(repo)?;
    let mut recorded = HashMap::with_capacity(index.len());
    let mut directories: HashSet<String> = HashSet::new();
    directories.insert(String::new());
    for entry in index.iter() {
        if entry.flags & (FLAG_ASSUME_VALID | FLAG_STAGE_MASK) != 0
            || entry.flags_extended != 0
            || !matches!(entry.mode & MODE_TYPE, MODE_FILE | MODE_LINK)
        {
            return None;
        }
        let path = String::from_utf8(entry.path).ok()?;
        let mut parent = path.as_str();
        while let Some((up, _)) = parent.rsplit_once('/') {
            if !directories.insert(up.to_string()) {
                break;
            }
            parent = up;
        }
        recorded.insert(
            path,
            Recorded {
                mode: entry.mode,
                size: entry.file_size,
                mtime: (entry.mtime.seconds(), entry.mtime.nanoseconds()),
                ctime: (entry.ctime.seconds(), entry.ctime.nanoseconds()),
                ino: entry.ino,
                uid: entry.uid,
                gid: entry.gid,
                seen: AtomicBool::new(false),
            },
        );
    }
    let tracked = directories;
    let directories: Vec<&String> = tracked.iter().collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let found = Mutex::new(Found::default());
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 2);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut mine = Found::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(directory) = directories.get(i) else {
                        break;
                    };
                    if failed.load(Ordering::Relaxed)
                        || read_tracked(
                            worktree,
                            directory,
                            &tracked,
                            &recorded,
                            index_mtime,
                            &mut mine,
                        )
                        .is_none()
                    {
                        failed.store(true, Ordering::Relaxed);
                        break;
                    }
                }
                if let Ok(mut found) = found.lock() {
                    found.merge(mine);
                }
            });
        }
    });
    if failed.load(Ordering::Relaxed) {
        return None;
    }
    let mut found = found.into_inner().ok()?;
    for path in std::mem::take(&mut found.untracked) {
        untracked(repo, worktree, path, &mut found)?;
    }
    let mut to_stage: Vec<(String, Change)> = found
        .written
        .into_iter()
        .map(|path| (path, Change::Written))
        .collect();
    to_stage.extend(
        recorded
            .into_iter()
            .filter(|(_, r)| !r.seen.load(Ordering::Relaxed))
            .map(|(path, _)| (path, Change::Deleted)),
    );
    to_stage.sort_by(|a, b| a.0.cmp(&b.0));
    let changed = to_stage.iter().map(|(path, _)| path.clone()).collect();
    Some(Scan {
        kind: ScanKind::Walk,
        to_stage,
        changed: Some(changed),
        bytes_to_stage: found.bytes,
    })
}

/// What the threads found.
#[derive(Default)]
struct Found {
    /// Files to add: changed, or new and not ignored.
    written: Vec<String>,
    /// Files and directories the index lacks, not yet checked against the
    /// ignore rules.
    untracked: Vec<String>,
    bytes: u64,
}

impl Found {
    fn merge(&mut self, other: Found) {
        self.written.extend(other.written);
        self.untracked.extend(other.untracked);
        self.bytes += other.bytes;
    }
}

/// When the index file was last written: an entry whose file changed in
/// the same instant or later may have changed without its stat data
/// showing it ("racy git"), so it is always a candidate.
fn index_mtime(repo: &Repository) -> Option<(i64, i64)> {
    let metadata = std::fs::metadata(repo.path().join("index")).ok()?;
    Some((metadata.mtime(), metadata.mtime_nsec()))
}

/// The path of `name` in `directory` (`""` is the worktree's root).
fn join(directory: &str, name: &str) -> String {
    if directory.is_empty() {
        name.to_string()
    } else {
        format!("{directory}/{name}")
    }
}

/// Reads one directory the index has files in. `None` on what the walk
/// leaves to libgit2.
fn read_tracked(
    worktree: &Path,
    directory: &str,
    tracked: &HashSet<String>,
    recorded: &HashMap<String, Recorded>,
    index_mtime: (i64, i64),
    found: &mut Found,
) -> Option<()> {
    let entries = match std::fs::read_dir(worktree.join(directory)) {
        Ok(entries) => entries,
        // Gone, or a file now: its entries are deleted, and the file (if
        // it is one) is met in its parent.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Some(());
        }
        Err(_) => return None,
    };
    for entry in entries {
        let entry = entry.ok()?;
        let name = entry.file_name().into_string().ok()?;
        if name == ".git" {
            if directory.is_empty() {
                // The worktree's own link to its repository.
                continue;
            }
            return None;
        }
        let path = join(directory, &name);
        let kind = entry.file_type().ok()?;
        if kind.is_dir() {
            // Directories the index has files in are read on their own;
            // the others are untracked.
            if !tracked.contains(&path) {
                found.untracked.push(path);
            }
            continue;
        }
        if !kind.is_file() && !kind.is_symlink() {
            // Sockets, fifos and devices: git does not track them.
            continue;
        }
        let Some(record) = recorded.get(&path) else {
            found.untracked.push(path);
            continue;
        };
        record.seen.store(true, Ordering::Relaxed);
        let metadata = stat(&entry)?;
        if differs(record, &metadata, index_mtime) {
            found.bytes += metadata.len();
            found.written.push(path);
        }
    }
    Some(())
}

/// The entry's stat data, not following a symlink (by name in its open
/// directory: no walk of the full path).
fn stat(entry: &DirEntry) -> Option<Metadata> {
    entry.metadata().ok()
}

/// Whether the file may differ from what its index entry records.
fn differs(record: &Recorded, metadata: &Metadata, index_mtime: (i64, i64)) -> bool {
    let mode_differs = if metadata.file_type().is_symlink() {
        record.mode != MODE_LINK
    } else {
        record.mode & MODE_TYPE != MODE_FILE
            || (record.mode & 0o100 != 0) != (metadata.mode() & 0o100 != 0)
    };
    // git keeps 32 bits of each of these; truncating compares like it.
    #[allow(clippy::cast_possible_truncation)]
    let truncated = |v: i64| v as i32;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let nanos = |v: i64| v as u32;
    #[allow(clippy::cast_possible_truncation)]
    let low = |v: u64| v as u32;
    let mtime = (metadata.mtime(), metadata.mtime_nsec());
    mode_differs
        || record.size != low(metadata.size())
        || record.mtime != (truncated(mtime.0), nanos(mtime.1))
        || record.ctime != (truncated(metadata.ctime()), nanos(metadata.ctime_nsec()))
        || record.ino != low(metadata.ino())
        || record.uid != metadata.uid()
        || record.gid != metadata.gid()
        || mtime >= index_mtime
}

/// An untracked file or directory, unless the ignore rules leave it out; a
/// directory's contents are walked (by this thread only: untracked trees
/// are rare and usually small, and the large kind, ignored, is skipped
/// whole). `None` on what the walk leaves to libgit2.
fn untracked(repo: &Repository, worktree: &Path, path: String, found: &mut Found) -> Option<()> {
    // A stack, not recursion: a hostile tree may be as deep as paths go.
    let mut pending = vec![path];
    while let Some(path) = pending.pop() {
        if repo.is_path_ignored(&path).ok()? {
            continue;
        }
        let full = worktree.join(&path);
        let metadata = std::fs::symlink_metadata(&full).ok()?;
        if metadata.is_dir() {
            for entry in std::fs::read_dir(&full).ok()? {
                let name = entry.ok()?.file_name().into_string().ok()?;
                if name == ".git" {
                    // A repository inside the worktree: libgit2 knows what
                    // git makes of those.
                    return None;
                }
                pending.push(join(&path, &name));
            }
        } else if metadata.is_file() || metadata.is_symlink() {
            found.bytes += metadata.len();
            found.written.push(path);
        }
    }
    Some(())
}
