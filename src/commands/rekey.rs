//! `rekey`: new stanzas for the same file key, written in place when they fit the header
//! (published, read back and confirmed before the old slot is wiped, each write durable before
//! the next) or into a rewritten copy that is confirmed and then renamed over the file; the
//! body bytes never change. Everything slow (reading the new keys, prompts, Argon2id, key
//! agreement) happens before the file is opened; the file is guarded by a lock, a write lease
//! where the kernel grants one, and a re-read of its header right before the first write.
//! docs/FORMAT.md, "Rekey without re-encrypting"; docs/RELIABILITY.md.

use std::fs::{self, File};
use std::io::{BufReader, Write};
use std::os::unix::fs::{FileExt, MetadataExt};

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::container::{
    BodyAccess, HeaderWrite, InPlace, NewStanzas, Opened, Rekey, RekeyWay, UnverifiedHeader,
};
use paraes_core::positioned::ReadAt;

use crate::commands::guard::{self, Snapshot};
use crate::lease::Lease;
use crate::output::{Output, Reach};
use crate::plan::RekeyPlan;

/// `rekey`: new stanzas for the same file key; in place when they fit, else a rewritten file
/// renamed over the old one. A symbolic link is rekeyed at its target.
pub fn run(args: &RekeyPlan) -> Result<()> {
    let warn = crate::run::prepare::warner(args.quiet);
    let shown = args.file.display();
    // Every key source is read and every new stanza's costly part done before the file is
    // opened (a prompt or a FIFO may take any time): from the read of the header to the
    // writes, nothing waits on the user.
    let unlock = args.open.unlock(&warn)?;
    let new = NewStanzas::prepare(&args.new.recipients(&warn)?)?;
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
    guard::lock(&file, &target, &meta).with_context(|| format!("cannot rekey {shown}"))?;
    let lease = match Lease::take(&file) {
        Ok(lease) => {
            if args.verbose {
                eprintln!("paraes: {shown}: write lease held: other programs' opens of it wait until the rekey is done");
            }
            Some(lease)
        }
        Err(why) => {
            if args.verbose {
                eprintln!("paraes: {shown}: no write lease ({why}): paraes re-reads its header right before writing, but a program that ignores locks could still write to it meanwhile (--rewrite never writes to it)");
            }
            None
        }
    };
    let snapshot = Snapshot::of(&meta);
    let stale = crate::output::leftovers(&target);
    if !stale.is_empty() {
        warn(&crate::output::leftovers_warning(&stale));
    }
    let unverified =
        UnverifiedHeader::read(&mut BufReader::new(&file)).with_context(|| format!("{shown}"))?;
    // The body check proves the opened file key is the body's before anything is written.
    let opened = unverified.open(&unlock, BodyAccess::File(&file))?;
    if let Some(ignored) = opened.ignored_slot() {
        warn(&format!("{shown}: {}", ignored.warning()));
    }
    let way = if args.rewrite {
        RekeyWay::Rewrite
    } else {
        RekeyWay::InPlaceWhereTheyFit
    };
    let plan = opened.rekey_with(&new, way)?;
    match &plan {
        Rekey::InPlace(in_place) => {
            if lease.as_ref().is_some_and(Lease::wanted) {
                bail!("another program opened {shown} while paraes read it: nothing was written; run this again when it is done");
            }
            let record = snapshot
                .recheck(&file, opened.header_bytes())
                .with_context(|| format!("cannot rekey {shown} in place"))?;
            rekey_in_place(&file, &opened, &plan, in_place, &record)
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
                    "{shown} has {} hard links and {}: a rewritten copy would replace this name only and leave the other links with the old stanzas; remove the other links (find -samefile) or rekey a copy",
                    meta.nlink(),
                    if args.rewrite { "--rewrite asks for a copy" } else { "its new stanzas need a larger header" }
                );
            }
            let output = Output::create(Some(&target), true, true, Reach::ThisMachine, false)?;
            let copy = output.file().expect("a path gives a file output");
            guard::keep_owner_and_mode(copy, &meta)
                .and_then(|()| Ok(write_copy(copy, header, &file, *body_offset, meta.len())?))
                .with_context(|| {
                    format!("writing the rekeyed copy of {shown} failed ({shown} is unchanged)")
                })?;
            opened
                .confirm_rekey(&plan, BodyAccess::File(copy))
                .with_context(|| {
                    format!("the rekeyed copy of {shown} did not read back ({shown} is unchanged)")
                })?;
            snapshot
                .recheck_path(&target, &file, opened.header_bytes())
                .with_context(|| format!("cannot replace {shown} with its rekeyed copy"))?;
            // Durable, renamed over the target, and the directory synced.
            output
                .commit()
                .with_context(|| format!("replacing {shown} failed ({shown} is unchanged)"))?;
            if !args.quiet {
                eprintln!(
                    "paraes: rekeyed {shown} ({}: the body was copied unchanged)",
                    if args.rewrite {
                        "into a copy renamed over it, as --rewrite asks"
                    } else {
                        "the new stanzas needed a larger header"
                    }
                );
            }
        }
    }
    drop(lease);
    Ok(())
}

