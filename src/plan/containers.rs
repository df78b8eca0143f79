//! The option rules of the commands that work on existing containers: `verify`, `upgrade`
//! and `rekey`.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use paraes_core::{Direction, KeySize};

use super::keys::{KeyPlan, KeySource, PassphraseSource};
use super::many::say_skipped;
use super::{RekeyPlan, UpgradePlan, VerifyPlan};
use crate::cli::{RekeyArgs, UpgradeArgs, VerifyArgs};
use crate::files;
use crate::files::{Found, Skipped};
use paraes_files::path_id;

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
    let found = files::gather(
        names,
        files::Naming::FileName,
        list.recursive,
        |p| p.as_os_str().as_bytes().ends_with(b".paraes"),
        &mut skipped,
    );
    say_skipped(&skipped, Direction::Decrypt, quiet);
    if found.is_empty() && skipped.unlisted.is_empty() {
        bail!("no containers to check: the directories hold no .paraes files (an empty backup does not verify)");
    }
    // Opening a FIFO among many inputs would block the run (a stat does not open it).
    let many = found.len() > 1 || list.recursive || list.files_from.is_some();
    let mut unlisted = skipped.unlisted;
    let mut files = Vec::with_capacity(found.len());
    for Found { path, .. } in found {
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

/// Builds the plan of `rekey`.
pub(super) fn rekey(args: &RekeyArgs) -> Result<RekeyPlan> {
    const C: &str = "rekey";
    let open = KeyPlan::new(&args.keys).with_unlock(&args.unlock);
    if open.keys.is_empty() && open.passphrase.is_none() && open.identities.is_empty() {
        usage!(C, "rekey must open the file first: give its current key (-k, --key, --key-fd, --key-env, -p, --passphrase-file or -i)");
    }

    let new = KeyPlan {
        keys: args
            .new_key_file
            .iter()
            .map(|p| KeySource::from_path(p))
            .collect(),
        passphrase: args
            .new_passphrase_file
            .as_deref()
            .map(PassphraseSource::from_path),
        recipients: args.new_recipient.clone(),
        recipients_files: args.new_recipients_file.clone(),
        ..KeyPlan::default()
    };
    if open.stdin_readers() + new.stdin_readers() > 1 {
        usage!(C, "standard input can feed only one key or passphrase");
    }
    let container = path_id(&args.file);
    for (_, path) in open.paths().into_iter().chain(new.paths()) {
        if container.is_some() && path_id(path) == container {
            bail!(
                "{} is the container being rekeyed, not a key: give its keys in other files",
                path.display()
            );
        }
    }
    Ok(RekeyPlan {
        file: args.file.clone(),
        open,
        new,
        rewrite: args.rewrite,
        quiet: args.quiet,
        verbose: args.verbose,
    })
}
