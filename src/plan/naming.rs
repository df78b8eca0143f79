//! Output names and file identity: the default name of an output, and the rule that no output
//! is a file the same command reads (inputs, key files), through links and `/dev/fd`.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use paraes_core::Direction;
use paraes_files::{fd_id, path_id, FileError, FilesRead};

use super::keys::KeyPlan;
use super::OutputTarget;

/// `-o`, or a name derived from the input's.
pub(super) fn output_target(
    direction: Direction,
    input: Option<&Path>,
    output: Option<&Path>,
    force: bool,
) -> Result<OutputTarget> {
    if let Some(out) = output {
        // `-o -`, or a name of standard output itself (`-o /dev/stdout`).
        let is_stdout = out == Path::new("-")
            || (path_id(out).is_some() && path_id(out) == fd_id(1) && is_fd_path(out));
        return Ok(if is_stdout {
            OutputTarget::Stdout
        } else {
            OutputTarget::Path {
                path: through_links(out)?,
                force,
                derived: false,
            }
        });
    }
    let Some(input) = input else {
        return Ok(OutputTarget::Stdout);
    };
    Ok(OutputTarget::Path {
        path: default_name(direction, input, NamingFix::GiveOutput)?,
        force,
        derived: true,
    })
}

/// What a user whose input cannot name its output can do instead: a one-file run takes `-o`; a
/// many-file run refuses `-o`, so that input has to run on its own.
#[derive(Clone, Copy)]
pub(super) enum NamingFix {
    GiveOutput,
    RunAlone,
}

impl NamingFix {
    pub(super) fn advice(self) -> &'static str {
        match self {
            NamingFix::GiveOutput => "give -o PATH (or -o - for standard output)",
            NamingFix::RunAlone => {
                "run it on its own with -o PATH (a run of several files, or one with --output-dir, names each output after its input)"
            }
        }
    }
}

/// The output named after `input`: `+ .paraes` for enc, `- .paraes` for dec; when there is
/// none, the error says `fix`.
pub(super) fn default_name(direction: Direction, input: &Path, fix: NamingFix) -> Result<PathBuf> {
    // `enc /dev/zero` must not create /dev/zero.paraes (and fill /dev with it).
    if fs::metadata(input)
        .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_block_device())
    {
        bail!(
            "cannot name the output after {}, a device: {}",
            input.display(),
            fix.advice()
        );
    }
    Ok(match direction {
        Direction::Encrypt => {
            let mut name = input.as_os_str().to_owned();
            name.push(".paraes");
            PathBuf::from(name)
        }
        // On bytes, so that names that are not UTF-8 work too.
        Direction::Decrypt => match input.as_os_str().as_bytes().strip_suffix(b".paraes") {
            Some(stem) if !stem.is_empty() && !stem.ends_with(b"/") => {
                PathBuf::from(OsStr::from_bytes(stem))
            }
            Some(_) => bail!(
                "cannot name the output: {} without .paraes leaves no file name; {}",
                input.display(),
                fix.advice()
            ),
            None => bail!(
                "cannot name the output: {} does not end in .paraes; {}",
                input.display(),
                fix.advice()
            ),
        },
    })
}

/// Whether `path` names an open descriptor (`/dev/stdout`, `/dev/fd/N`, `/proc/.../fd/N`)
/// rather than a file that merely is the same one.
pub(super) fn is_fd_path(path: &Path) -> bool {
    let text = path.as_os_str().as_bytes();
    text.starts_with(b"/dev/std") || text.starts_with(b"/dev/fd/") || text.starts_with(b"/proc/")
}

/// An output path with its symbolic links resolved, so that the file is written where the link
/// points (as `cp` and `tee` do) and the link itself is never replaced: `-o /dev/stdout`
/// writes to whatever standard output is. A link that another user planted in a shared
/// directory (`/tmp`) is refused, as the kernel refuses `cp` to follow it. A name must be a
/// file name (not `dir/`).
pub(super) fn through_links(path: &Path) -> Result<PathBuf> {
    output_through_links("-o", path)
}

/// [`through_links`] for the path given to option `flag` (`-o`, `bench --json`).
pub fn output_through_links(flag: &str, path: &Path) -> Result<PathBuf> {
    if path.as_os_str().as_bytes().ends_with(b"/") || path.file_name().is_none() {
        bail!(
            "{flag} {} names a directory, not a file: give a file name",
            path.display()
        );
    }
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(path.to_path_buf());
    };
    if !meta.file_type().is_symlink() {
        return Ok(path.to_path_buf());
    }
    // paraes follows these links itself, where the kernel's rule for links in shared
    // directories does not reach: they are checked as they are resolved.
    match paraes_files::shared_dirs::resolve_links(path) {
        Ok(target) => Ok(target),
        Err(planted @ FileError::Planted { .. }) => Err(planted.into()),
        // A link to a pipe or terminal (/dev/stdout on a pipe): written in place, as a stream.
        Err(_) if fs::metadata(path).is_ok() => Ok(path.to_path_buf()),
        Err(_) => bail!(
            "{flag} {} is a symbolic link to nothing: give the path it should point to",
            path.display()
        ),
    }
}

/// Refuses an output that is a file this command reads: the input, a key, passphrase,
/// identity or recipients file (compared by device and inode, so links count too), or
/// standard output redirected onto one of them (`paraes enc f -o - >> f`).
pub(super) fn check_not_read(
    output: &OutputTarget,
    input: Option<&Path>,
    keys: &KeyPlan,
) -> Result<()> {
    let mut read = FilesRead::new();
    match input {
        Some(path) => read.path("the input", path),
        // Data from standard input: `paraes enc < f >> f` would read what it writes.
        None => read.id("the input (standard input)", fd_id(0)),
    }
    for (what, path) in keys.paths() {
        read.path(format!("{what} {}", path.display()), path);
    }
    for (what, fd) in keys.descriptors() {
        read.id(what, fd_id(fd));
    }
    match output {
        OutputTarget::Path { path, .. } => read.refuse_as_output_path(path)?,
        OutputTarget::Stdout => read.refuse_as_output(
            "standard output",
            fs::metadata("/proc/self/fd/1").ok().as_ref(),
        )?,
    }
    Ok(())
}
