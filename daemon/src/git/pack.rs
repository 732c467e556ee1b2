//! A checkpoint's new objects written as one pack. A loose object is a
//! file of its own, and creating some forty files per stage cost more than
//! everything else a checkpoint does (docs/performance.md, "Git
//! checkpoints"). So a checkpoint's objects are first written to an
//! in-memory object store (libgit2's mempack, see [`Pending`]) and then to
//! the repository in one pack, before any reference names them.

use std::collections::{BTreeSet, HashSet};
use std::io::Write as _;
use std::path::Path;

use git2::{ObjectType, Oid, Tree};
use sha1::{Digest, Sha1};

use super::GitError;

/// The priority of the in-memory object store: above the repository's own
/// stores, so it takes the writes.
const PENDING_OBJECTS_PRIORITY: i32 = 1000;

/// A checkpoint's objects are held in memory up to this many bytes of
/// changed files before they are written as one pack; past it, loose (a
/// file each), as git would write them.
pub(super) const MAX_PACKED_BYTES: u64 = 64 * 1024 * 1024;

/// zlib's level for a pack: the fastest, as git writes loose objects
/// (`core.looseCompression`), which these would otherwise be.
const PACK_COMPRESSION: u8 = 1;

/// Where a checkpoint's new objects go until [`Pending::write`]: memory
/// when they are small enough, or the repository's loose objects.
pub(super) struct Pending {
    objects: Vec<Oid>,
    packed: bool,
}

impl Pending {
    /// From now on, what `repo` writes is held in memory when `bytes` (the
    /// size of the files to be written) is at most [`MAX_PACKED_BYTES`];
    /// otherwise it goes to disk as it is written.
    pub(super) fn start(repo: &git2::Repository, bytes: u64) -> Result<Pending, GitError> {
        let packed = bytes <= MAX_PACKED_BYTES;
        if packed {
            repo.odb()
                .and_then(|odb| {
                    odb.add_new_mempack_backend(PENDING_OBJECTS_PRIORITY)
                        .map(drop)
                })
                .map_err(|e| GitError::from_git("cannot hold the checkpoint's objects", &e))?;
        }
        Ok(Pending {
            objects: Vec::new(),
            packed,
        })
    }

    /// Adds what `commit` can reach that its parent cannot: the commit, its
    /// tree, the trees of the directories on `paths` and the blobs at
    /// `paths` (the paths the commit added, changed or deleted). An
    /// unchanged directory keeps its tree; one object left out would leave
    /// a branch naming an object that is not on disk, which is why the
    /// tests run `git fsck` after every kind of change.
    pub(super) fn add_commit<'p>(
        &mut self,
        commit: Oid,
        tree: &Tree<'_>,
        paths: impl IntoIterator<Item = &'p Path>,
    ) {
        self.objects.push(commit);
        self.objects.push(tree.id());
        let mut directories = BTreeSet::new();
        for path in paths {
            if let Ok(entry) = tree.get_path(path)
                && entry.kind() == Some(ObjectType::Blob)
            {
                self.objects.push(entry.id());
            }
            directories.extend(
                path.ancestors()
                    .skip(1)
                    .filter(|d| !d.as_os_str().is_empty()),
            );
        }
        for directory in directories {
            // A directory the commit emptied is gone from its tree.
            if let Ok(entry) = tree.get_path(directory) {
                self.objects.push(entry.id());
            }
        }
    }

    /// Writes the objects added to the repository as one pack (nothing to
    /// do when they went to disk as they were written).
    pub(super) fn write(mut self, repo: &git2::Repository) -> Result<(), GitError> {
        if !self.packed || self.objects.is_empty() {
            return Ok(());
        }
        let mut seen = HashSet::new();
        self.objects.retain(|id| seen.insert(*id));
        let odb = repo
            .odb()
            .map_err(|e| GitError::from_git("cannot open the object database", &e))?;
        write_pack(&odb, &self.objects)
    }
}

/// Writes `objects` to the repository as one pack (git's pack format,
/// version 2: each object whole, zlib-compressed, no deltas; libgit2's
/// packbuilder spends its time looking for deltas between the trees).
/// libgit2's indexer checks it and writes its index.
fn write_pack(odb: &git2::Odb<'_>, objects: &[Oid]) -> Result<(), GitError> {
    let failed = |e: git2::Error| GitError::from_git("cannot write the checkpoint's objects", &e);
    let count = u32::try_from(objects.len())
        .map_err(|_| GitError("a checkpoint with too many objects to pack".to_string()))?;
    let mut pack = Vec::new();
    pack.extend_from_slice(b"PACK");
    pack.extend_from_slice(&2u32.to_be_bytes());
    pack.extend_from_slice(&count.to_be_bytes());
    for id in objects {
        let object = odb.read(*id).map_err(failed)?;
        let kind: u8 = match object.kind() {
            ObjectType::Commit => 1,
            ObjectType::Tree => 2,
            ObjectType::Blob => 3,
            ObjectType::Tag => 4,
            _ => return Err(GitError(format!("cannot pack the object {id}"))),
        };
        let data = object.data();
        // The header: the type and the size, 4 bits then 7 bits a byte,
        // the high bit saying another byte follows.
        let mut size = data.len();
        let mut byte = (kind << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            pack.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        pack.push(byte);
        pack.extend_from_slice(&miniz_oxide::deflate::compress_to_vec_zlib(
            data,
            PACK_COMPRESSION,
        ));
    }
    let trailer = Sha1::digest(&pack);
    pack.extend_from_slice(&trailer);
    let mut writer = odb.packwriter().map_err(failed)?;
    writer
        .write_all(&pack)
        .map_err(|e| GitError(format!("cannot write the checkpoint's objects: {e}")))?;
    writer.commit().map_err(failed)?;
    Ok(())
}
