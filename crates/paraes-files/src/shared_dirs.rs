//! Entries another user planted in a shared directory (sticky and writable by all, as `/tmp`):
//! the kernel's `fs.protected_symlinks` and `fs.protected_fifos` rules, applied where paraes
//! follows a link or opens an existing FIFO or device itself, beyond the kernel's reach.

use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::FileError;

/// The sticky bit and "writable by others" of a directory's mode.
const STICKY_AND_WRITABLE_BY_ALL: u32 = 0o1002;

/// Refuses `entry` (`meta`: its own metadata, not followed) when it lies in a directory that is
/// sticky and writable by all, and neither this process's user nor the directory's owner owns
/// it: anyone could have planted it there, pointing at (or reading from) whatever they like.
/// This is the rule the kernel applies, by default on every major distribution, when a link is
/// followed or an existing FIFO opened with `O_CREAT` (`cp f /tmp/x`, a shell's `>`); paraes
/// resolves `-o`'s links itself and opens FIFOs and devices without `O_CREAT`, so the kernel
/// does not apply it for paraes. `what` says what the entry is ("a symbolic link", "a FIFO").
pub fn refuse_if_planted(entry: &Path, meta: &Metadata, what: &str) -> Result<(), FileError> {
    let dir = match entry.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(dir_meta) = fs::metadata(&dir) else {
        return Ok(());
    };
    let shared = dir_meta.mode() & STICKY_AND_WRITABLE_BY_ALL == STICKY_AND_WRITABLE_BY_ALL;
    let owner = meta.uid();
    if shared && owner != rustix::process::geteuid().as_raw() && owner != dir_meta.uid() {
        return Err(FileError::Planted {
            path: entry.to_path_buf(),
            what: what.to_owned(),
            dir,
        });
    }
    Ok(())
}

/// Refuses every symbolic link that resolving `path` follows (in any of its components, and
/// in the paths the links point to, as `realpath` follows them) when it was planted in a shared
/// directory ([`refuse_if_planted`]). Links past the kernel's limit of 40 are left to the
/// resolution itself, which fails on them.
pub fn refuse_planted_links(path: &Path) -> Result<(), FileError> {
    refuse_planted_links_within(path, 40)
}

fn refuse_planted_links_within(path: &Path, hops_left: u32) -> Result<(), FileError> {
    let mut prefix = PathBuf::new();
    for component in path.components() {
        prefix.push(component);
        let Ok(meta) = fs::symlink_metadata(&prefix) else {
            return Ok(());
        };
        if !meta.file_type().is_symlink() || hops_left == 0 {
            continue;
        }
        refuse_if_planted(&prefix, &meta, "a symbolic link")?;
        let Ok(target) = fs::read_link(&prefix) else {
            return Ok(());
        };
        let from = prefix.parent().unwrap_or(Path::new(""));
        refuse_planted_links_within(&from.join(target), hops_left - 1)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// Links and FIFOs of this process's own user are never refused, in a shared directory or
    /// not; nor are entries of other users in a directory that is not shared. (An entry of
    /// another owner needs root to make: tests/cli/review_outputs.rs makes them.)
    #[test]
    fn own_entries_and_private_directories_pass() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        fs::write(dir.path().join("target"), b"x").unwrap();
        symlink(dir.path().join("target"), shared.join("link")).unwrap();
        symlink("link", shared.join("link2")).unwrap();
        refuse_planted_links(&shared.join("link2")).unwrap();
        let meta = fs::symlink_metadata(shared.join("link")).unwrap();
        refuse_if_planted(&shared.join("link"), &meta, "a symbolic link").unwrap();
    }
}
