//! What an interruption would leave behind right now: the outputs record it as they go, and a
//! front end that handles signals (the CLI) reads it to remove named temporaries and to say
//! what was left. A process that installs no handler loses nothing by the record.

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
    /// A named temporary file, to remove (kept in the list of them until [`named_done`]).
    Named(PathBuf),
}

static PENDING: Mutex<Pending> = Mutex::new(Pending::Nothing);

/// Every named temporary written now (several in a many-file run).
static NAMED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Records what an interruption would leave behind now.
pub fn set_pending(pending: Pending) {
    if let Pending::Named(path) = &pending {
        NAMED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.clone());
    }
    *PENDING.lock().unwrap_or_else(|e| e.into_inner()) = pending;
}

/// The named temporary `path` is gone (renamed into place or removed): a signal leaves it be.
pub fn named_done(path: &Path) {
    NAMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|p| p != path);
}

/// For a signal handler about to end the process: removes every named temporary and returns
/// what the job would have left behind (the record is emptied).
pub fn clean_up_for_exit() -> Pending {
    let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
    let named = std::mem::take(&mut *NAMED.lock().unwrap_or_else(|e| e.into_inner()));
    for path in &named {
        let _ = std::fs::remove_file(path);
    }
    pending
}
