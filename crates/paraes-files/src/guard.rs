//! What a change of a container in place (`rekey`, `upgrade`) holds on to: the exclusive lock two
//! paraes processes honour, the owner and mode a replacing copy keeps, and a [`Snapshot`] of
//! the file as it was opened (its identity, size, mtime, ctime and header bytes), compared again
//! right before the first write in place and right before a copy is renamed over it, so that a
//! file another program rewrote meanwhile is never written over or replaced.

use std::fs::{self, File, Metadata};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// Why a guarded change stopped before it touched the file.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// Another paraes holds the lock.
    #[error(
        "another paraes is rekeying or upgrading it: wait for it to finish, then run this again"
    )]
    Busy,
    /// The lock could not be taken.
    #[error("locking it failed")]
    Locking(#[source] std::io::Error),
    /// The path no longer names a file.
    #[error("it disappeared")]
    Disappeared(#[source] std::io::Error),
    /// The path names another file than the one locked.
    #[error(
        "it was replaced while this started (another rekey or upgrade rewrote it): run this again"
    )]
    Replaced,
    /// The copy's mode could not be set.
    #[error("setting the copy's mode failed")]
    Mode(#[source] std::io::Error),
    /// The file changed after it was read.
    #[error("it changed after paraes read it (another program wrote to it): nothing was written; check what it holds now, then run this again")]
    Changed,
    /// Another file took the name.
    #[error("another file was moved to its name meanwhile: it was left as it is, and nothing was replaced")]
    MovedOver,
    /// The file changed before the copy replaced it.
    #[error("nothing was replaced")]
    NotReplaced(#[source] Box<GuardError>),
    /// Reading the file's facts failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

type Result<T, E = GuardError> = std::result::Result<T, E>;

/// Takes an exclusive lock on the container for the whole rekey or upgrade (released when
/// `file` is closed), so two of them never interleave their writes; then checks that `path`
/// still names the locked file (a rekey by rewrite may have replaced it while we waited).
pub fn lock(file: &File, path: &Path, meta: &Metadata) -> Result<()> {
    use rustix::fs::{flock, FlockOperation};
    flock(file, FlockOperation::NonBlockingLockExclusive).map_err(|e| match e {
        rustix::io::Errno::WOULDBLOCK => GuardError::Busy,
        other => GuardError::Locking(other.into()),
    })?;
    let now = fs::metadata(path).map_err(GuardError::Disappeared)?;
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
        return Err(GuardError::Replaced);
    }
    Ok(())
}

/// Gives the copy that will replace a file the file's owner, group and mode. Where the owner
/// cannot be kept (not root, another user's file), the setuid and setgid bits are dropped
/// rather than given to a new owner; where the group cannot be kept either (the user is not in
/// it), so are the group's permission bits, which would otherwise pass to the user's own group.
pub fn keep_owner_and_mode(copy: &File, meta: &Metadata) -> Result<()> {
    use std::os::unix::fs::fchown;
    let mut mode = meta.permissions().mode() & 0o7777;
    let same_owner = (meta.uid(), meta.gid()) == (copy.metadata()?.uid(), copy.metadata()?.gid());
    if !same_owner && fchown(copy, Some(meta.uid()), Some(meta.gid())).is_err() {
        mode &= !0o6000;
        // A user may give their file any group they are in.
        let _ = fchown(copy, None, Some(meta.gid()));
        if copy.metadata()?.gid() != meta.gid() {
            mode &= !0o070;
        }
    }
    copy.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(GuardError::Mode)
}

/// A file as paraes opened it: taken before its header is read, compared before anything is
/// written to it or renamed over it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Snapshot {
    /// The facts of `meta` that any write to the file changes.
    pub fn of(meta: &Metadata) -> Self {
        Snapshot {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Right before the first write to `file`: its size, mtime and ctime as in the snapshot
    /// (before and after the read) and its first bytes equal to `header`, the header (and v3's
    /// salt and commitment) that opened it. Returns the bytes read: the undo record.
    pub fn recheck(&self, file: &File, header: &[u8]) -> Result<Vec<u8>> {
        let before = Snapshot::of(&file.metadata()?);
        let mut bytes = vec![0u8; header.len()];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|_| GuardError::Changed)?;
        let after = Snapshot::of(&file.metadata()?);
        if before != *self || after != *self || bytes != header {
            return Err(GuardError::Changed);
        }
        Ok(bytes)
    }

    /// Right before a copy is renamed over `path`: `path` still names this file, and
    /// [`Snapshot::recheck`] passes (nobody rewrote it in place while the copy was made).
    pub fn recheck_path(&self, path: &Path, file: &File, header: &[u8]) -> Result<()> {
        // The name itself, not what a link there points at: a link put in the file's place
        // (`mv f g; ln -s g f`) is a file moved over it, and renaming over it would leave the
        // original (at `g`) unchanged.
        let now = fs::symlink_metadata(path).map_err(GuardError::Disappeared)?;
        if (now.dev(), now.ino()) != (self.dev, self.ino) {
            return Err(GuardError::MovedOver);
        }
        self.recheck(file, header)
            .map(drop)
            .map_err(|e| GuardError::NotReplaced(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(contents: &[u8]) -> (tempfile::TempDir, std::path::PathBuf, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, contents).unwrap();
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (dir, path, file)
    }

    #[test]
    fn an_untouched_file_passes_and_gives_its_header_as_the_undo_record() {
        let (_dir, path, file) = scratch(b"HEADERbody");
        let snapshot = Snapshot::of(&file.metadata().unwrap());
        assert_eq!(snapshot.recheck(&file, b"HEADER").unwrap(), b"HEADER");
        snapshot.recheck_path(&path, &file, b"HEADER").unwrap();
    }

    /// A link put in the file's place (`mv f g; ln -s g f`) is a file moved over it: renaming
    /// a copy over the link would leave the original, at `g`, unchanged.
    #[test]
    fn a_link_put_in_the_files_place_is_a_file_moved_over_it() {
        let (dir, path, file) = scratch(b"HEADERbody");
        let snapshot = Snapshot::of(&file.metadata().unwrap());
        let moved = dir.path().join("g");
        fs::rename(&path, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &path).unwrap();
        let err = snapshot.recheck_path(&path, &file, b"HEADER").unwrap_err();
        assert!(matches!(err, GuardError::MovedOver), "{err:?}");
    }

    #[test]
    fn a_file_rewritten_in_place_is_refused_even_with_the_same_header_and_length() {
        let (_dir, path, file) = scratch(b"HEADERbody");
        let snapshot = Snapshot::of(&file.metadata().unwrap());
        // Same inode, same length, same header: only the times tell.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&path, b"HEADERBODY").unwrap();
        let err = snapshot.recheck(&file, b"HEADER").unwrap_err().to_string();
        assert!(err.contains("changed after paraes read it"), "{err}");
        assert!(snapshot.recheck_path(&path, &file, b"HEADER").is_err());
    }

    #[test]
    fn another_header_is_refused() {
        let (_dir, _path, file) = scratch(b"HEADERbody");
        let snapshot = Snapshot::of(&file.metadata().unwrap());
        assert!(snapshot.recheck(&file, b"HEADEX").is_err());
    }

    #[test]
    fn a_file_moved_over_the_name_is_refused() {
        let (dir, path, file) = scratch(b"HEADERbody");
        let snapshot = Snapshot::of(&file.metadata().unwrap());
        let other = dir.path().join("g");
        fs::write(&other, b"HEADERbody").unwrap();
        fs::rename(&other, &path).unwrap();
        let err = snapshot
            .recheck_path(&path, &file, b"HEADER")
            .unwrap_err()
            .to_string();
        assert!(err.contains("moved to its name"), "{err}");
    }
}
