//! A write lease (Linux `F_SETLEASE`, `F_WRLCK`) on a file that paraes changes in place: the
//! kernel grants it only while no other process has the file open, and while paraes holds it
//! another process's `open` of the file (`cp other f`, `rsync --inplace`, `dd of=f`) waits
//! until paraes lets go, so nobody rewrites the file between paraes's read and its writes.
//! Where the kernel grants none (the file is open elsewhere, NFS, FUSE, another owner), the
//! caller says so and relies on its re-read of the file before it writes.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// A write lease held on a file; let go when dropped (and when the file is closed).
pub struct Lease<'a> {
    file: &'a File,
}

/// Why no lease was granted.
#[derive(Debug)]
pub struct NotGranted(pub io::Error);

impl std::fmt::Display for NotGranted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.raw_os_error() {
            Some(libc::EAGAIN) => f.write_str("another process has it open"),
            Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => {
                f.write_str("its file system grants no leases")
            }
            Some(libc::EACCES) | Some(libc::EPERM) => f.write_str("only its owner may take one"),
            _ => write!(f, "{}", self.0),
        }
    }
}

impl<'a> Lease<'a> {
    /// Takes a write lease on `file` (opened for reading and writing). SIGIO, which the kernel
    /// sends to a lease holder when another process wants the file, is ignored: that process
    /// waits until the lease is let go (or the kernel's lease-break-time, 45 s by default,
    /// runs out).
    pub fn take(file: &'a File) -> Result<Self, NotGranted> {
        // SAFETY: setting SIGIO's disposition to SIG_IGN installs no handler, so no code runs
        // in signal context; nothing else in paraes uses SIGIO.
        unsafe { libc::signal(libc::SIGIO, libc::SIG_IGN) };
        // SAFETY: fcntl with F_SETLEASE takes an int argument and touches no memory of ours;
        // the descriptor is open for as long as `file` is borrowed.
        let done = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) };
        if done == -1 {
            return Err(NotGranted(io::Error::last_os_error()));
        }
        Ok(Lease { file })
    }

    /// Whether another process has asked for the file since the lease was taken (it is
    /// waiting in `open`, and the kernel will break the lease after its lease-break-time).
    /// Rekey itself does not need to ask: it re-reads the header before each write.
    #[cfg(test)]
    pub fn wanted(&self) -> bool {
        // SAFETY: F_GETLEASE takes no argument and touches no memory of ours.
        let now = unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_GETLEASE) };
        now != libc::F_WRLCK
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `take`: an int argument, no memory of ours.
        unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scratch() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"contents").unwrap();
        (dir, path)
    }

    fn open_rw(path: &std::path::Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap()
    }

    #[test]
    fn a_lease_is_refused_while_another_descriptor_has_the_file_open_for_writing() {
        let (_dir, path) = scratch();
        let file = open_rw(&path);
        let other = open_rw(&path);
        let refused = Lease::take(&file)
            .err()
            .expect("a lease despite another open");
        assert_eq!(refused.0.raw_os_error(), Some(libc::EAGAIN), "{refused}");
        assert_eq!(refused.to_string(), "another process has it open");
        drop(other);
    }

    #[test]
    fn while_the_lease_is_held_another_process_cannot_open_the_file_to_write() {
        let (_dir, path) = scratch();
        let file = open_rw(&path);
        let Ok(lease) = Lease::take(&file) else {
            // Every file system this test runs on (tmpfs, ext4, xfs, overlayfs) grants one.
            panic!(
                "no lease granted on {}: this test cannot run here",
                path.display()
            );
        };
        assert!(!lease.wanted());
        let mut writer = std::process::Command::new("sh")
            .arg("-c")
            .arg("printf overwritten > \"$0\"")
            .arg(&path)
            .spawn()
            .unwrap();
        // The writer blocks in open(); the kernel marks the lease as wanted.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !lease.wanted() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(lease.wanted(), "nobody asked for the file");
        assert!(
            writer.try_wait().unwrap().is_none(),
            "the writer did not wait"
        );
        // Read through the leased descriptor: opening the path here would itself wait on the
        // lease (any open breaks a write lease) until the kernel's lease-break-time.
        let mut now = [0u8; 8];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut now, 0).unwrap();
        assert_eq!(&now, b"contents");
        drop(lease);
        assert!(writer.wait().unwrap().success());
        assert_eq!(std::fs::read(&path).unwrap(), b"overwritten");
    }
}
