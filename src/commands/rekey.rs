//! `rekey`: new stanzas for the same file key, written in place when they fit the header
//! (published, read back and confirmed before the old slot is wiped, each write durable before
//! the next) or into a rewritten copy that is confirmed and then renamed over the file; the
//! body bytes never change. docs/FORMAT.md, "Rekey without re-encrypting".

use std::fs::{self, File};
use std::io::{BufReader, Write};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context, Result};
use paraes_core::container::{BodyAccess, HeaderWrite, InPlace, Opened, Rekey, UnverifiedHeader};
use paraes_core::positioned::ReadAt;

use crate::output::{Output, Reach};
use crate::plan::RekeyPlan;

/// `rekey`: new stanzas for the same file key; in place when they fit, else a rewritten file
/// renamed over the old one. A symbolic link is rekeyed at its target.
pub fn run(args: &RekeyPlan) -> Result<()> {
    let warn = crate::run::prepare::warner(args.quiet);
    let shown = args.file.display();
    // Through a link, the container rekeyed is the link's target, in place or rewritten
    // beside it; the link stays a link.
    let target = fs::canonicalize(&args.file)
        .with_context(|| format!("cannot open {shown} for rekeying"))?;
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&target)
        .with_context(|| format!("cannot open {shown} for rekeying"))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        bail!("{shown} is not a regular file");
    }
    lock(&file, &target, &meta).with_context(|| format!("cannot rekey {shown}"))?;
    let stale = crate::output::leftovers(&target);
    if !stale.is_empty() {
        warn(&crate::output::leftovers_warning(&stale));
    }
    let unverified =
        UnverifiedHeader::read(&mut BufReader::new(&file)).with_context(|| format!("{shown}"))?;
    let unlock = args.open.unlock(&warn)?;
    // The body check proves the opened file key is the body's before anything is written.
    let opened = unverified.open(&unlock, BodyAccess::File(&file))?;
    let recipients = args.new.recipients(&warn)?;
    let plan = opened.rekey(&recipients)?;
    match &plan {
        Rekey::InPlace(in_place) => {
            rekey_in_place(&file, &opened, &plan, in_place)
                .with_context(|| format!("rekeying {shown} failed"))?;
            if !args.quiet {
                eprintln!("paraes: rekeyed {shown} in place (body untouched)");
            }
        }
        Rekey::Rewrite {
            header,
            body_offset,
        } => {
            if meta.nlink() > 1 {
                bail!(
                    "{shown} has {} hard links and its new stanzas need a larger header: a rewritten copy would replace this name only and leave the other links with the old stanzas; remove the other links (find -samefile) or rekey a copy",
                    meta.nlink()
                );
            }
            let output = Output::create(Some(&target), true, true, Reach::ThisMachine, false)?;
            let copy = output.file().expect("a path gives a file output");
            keep_owner_and_mode(copy, &meta)
                .and_then(|()| Ok(write_copy(copy, header, &file, *body_offset, meta.len())?))
                .with_context(|| {
                    format!("writing the rekeyed copy of {shown} failed ({shown} is unchanged)")
                })?;
            opened
                .confirm_rekey(&plan, BodyAccess::File(copy))
                .with_context(|| {
                    format!("the rekeyed copy of {shown} did not read back ({shown} is unchanged)")
                })?;
            still_the_same_file(&target, &meta)?;
            // Durable, renamed over the target, and the directory synced.
            output
                .commit()
                .with_context(|| format!("replacing {shown} failed ({shown} is unchanged)"))?;
            if !args.quiet {
                eprintln!("paraes: rekeyed {shown} (the new stanzas needed a larger header: the body was copied unchanged)");
            }
        }
    }
    Ok(())
}