/// One write, durable before the next.
fn durable(file: &File, write: &HeaderWrite) -> std::io::Result<()> {
    file.write_all_at(&write.bytes, write.offset)
        .and_then(|()| file.sync_data())
}

/// Publishes the new slot (each write durable), reads the header back and confirms it, and
/// only then wipes the old slot. `record` is the header as re-read right before the first
/// write. If publishing or the check fails, the bytes it overwrote are put back by the same
/// protocol (generation last), and the file is said to be unchanged only once it is read
/// back equal to `record` and opens with the old file key again.
fn rekey_in_place(
    file: &File,
    opened: &Opened,
    plan: &Rekey,
    in_place: &InPlace,
    record: &[u8],
) -> Result<()> {
    let (at, len) = in_place.overwritten();
    let undo = record
        .get(at as usize..at as usize + len)
        .and_then(|before| in_place.undo(before))
        .ok_or_else(|| anyhow!("the header is shorter than its slots"))?;
    let published = in_place
        .publish
        .iter()
        .try_for_each(|write| durable(file, write))
        .context("writing the new stanzas failed")
        .and_then(|()| {
            opened
                .confirm_rekey(plan, BodyAccess::File(file))
                .context("the new stanzas did not read back as written")
        });
    if let Err(e) = published {
        let undone = undo.iter().try_for_each(|write| durable(file, write));
        return Err(e.context(state_after_undo(file, opened, record, undone.is_ok())));
    }
    durable(file, &in_place.wipe[0]).context(
        "wiping the old stanzas failed (the old and the new keys open the file; rekey again to finish)",
    )?;
    durable(file, &in_place.wipe[1]).context(
        "clearing the old stanzas' bytes failed (only the new keys open the file; rekey again to clear them)",
    )?;
    Ok(())
}

/// What the file is after an undo, found by reading it back: its header bytes against the undo
/// record, and whether the old file key still opens it (with the secret already at hand: no
/// prompt).
fn state_after_undo(file: &File, opened: &Opened, record: &[u8], undone: bool) -> String {
    let mut now = vec![0u8; record.len()];
    let restored = file.read_exact_at(&mut now, 0).is_ok() && now == record;
    let len = file.metadata().map_or(0, |m| m.len());
    let opens = UnverifiedHeader::read(&mut BufReader::new(ReadAt::new(file, 0, len)))
        .and_then(|header| header.open_with_secret(opened.secret()))
        .is_ok();
    match (restored, opens) {
        (true, true) => "the file is unchanged (read back: its header is as before, and the old keys open it)".into(),
        (false, true) => format!(
            "the file's header is not as it was before the rekey ({}), but the old keys open it (read back): run the rekey again",
            if undone { "it changed meanwhile" } else { "putting back what the rekey overwrote failed" }
        ),
        (_, false) => "the old keys do NOT open the file as it is now (read back): do not delete any copy of it; if it was changed by another program meanwhile, that program's content is what it holds".into(),
    }
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
