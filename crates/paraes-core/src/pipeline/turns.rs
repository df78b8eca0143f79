//! Writers of one file that take turns ([`Turn`]): where several processes on one machine write
//! the same file at their own offsets (MPI ranks on one node, direct I/O), the kernel lets one
//! write into the file at a time (tmpfs and local file systems hold the inode's lock for the
//! whole write), and a writer that finds it held spins on its core until it is free: a core
//! each waiting rank needed for its own AES (measured in docs/RESULTS.md, issue 40). A turn is a
//! lock a waiting writer sleeps on instead: an exclusive `flock(2)` on the file among the
//! processes, each of which opened the file itself. Within one process the workers never wait
//! for each other's writes: one writes for all ([`super::combined`]).

use std::fs::File;

/// One writer's turn at a file among processes, held until dropped.
pub(super) struct Turn<'a> {
    /// The file locked among processes; `None` where the file system takes no locks (the
    /// processes' writes then go side by side: the locks order writes, they never guard the
    /// bytes).
    file: Option<&'a File>,
}

impl<'a> Turn<'a> {
    /// Waits, asleep, for other processes' writers of `file`.
    pub(super) fn take(file: &'a File) -> Self {
        Turn {
            file: file.lock().is_ok().then_some(file),
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