/// Publishes the new slot (each write durable), reads the header back and confirms it, and
/// only then wipes the old slot. If publishing or the check fails, the new slot's generation
/// is zeroed again, so the file is as it was: the old keys open it, and no unverified slot
/// is left for the next reader to refuse.
fn rekey_in_place(file: &File, opened: &Opened, plan: &Rekey, in_place: &InPlace) -> Result<()> {
    let durable = |write: &HeaderWrite| {
        file.write_all_at(&write.bytes, write.offset)
            .and_then(|()| file.sync_data())
    };
    let published = in_place
        .publish
        .iter()
        .try_for_each(durable)
        .context("writing the new stanzas failed")
        .and_then(|()| {
            opened
                .confirm_rekey(plan, BodyAccess::File(file))
                .context("the new stanzas did not read back as written")
        });
    if let Err(e) = published {
        // The first publish write zeroes the same 8 bytes: undo the generation.
        let undone = durable(&in_place.publish[0]);
        let state = match undone {
            Ok(()) => "the file is unchanged: the old keys open it",
            Err(_) => "the old keys still open it; rekey again to finish",
        };
        return Err(e.context(state.to_owned()));
    }
    durable(&in_place.wipe[0]).context(
        "wiping the old stanzas failed (the old and the new keys open the file; rekey again to finish)",
    )?;
    durable(&in_place.wipe[1]).context(
        "clearing the old stanzas' bytes failed (only the new keys open the file; rekey again to clear them)",
    )?;
    Ok(())
}

/// Takes an exclusive lock on the container for the whole rekey (released when `file` is
/// closed), so two rekeys of one file never interleave their writes; then checks that `path`
/// still names the locked file (a rekey by rewrite may have replaced it while we waited).
pub(crate) fn lock(file: &File, path: &Path, meta: &fs::Metadata) -> Result<()> {
    use rustix::fs::{flock, FlockOperation};
    flock(file, FlockOperation::NonBlockingLockExclusive).map_err(|e| match e {
        rustix::io::Errno::WOULDBLOCK => {
            anyhow::anyhow!(
                "another paraes is rekeying or upgrading it: wait for it to finish, then run this again"
            )
        }
        other => anyhow::Error::new(std::io::Error::from(other)).context("locking it failed"),
    })?;
    let now = fs::metadata(path).context("it disappeared")?;
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
        bail!(
            "it was replaced while this started (another rekey or upgrade rewrote it): run this again"
        );
    }
    Ok(())
}

/// Gives the copy that will replace a file the file's owner, group and mode. Where the owner
/// cannot be kept (not root, another user's file), the setuid and setgid bits are dropped
/// rather than given to a new owner.
pub(crate) fn keep_owner_and_mode(copy: &File, meta: &fs::Metadata) -> Result<()> {
    let mut mode = meta.permissions().mode() & 0o7777;
    let same_owner = (meta.uid(), meta.gid()) == (copy.metadata()?.uid(), copy.metadata()?.gid());
    if !same_owner && std::os::unix::fs::fchown(copy, Some(meta.uid()), Some(meta.gid())).is_err() {
        mode &= !0o6000;
    }
    copy.set_permissions(fs::Permissions::from_mode(mode))
        .context("setting the copy's mode failed")
}

/// Checks, just before a rewritten copy is renamed over `path`, that `path` still names the
/// file that was locked and read (one moved into its place meanwhile is not overwritten).
pub(crate) fn still_the_same_file(path: &Path, meta: &fs::Metadata) -> Result<()> {
    let now = fs::metadata(path).context("it disappeared")?;
    if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
        bail!("another file was moved to its name meanwhile: it was left as it is, and nothing was replaced");
    }
    Ok(())
}

/// Writes `header`, then the body of `old` (from `body_offset` to `old_len`), to `copy`.
fn write_copy(
    mut copy: &File,
    header: &[u8],
    old: &File,
    body_offset: u64,
    old_len: u64,
) -> std::io::Result<()> {
    copy.write_all(header)?;
    let mut body = ReadAt::new(old, body_offset, old_len.saturating_sub(body_offset));
    std::io::copy(&mut body, &mut copy)?;
    copy.flush()
}
