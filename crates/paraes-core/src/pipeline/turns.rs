//! Writers of one file that take turns ([`Turn`]): where several processes on one machine write
//! the same file at their own offsets (MPI ranks on one node, direct I/O), the kernel lets one
//! write into the file at a time (tmpfs and local file systems hold the inode's lock for the
//! whole write), and a writer that finds it held spins on its core until it is free: a core
//! each waiting rank needed for its own AES (measured in docs/RESULTS.md, issue 40). A turn is a
//! lock a waiting writer sleeps on instead: a mutex among this process's workers, then an
//! exclusive `flock(2)` on the file among the processes, each of which opened the file itself.

use std::fs::File;
use std::sync::{Mutex, MutexGuard};

/// One writer's turn at a file, held until dropped.
pub(super) struct Turn<'a> {
    /// The file locked among processes; `None` where the file system takes no locks (the turn
    /// is then only among this process's writers: the locks order writes, they never guard
    /// the bytes).
    file: Option<&'a File>,
    /// Released after the file's lock (fields drop after [`Drop::drop`]).
    _among_workers: Option<MutexGuard<'a, ()>>,
}

impl<'a> Turn<'a> {
    /// Waits, asleep, for this process's other writers (`workers`, where there are any) and
    /// then for other processes' writers of `file`.
    pub(super) fn take(workers: Option<&'a Mutex<()>>, file: &'a File) -> Self {
        let among_workers = workers.map(|turns| turns.lock().unwrap_or_else(|e| e.into_inner()));
        Turn {
            file: file.lock().is_ok().then_some(file),
            _among_workers: among_workers,
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.file {
            // Closing the file releases the lock too; a failure here leaves it to that.
            let _ = file.unlock();
        }
    }
}
