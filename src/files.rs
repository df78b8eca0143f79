//! The inputs of a many-file run: names from the command line and from a `--files-from` list
//! (newline- or NUL-separated, any bytes), and with `--recursive` the regular files below
//! directory inputs (in name order; symbolic links inside them are not followed; FIFOs,
//! sockets and devices are skipped). Each input keeps the name its output takes below an
//! `--output-dir`: a command-line input its file name, a listed one its whole relative path.

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

/// One input found, and the relative name of its output below an `--output-dir` (before the
/// `.paraes` suffix is added or removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The input's path.
    pub path: PathBuf,
    /// Its name below an output directory: the file's own name, or for a file found inside a
    /// directory input, the directory's name and the path below it (as `cp -r` does).
    pub relative: PathBuf,
}

/// What the walk left out, said once at the end of planning.
#[derive(Debug, Default)]
pub struct Skipped {
    /// Symbolic links inside directories.
    pub links: usize,
    /// FIFOs, sockets and devices inside directories.
    pub special: usize,
    /// Files whose names say they are the wrong kind (`.paraes` for enc, not `.paraes` for dec).
    pub wrong_suffix: usize,
    /// Directories that could not be listed, and why: failures of the run, which goes on.
    pub unlisted: Vec<(PathBuf, String)>,
}

/// The most a `--files-from` list may hold: a list from `/dev/zero` or an endless pipe fails
/// here instead of filling memory (64 MiB is about a million names).
pub const MAX_LIST_BYTES: u64 = 64 << 20;

/// Reads a `--files-from` list: names separated by newlines, or by NUL with `null`; empty
/// names are ignored. `-` is standard input. A list over [`MAX_LIST_BYTES`] is refused.
pub fn read_list(list: &Path, null: bool) -> Result<Vec<PathBuf>> {
    let mut bytes = Vec::new();
    // One byte past the limit tells a list of exactly the limit from a longer one.
    let mut read = |from: &mut dyn Read| from.take(MAX_LIST_BYTES + 1).read_to_end(&mut bytes);
    if list == Path::new("-") {
        read(&mut std::io::stdin().lock())
            .context("reading the file list from standard input failed")?;
    } else {
        fs::File::open(list)
            .and_then(|mut f| read(&mut f))
            .with_context(|| format!("cannot read the file list {}", list.display()))?;
    }
    if bytes.len() as u64 > MAX_LIST_BYTES {
        bail!(
            "--files-from {}: more than {} MiB of names: split the list",
            list.display(),
            MAX_LIST_BYTES >> 20
        );
    }
    let separator = if null { b'\0' } else { b'\n' };
    Ok(bytes
        .split(|&b| b == separator)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(OsStr::from_bytes(name)))
        .collect())
}

/// How an input named by the user is named below an `--output-dir`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// By its own file name (a command-line input, as `cp a/x b/y DIR` does).
    FileName,
    /// By its whole path, without a leading `/` or `./` (a `--files-from` name, as `rsync
    /// --files-from` and `tar -T` keep it): `data/x/c.txt` stays `data/x/c.txt`. A `..` is
    /// kept, for the plan to refuse.
    WholePath,
}

impl Naming {
    /// The name below an output directory of the input `path`.
    fn relative(self, path: &Path) -> PathBuf {
        match self {
            Naming::FileName => PathBuf::from(path.file_name().unwrap_or(path.as_os_str())),
            Naming::WholePath => path
                .components()
                .filter(|c| matches!(c, Component::Normal(_) | Component::ParentDir))
                .collect(),
        }
    }
}

/// The inputs of `names`, with the files below directories when `recursive` (a directory
/// without it stays an input, and fails as one), each named below an output directory as
/// `naming` says (a directory's files below the directory's name), handed to `each` in order
/// as they are found (none are held here: a run of a million files keeps only what `each`
/// keeps). `wanted` says whether a file found inside a directory is taken, by its name (enc
/// skips `.paraes` files, dec takes only them).
pub fn gather(
    names: Vec<PathBuf>,
    naming: Naming,
    recursive: bool,
    wanted: impl Fn(&Path) -> bool,
    skipped: &mut Skipped,
    mut each: impl FnMut(Found),
) {
    for path in names {
        let relative = naming.relative(&path);
        if recursive && path.is_dir() {
            // `data/..` has no file name: its files go directly below the output directory.
            let top = match (naming, path.file_name()) {
                (Naming::FileName, None) => PathBuf::new(),
                _ => relative,
            };
            walk(&path, &top, &wanted, skipped, &mut each);
        } else {
            each(Found { path, relative });
        }
    }
}

/// Hands the files below `dir` (whose output name is `relative`) to `each`, in name order; a
/// directory that cannot be listed goes to `skipped.unlisted` and the walk goes on. A
/// directory's entries are held by name and kind only while it is walked.
fn walk(
    dir: &Path,
    relative: &Path,
    wanted: &impl Fn(&Path) -> bool,
    skipped: &mut Skipped,
    each: &mut impl FnMut(Found),
) {
    let listed = fs::read_dir(dir).and_then(|entries| {
        entries
            .map(|entry| {
                let entry = entry?;
                Ok((entry.file_name(), entry.file_type()?))
            })
            .collect::<std::io::Result<Vec<_>>>()
    });
    let mut entries = match listed {
        Ok(entries) => entries,
        Err(e) => {
            skipped.unlisted.push((
                dir.to_path_buf(),
                format!("cannot list this directory: {e}"),
            ));
            return;
        }
    };
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (file_name, kind) in entries {
        if kind.is_symlink() {
            skipped.links += 1;
        } else if kind.is_dir() {
            walk(
                &dir.join(&file_name),
                &relative.join(&file_name),
                wanted,
                skipped,
                each,
            );
        } else if !kind.is_file() {
            skipped.special += 1;
        } else {
            let path = dir.join(&file_name);
            if !wanted(&path) {
                skipped.wrong_suffix += 1;
            } else {
                each(Found {
                    path,
                    relative: relative.join(file_name),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_takes_regular_files_in_name_order_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("top");
        fs::create_dir_all(top.join("b/c")).unwrap();
        fs::write(top.join("z"), b"z").unwrap();
        fs::write(top.join("b/c/y"), b"y").unwrap();
        fs::write(top.join("a.paraes"), b"a").unwrap();
        std::os::unix::fs::symlink(top.join("z"), top.join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            top.join("fifo").as_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let mut skipped = Skipped::default();
        let mut found = Vec::new();
        gather(
            vec![top.clone()],
            Naming::FileName,
            true,
            |p| !p.as_os_str().as_bytes().ends_with(b".paraes"),
            &mut skipped,
            |f| found.push(f),
        );
        let names: Vec<_> = found.iter().map(|f| f.relative.clone()).collect();
        assert_eq!(names, [PathBuf::from("top/b/c/y"), PathBuf::from("top/z")]);
        assert_eq!(found[1].path, top.join("z"));
        assert_eq!(
            (skipped.links, skipped.special, skipped.wrong_suffix),
            (1, 1, 1)
        );
    }

    #[test]
    fn lists_split_on_newline_or_nul_and_keep_any_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("list");
        fs::write(&list, b"a b\n\nc\xff\n").unwrap();
        assert_eq!(
            read_list(&list, false).unwrap(),
            [
                PathBuf::from("a b"),
                PathBuf::from(OsStr::from_bytes(b"c\xff"))
            ]
        );
        fs::write(&list, b"new\nline\0x\0").unwrap();
        assert_eq!(
            read_list(&list, true).unwrap(),
            [PathBuf::from("new\nline"), PathBuf::from("x")]
        );
    }
}
