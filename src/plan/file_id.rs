//! Which file a path, a descriptor or a file's metadata names: its device and inode, so that
//! links and `/proc/self/fd` paths compare equal to the names they reach.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The identity of a file (through links), when it exists.
pub(super) fn file_id(meta: &fs::Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// The identity of the file at `path` (through links), if it exists.
pub(super) fn path_id(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| file_id(&m))
}

/// The identity of what descriptor `fd` of this process is open on, if it is open.
pub(super) fn fd_id(fd: u32) -> Option<(u64, u64)> {
    path_id(Path::new(&format!("/proc/self/fd/{fd}")))
}
