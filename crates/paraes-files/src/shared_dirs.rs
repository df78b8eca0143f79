//! Entries another user planted in a shared directory (sticky and writable by all, as `/tmp`):
//! the kernel's `fs.protected_symlinks` and `fs.protected_fifos` rules, applied where paraes
//! follows a link or opens an existing FIFO or device itself, beyond the kernel's reach.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

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
    // Its directory (as output.rs's `directory_of`, which depends on this module).
    let dir = entry
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = dir.to_path_buf();
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

/// `path` with every symbolic link resolved, as `realpath(3)` resolves it (an absolute path
/// with no link, `.` or `..` in it, of something that exists), refusing each link it follows
/// that was planted in a shared directory ([`refuse_if_planted`]). One pass: each component is
/// looked at once, below a prefix already free of links, and each link's target is put in
/// front of what is left, so the work grows with the path and its links, and the links are
/// checked on the very path that is returned. Like the kernel, it follows 40 links at most.
pub fn resolve_links(path: &Path) -> Result<PathBuf, FileError> {
    let failed = |e: std::io::Error| FileError::io(format!("cannot resolve {}", path.display()), e);
    let mut resolved = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().map_err(failed)?
    };
    let mut left: VecDeque<OsString> = names(path);
    let mut links = 0;
    while let Some(name) = left.pop_front() {
        if name == "/" {
            resolved = PathBuf::from("/");
            continue;
        }
        if name == ".." {
            resolved.pop();
            continue;
        }
        let next = resolved.join(&name);
        let meta = fs::symlink_metadata(&next).map_err(failed)?;
        if !meta.file_type().is_symlink() {
            resolved = next;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(failed(std::io::Error::from_raw_os_error(libc::ELOOP)));
        }
        refuse_if_planted(&next, &meta, "a symbolic link")?;
        let target = fs::read_link(&next).map_err(failed)?;
        for name in names(&target).into_iter().rev() {
            left.push_front(name);
        }
    }
    Ok(resolved)
}

/// The links one path's resolution may follow (Linux's `MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

/// The names of `path` in order, `/` for its root, `.` left out.
fn names(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir => Some(OsString::from("/")),
            Component::ParentDir => Some(OsString::from("..")),
            Component::Normal(name) => Some(name.to_owned()),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
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
        assert_eq!(
            resolve_links(&shared.join("link2")).unwrap(),
            fs::canonicalize(dir.path().join("target")).unwrap()
        );
        let meta = fs::symlink_metadata(shared.join("link")).unwrap();
        refuse_if_planted(&shared.join("link"), &meta, "a symbolic link").unwrap();
    }

    /// Paths through many links resolve in work that grows with them (`d -> .` 30 times, which
    /// a check that walked every earlier link again took hours for), to what `canonicalize`
    /// says; a chain longer than the kernel's 40 is refused as a loop, as the kernel refuses it.
    #[test]
    fn resolution_follows_links_once_each_and_at_most_40() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        symlink(".", root.join("d")).unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("sub/f"), b"x").unwrap();
        symlink("sub/../sub/f", root.join("f")).unwrap();
        let through = root.join(format!("{}f", "d/".repeat(30)));
        let started = std::time::Instant::now();
        assert_eq!(resolve_links(&through).unwrap(), root.join("sub/f"));
        assert!(
            started.elapsed().as_secs() < 2,
            "took {:?}",
            started.elapsed()
        );
        symlink("d", root.join("c0")).unwrap();
        for i in 1..50 {
            symlink(format!("c{}", i - 1), root.join(format!("c{i}"))).unwrap();
        }
        let err = resolve_links(&root.join("c49")).unwrap_err();
        assert!(err.to_string().contains("cannot resolve"), "{err}");
        assert_eq!(resolve_links(&root.join("c38")).unwrap(), root);
        for path in [
            root.join("c30/sub/../f"),
            root.join("d/./sub/f"),
            PathBuf::from("/"),
        ] {
            assert_eq!(
                resolve_links(&path).unwrap(),
                fs::canonicalize(&path).unwrap(),
                "{}",
                path.display()
            );
        }
    }
}
