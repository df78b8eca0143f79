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
/// directory ([`refuse_if_planted`]). Like the kernel, follows 40 links at most in all: more is
/// refused as a loop, so a chain of links cannot make the check's work grow past that.
pub fn refuse_planted_links(path: &Path) -> Result<(), FileError> {
    let mut links_left = MAX_LINKS;
    refuse_planted_links_within(path, &mut links_left)
}

/// The links one path's resolution may follow (Linux's `MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

fn refuse_planted_links_within(path: &Path, links_left: &mut u32) -> Result<(), FileError> {
    let mut prefix = PathBuf::new();
    for component in path.components() {
        prefix.push(component);
        let Ok(meta) = fs::symlink_metadata(&prefix) else {
            return Ok(());
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        if *links_left == 0 {
            return Err(FileError::io(
                format!("cannot resolve {}", path.display()),
                std::io::Error::from_raw_os_error(libc::ELOOP),
            ));
        }
        *links_left -= 1;
        refuse_if_planted(&prefix, &meta, "a symbolic link")?;
        let Ok(target) = fs::read_link(&prefix) else {
            return Ok(());
        };
        let from = prefix.parent().unwrap_or(Path::new(""));
        refuse_planted_links_within(&from.join(target), links_left)?;
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

    /// Links whose every component is a link to the one before (`l1 -> l0/l0/l0/...`) would
    /// have the check follow 8^n links: it follows 40 at most, so it ends at once; a plain
    /// chain longer than 40 is refused as a loop, as the kernel refuses it.
    #[test]
    fn a_chain_of_links_is_checked_in_bounded_work() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("d")).unwrap();
        symlink("d", dir.path().join("l0")).unwrap();
        symlink("d", dir.path().join("c0")).unwrap();
        for i in 1..30 {
            let previous = format!("l{}", i - 1);
            let target = [previous.as_str(); 8].join("/");
            symlink(target, dir.path().join(format!("l{i}"))).unwrap();
        }
        for i in 1..50 {
            symlink(format!("c{}", i - 1), dir.path().join(format!("c{i}"))).unwrap();
        }
        let started = std::time::Instant::now();
        let _ = refuse_planted_links(&dir.path().join("l29"));
        assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
        let err = refuse_planted_links(&dir.path().join("c49")).unwrap_err();
        assert!(err.to_string().contains("cannot resolve"), "{err}");
        refuse_planted_links(&dir.path().join("c39")).unwrap();
    }
}
