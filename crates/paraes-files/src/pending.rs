//! What an interruption would leave behind right now: the outputs record it as they go, and a
//! front end that handles signals (the CLI) reads it to remove named temporaries and to say
//! what was left. A process that installs no handler loses nothing by the record.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
