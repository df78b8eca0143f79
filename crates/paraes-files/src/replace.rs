//! The one protocol by which paraes changes an existing container (rekey, upgrade): open the
//! file a path names (a symbolic link: its target) read-write, lock it, and take a
//! [`Snapshot`]; then either write in place (the caller, under a lease, after
//! [`Snapshot::recheck`]) or replace it by a copy: a temporary beside it with the file's owner
//! and mode, written, confirmed by reading it back, the original checked unchanged, and only
//! then renamed over it. Any failure before the rename leaves the file as it was.

use std::fs::{self, File, Metadata};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::guard::{self, GuardError, Snapshot};
use crate::{FileError, Output, OutputOptions};

/// Why a container could not be taken for a change.
#[derive(Debug, thiserror::Error)]
pub enum TakeError {
    /// It could not be opened read-write.
    #[error("cannot open it")]
    Open(#[source] std::io::Error),
    /// It is not a regular file.
    #[error("not a regular file")]
    NotRegular,
    /// It is locked by another paraes, or was replaced meanwhile.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// Its path goes through a link another user planted in a shared directory
    /// ([`crate::shared_dirs::resolve_links`]).
    #[error(transparent)]
    Planted(FileError),
}

/// The step of [`Taken::replace_by_copy`] that failed; every one leaves the file unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Making the copy or writing it.
    Write,
    /// Reading the copy back.
    Confirm,
    /// The original changed meanwhile (another program wrote to it or moved a file over it).
    Recheck,
    /// Renaming the copy over the original.
    Commit,
}

/// A container taken for a change: open read-write, locked against other paraes processes,
/// and its state at the time noted.
pub struct Taken {
    /// The file the path names (a symbolic link's target).
    pub target: PathBuf,
    /// The open file (the lock lives as long as it does).
    pub file: File,
    /// Its metadata when taken.
    pub meta: Metadata,
    /// Its state when taken, compared before every write.
    pub snapshot: Snapshot,
}

impl Taken {
    /// Takes the container `path` names.
    pub fn take(path: &Path) -> Result<Self, TakeError> {
        let target = crate::shared_dirs::resolve_links(path).map_err(|e| match e {
            FileError::Io { source, .. } => TakeError::Open(source),
            planted => TakeError::Planted(planted),
        })?;
        // The resolved path has no link in it; one swapped in since is refused (ELOOP), not
        // followed to another file.
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&target)
            .map_err(TakeError::Open)?;
        let meta = file.metadata().map_err(TakeError::Open)?;
        if !meta.is_file() {
            return Err(TakeError::NotRegular);
        }
        guard::lock(&file, &target, &meta)?;
        let snapshot = Snapshot::of(&meta);
        Ok(Taken {
            target,
            file,
            meta,
            snapshot,
        })
    }

    /// Replaces the container by a copy: `write` fills the copy (a fresh temporary beside it,
    /// with its owner and mode) and returns what `confirm` needs to check the copy read back;
    /// then the original must still be as taken with `header` (the bytes that opened it) as its
    /// first bytes, and the copy is renamed over it, durably. On failure, the step that failed
    /// and its error; the original is unchanged then.
    pub fn replace_by_copy<T, E>(
        &self,
        header: &[u8],
        write: impl FnOnce(&File) -> Result<T, E>,
        confirm: impl FnOnce(&File, T) -> Result<(), E>,
    ) -> Result<(), (Step, E)>
    where
        E: From<FileError> + From<GuardError>,
    {
        let at = |step: Step| move |e: E| (step, e);
        let output = Output::create(Some(&self.target), &OutputOptions::replacing())
            .map_err(E::from)
            .map_err(at(Step::Write))?;
        let copy = output
            .file()
            .ok_or_else(|| {
                E::from(FileError::OutputNotRegular {
                    path: self.target.clone(),
                    kind: "not a regular file",
                })
            })
            .map_err(at(Step::Write))?;
        guard::keep_owner_and_mode(copy, &self.meta)
            .map_err(E::from)
            .map_err(at(Step::Write))?;
        let written = write(copy).map_err(at(Step::Write))?;
        confirm(copy, written).map_err(at(Step::Confirm))?;
        self.snapshot
            .recheck_path(&self.target, &self.file, header)
            .map_err(E::from)
            .map_err(at(Step::Recheck))?;
        output.commit().map_err(E::from).map_err(at(Step::Commit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a caller's error holds: either kind [`Taken::replace_by_copy`] may give.
    #[derive(Debug)]
    enum Failure {
        File(FileError),
        // Read only by `Debug`, in a failing test's message.
        Guard(#[allow(dead_code)] GuardError),
    }

    impl From<FileError> for Failure {
        fn from(e: FileError) -> Self {
            Failure::File(e)
        }
    }

    impl From<GuardError> for Failure {
        fn from(e: GuardError) -> Self {
            Failure::Guard(e)
        }
    }

    fn copy_of(taken: &Taken) -> Result<(), (Step, Failure)> {
        taken.replace_by_copy(
            b"HEADER",
            |copy| {
                let mut copy = copy;
                std::io::Write::write_all(&mut copy, b"HEADERnew")
                    .map_err(|e| Failure::File(FileError::io("cannot write the copy", e)))
            },
            |_, ()| Ok(()),
        )
    }

    #[test]
    fn a_copy_replaces_the_file_it_took() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"HEADERold").unwrap();
        let taken = Taken::take(&path).unwrap();
        copy_of(&taken).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"HEADERnew");
    }

    /// The file swapped for a link to a device or for a FIFO after it was taken: the copy is
    /// refused at its first step (no panic on a stream output, no wait on a FIFO's reader), and
    /// nothing is written through the name.
    #[test]
    fn a_file_swapped_for_a_device_or_fifo_is_refused_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        for swap in ["link to /dev/null", "fifo"] {
            fs::write(&path, b"HEADERold").unwrap();
            let taken = Taken::take(&path).unwrap();
            fs::remove_file(&path).unwrap();
            match swap {
                "fifo" => rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &path,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .unwrap(),
                _ => std::os::unix::fs::symlink("/dev/null", &path).unwrap(),
            }
            let err = copy_of(&taken).unwrap_err();
            assert!(
                matches!(
                    err,
                    (
                        Step::Write,
                        Failure::File(FileError::OutputNotRegular { .. })
                    )
                ),
                "{swap}: {err:?}"
            );
            fs::remove_file(&path).unwrap();
        }
    }
}
