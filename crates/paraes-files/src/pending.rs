//! What an interruption would leave behind right now: the outputs record it as they go, and a
//! front end that handles signals (the CLI) reads it to remove named temporaries and to say
//! what was left. A process that installs no handler loses nothing by the record.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tempfile::NamedTempFile;

/// What an interrupted job leaves behind.
#[derive(Debug, Default)]
pub enum Pending {
    /// No output is being written.
    #[default]
    Nothing,
    /// Standard output, a FIFO or a device: what went out cannot be taken back.
    Stream,
    /// An unnamed temporary file: it vanishes with the process.
    Anonymous,
    /// A named temporary file, to remove (listed by [`make_named`] until [`named_done`]).
    Named(PathBuf),
}

static PENDING: Mutex<Pending> = Mutex::new(Pending::Nothing);

/// Every named temporary that exists now (several in a many-file run), and whether a signal's
/// clean-up has begun, after which none is made.
static NAMED: Mutex<Named> = Mutex::new(Named {
    paths: Vec::new(),
    closed: false,
});

struct Named {
    paths: Vec<PathBuf>,
    closed: bool,
}

fn named() -> std::sync::MutexGuard<'static, Named> {
    NAMED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records what an interruption would leave behind now (a named temporary is listed for
/// removal by [`make_named`], which made it).
pub fn set_pending(pending: Pending) {
    *PENDING.lock().unwrap_or_else(|e| e.into_inner()) = pending;
}

/// Makes a named temporary by `make` and lists its path (`path_of` what was made) for a
/// signal to remove, both while the list is held: so no signal's clean-up falls between the
/// file's making and its listing. Once a clean-up has begun (the process is about to exit),
/// makes nothing and fails.
pub fn make_named<T>(
    make: impl FnOnce() -> io::Result<T>,
    path_of: impl FnOnce(&T) -> PathBuf,
) -> io::Result<T> {
    let mut named = named();
    if named.closed {
        return Err(io::Error::other("interrupted: paraes is ending"));
    }
    let made = make()?;
    named.paths.push(path_of(&made));
    Ok(made)
}

/// A named temporary file listed for a signal to remove ([`make_named`]), taken off the list
/// however it ends: renamed into place ([`ListedTemp::persist`]) or removed when dropped.
pub struct ListedTemp(Option<NamedTempFile>);

impl ListedTemp {
    /// Makes a named temporary by `make` and lists it ([`make_named`]).
    pub fn make(make: impl FnOnce() -> io::Result<NamedTempFile>) -> io::Result<Self> {
        make_named(make, |named| named.path().to_path_buf()).map(|named| ListedTemp(Some(named)))
    }

    fn named(&self) -> &NamedTempFile {
        self.0
            .as_ref()
            .expect("a listed temporary until persisted or dropped")
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.named().path()
    }

    /// The open file.
    pub fn as_file(&self) -> &File {
        self.named().as_file()
    }

    /// The open file, to write.
    pub fn as_file_mut(&mut self) -> &mut File {
        self.0
            .as_mut()
            .expect("a listed temporary until persisted or dropped")
            .as_file_mut()
    }

    /// Renames it to `dest` (over an existing file only where `replace`) and takes it off the
    /// list; on an error it is removed.
    pub fn persist(mut self, dest: &Path, replace: bool) -> io::Result<()> {
        let named = self.0.take().expect("persisted once");
        let path = named.path().to_path_buf();
        let persisted = match replace {
            true => named.persist(dest),
            false => named.persist_noclobber(dest),
        };
        // On an error the returned temporary is dropped here, which removes it.
        let persisted = persisted.map(drop).map_err(|e| e.error);
        named_done(&path);
        persisted
    }
}

impl Drop for ListedTemp {
    fn drop(&mut self) {
        if let Some(named) = self.0.take() {
            let path = named.path().to_path_buf();
            // Removed first, then unlisted: a signal in between finds nothing to remove.
            drop(named);
            named_done(&path);
        }
    }
}

/// The named temporary `path` is gone (renamed into place or removed): a signal leaves it be.
pub fn named_done(path: &Path) {
    named().paths.retain(|p| p != path);
}

/// For a signal handler about to end the process: removes every named temporary, lets no
/// more be made, and returns what the job would have left behind (the record is emptied).
pub fn clean_up_for_exit() -> Pending {
    let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
    let mut named = named();
    named.closed = true;
    for path in named.paths.drain(..) {
        let _ = std::fs::remove_file(path);
    }
    pending
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Output, OutputOptions, Reach};

    /// An output at `dest` written to a named temporary (the fallback MPI ranks on other
    /// machines need).
    fn named_output(dest: &Path) -> Output {
        let options = OutputOptions {
            reach: Reach::OtherMachines,
            ..OutputOptions::default()
        };
        Output::create(Some(dest), &options).unwrap()
    }

    fn listed(path: &Path) -> bool {
        named().paths.iter().any(|p| p == path)
    }

    /// A named temporary that is dropped unwritten (the job failed) is removed, and taken off
    /// the list a signal's clean-up removes: before, its path stayed listed for the rest of the
    /// run (one entry per failed file of a many-file run), and a signal then removed whatever
    /// had come to have that name since.
    #[test]
    fn a_dropped_named_temporary_leaves_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let mut output = named_output(&dir.path().join("out"));
        output.writer().write_all(b"never committed").unwrap();
        let temp = output.shared_path().expect("a named temporary");
        assert!(temp.exists() && listed(&temp));
        drop(output);
        assert!(!temp.exists(), "removed on drop");
        assert!(!listed(&temp), "{} is still listed", temp.display());
    }

    /// A committed one is off the list too.
    #[test]
    fn a_committed_named_temporary_leaves_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let output = named_output(&dir.path().join("out"));
        let temp = output.shared_path().expect("a named temporary");
        output.commit().unwrap();
        assert!(!listed(&temp) && dir.path().join("out").exists());
    }
}
