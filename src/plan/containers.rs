//! The option rules of the commands that work on existing containers: `verify` and `upgrade`
//! (`rekey`'s are in `rekey.rs`).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use paraes_core::{Direction, KeySize};

use super::keys::KeyPlan;
use super::many::say_skipped;
use super::{UpgradePlan, VerifyPlan};
use crate::cli::{UpgradeArgs, VerifyArgs};
use crate::files;
use crate::files::Skipped;

/// Builds the plan of `verify`.
pub(super) fn verify(args: &VerifyArgs) -> Result<VerifyPlan> {
    containers(
        "verify",
        &args.input,
        &args.list,
        KeyPlan::new(&args.keys).with_unlock(&args.unlock),
        args.quiet,
    )
}

/// Builds the plan of `upgrade`.
pub(super) fn upgrade(args: &UpgradeArgs) -> Result<UpgradePlan> {
    const C: &str = "upgrade";
    let keys = KeyPlan::new(&args.keys).with_unlock(&args.unlock);
    if keys.keys.is_empty() && keys.passphrase.is_none() && keys.identities.is_empty() {
        usage!(C, "upgrade must open each file: give one key that opens it (-k, --key, --key-fd, --key-env, -p, --passphrase-file or -i)");
    }
    let key_size = args.bits.unwrap_or(KeySize::Aes256);
    if key_size == KeySize::Aes192 {
        usage!(
            C,
            "a v3 body is Cobblestone-128 or Cobblestone-256: give --bits 128 or 256, not 192"
        );
    }
    Ok(UpgradePlan {
        containers: containers(C, &args.input, &args.list, keys, args.quiet)?,
        key_size,
    })
}

/// The containers a `verify` or `upgrade` runs over (files only, never standard input), and
/// how to open them.
pub(super) fn containers(
    command: &'static str,
    input: &[PathBuf],
    list: &crate::cli::FileListArgs,
    keys: KeyPlan,
    quiet: bool,
) -> Result<VerifyPlan> {
    let list_on_stdin = list.files_from.as_deref() == Some(Path::new("-"));
    if keys.stdin_readers() + usize::from(list_on_stdin) > 1 {
        usage!(command, "standard input can feed only one thing: give the key or passphrase another way (-k FILE, --key-fd N, --key-env VAR, --passphrase-file FILE)");
    }
    if input.iter().any(|p| p == Path::new("-")) {
        usage!(command, "{command} reads container files, not standard input: give the container's path (dec -o /dev/null checks a stream)");
    }
    let mut names = input.to_vec();
    if let Some(files_from) = &list.files_from {
        names.extend(files::read_list(files_from, list.null)?);
    }
    if names.is_empty() {
        usage!(
            command,
            "give the containers (FILE..., or --files-from LIST)"
        );
    }
    let mut skipped = Skipped::default();
    let mut found = Vec::new();
    files::gather(
        names,
        files::Naming::FileName,
        list.recursive,
        |p| p.as_os_str().as_bytes().ends_with(b".paraes"),
        &mut skipped,
        |f| found.push(f.path),
    );
    say_skipped(&skipped, Direction::Decrypt, quiet);
    if found.is_empty() && skipped.unlisted.is_empty() {
        bail!("no containers to check: the directories hold no .paraes files (an empty backup does not verify)");
    }
    // Opening a FIFO among many inputs would block the run (a stat does not open it).
    let many = found.len() > 1 || list.recursive || list.files_from.is_some();
    let mut unlisted = skipped.unlisted;
    let mut files = Vec::with_capacity(found.len());
    for path in found {
        let refused = many
            .then(|| fs::metadata(&path).ok())
            .flatten()
            .and_then(|meta| paraes_files::check_regular(&path, &meta).err())
            .map(|refused| crate::advice::error_line(&refused.into()));
        match refused {
            Some(why) => unlisted.push((path, why)),
            None => files.push(path),
        }
    }
    Ok(VerifyPlan {
        files,
        unlisted,
        keys,
        quiet,
    })
}
