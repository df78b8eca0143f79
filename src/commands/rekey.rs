//! `rekey`: new stanzas for the same file key, written in place when they fit the header
//! (published, read back and confirmed before the old slot is wiped, each write durable before
//! the next) or into a rewritten copy that is confirmed and then renamed over the file; the
//! body bytes never change. Everything slow (reading the new keys, prompts, Argon2id, key
//! agreement) happens before the file is opened; the file is guarded by a lock, a write lease
//! where the kernel grants one, and a re-read of its header right before the first write.
//! docs/FORMAT.md, "Rekey without re-encrypting"; docs/RELIABILITY.md.

use std::fs::File;
use std::io::{BufReader, Write};
use std::os::unix::fs::{FileExt, MetadataExt};

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::container::{
    BodyAccess, HeaderWrite, InPlace, NewStanzas, Opened, Rekey, RekeyWay, UnverifiedHeader,
};
use paraes_core::positioned::ReadAt;

use crate::advice::one_line;
use crate::plan::RekeyPlan;
use paraes_files::lease::Lease;
use paraes_files::replace::{Step, TakeError, Taken};

/// `rekey`: new stanzas for the same file key; in place when they fit, else a rewritten file
/// renamed over the old one. A symbolic link is rekeyed at its target.
pub fn run(args: &RekeyPlan) -> Result<()> {
    let warn = crate::run::prepare::warner(args.quiet);
    let shown = one_line(&args.file.display().to_string());
    // Every key source is read and every new stanza's costly part done before the file is
    // opened (a prompt or a FIFO may take any time): from the read of the header to the
    // writes, nothing waits on the user.
    let unlock = args.open.unlock(&warn)?;
    let recipients = args.change.new_keys().recipients(&warn)?;
    let new = if recipients.is_empty() {
        None
    } else {
        Some(NewStanzas::prepare(&recipients)?)
    };
    for warning in new.iter().flat_map(NewStanzas::warnings) {
        warn(&warning.to_string());
    }
    // Through a link, the container rekeyed is the link's target, in place or rewritten
    // beside it; the link stays a link.
    let taken = Taken::take(&args.file).map_err(|e| match e {
        TakeError::Open(e) => {
            anyhow::Error::new(e).context(format!("cannot open {shown} for rekeying"))
        }
        TakeError::NotRegular => anyhow!("{shown} is not a regular file"),
        TakeError::Guard(e) => anyhow::Error::new(e).context(format!("cannot rekey {shown}")),
        TakeError::Planted(e) => anyhow::Error::new(e),
    })?;
    let Taken {
        target,
        file,
        meta,
        snapshot,
    } = &taken;
    let stale = paraes_files::leftovers(target);
    if !stale.is_empty() {
        warn(&paraes_files::leftovers_warning(&stale));
    }
    if paraes_files::file_looks_armored(file).with_context(|| shown.clone())? {
        bail!(
            "{shown}: it is an ASCII-armored container (enc --armor), whose header cannot be \
             changed in place: decrypt it and encrypt it again for the new keys \
             (paraes dec ... -o - | paraes enc --armor ...)"
        );
    }
    let unverified =
        UnverifiedHeader::read(&mut BufReader::new(file)).with_context(|| shown.clone())?;
    // The body check proves the opened file key is the body's before anything is written.
    let opened = unverified.open(&unlock, BodyAccess::File(file))?;
    if let Some(ignored) = opened.ignored_slot() {
        crate::run::prepare::tell_ignored_slot(args.quiet, &shown, ignored);
    }
    let way = if args.rewrite {
        RekeyWay::Rewrite
    } else {
        RekeyWay::InPlaceWhereTheyFit
    };
    let (plan, change) = super::rekey_change::plan(
        &opened,
        &unlock,
        &args.change,
        new.as_ref(),
        &recipients,
        args.force,
        way,
    )
    .with_context(|| format!("{shown} is unchanged"))?;
    match &plan {
        Rekey::InPlace(in_place) => {
            // The lease covers the writes alone (taken after any prompt, so no reader waits
            // on a user): whatever wrote to the file before it was taken, the re-read below
            // finds.
            let lease = take_lease(file, args.verbose, &shown);
            let record = snapshot
                .recheck(file, opened.header_bytes())
                .with_context(|| format!("cannot rekey {shown} in place"))?;
            rekey_in_place(file, &opened, &plan, in_place, &record)
                .with_context(|| format!("rekeying {shown} failed"))?;
            drop(lease);
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
            taken
                .replace_by_copy(
                    opened.header_bytes(),
                    |copy| Ok(write_copy(copy, header, file, *body_offset, meta.len())?),
                    |copy, ()| Ok(opened.confirm_rekey(&plan, BodyAccess::File(copy))?),
                )
                .map_err(|(step, e): (Step, anyhow::Error)| {
                    e.context(match step {
                        Step::Write => format!(
                            "writing the rekeyed copy of {shown} failed ({shown} is unchanged)"
                        ),
                        Step::Confirm => format!(
                            "the rekeyed copy of {shown} did not read back ({shown} is unchanged)"
                        ),
                        Step::Recheck => format!("cannot replace {shown} with its rekeyed copy"),
                        Step::Commit => {
                            format!("replacing {shown} failed ({shown} is unchanged)")
                        }
                    })
                })?;
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
    if !args.quiet {
        eprintln!("paraes: {shown}: {change}");
    }
    Ok(())
}

/// A write lease on `file` where the kernel grants one; `-v` says which.
fn take_lease<'a>(file: &'a File, verbose: bool, shown: &str) -> Option<Lease<'a>> {
    match Lease::take(file) {
        Ok(lease) => {
            if verbose {
                eprintln!("paraes: {shown}: write lease held: other programs' opens of it wait until the rekey is done");
            }
            Some(lease)
        }
        Err(why) => {
            if verbose {
                eprintln!("paraes: {shown}: no write lease ({why}): paraes re-reads its header right before each write, but a program that ignores locks could still write to it in between (--rewrite never writes to it)");
            }
            None
        }
    }
}

/// Why a header write was not made.
enum WriteFailed {
    /// The header no longer holds what paraes last wrote or read: another program wrote.
    Changed,
    /// The write or its fsync failed.
    Io(std::io::Error),
}

impl std::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteFailed::Changed => f.write_str("another program wrote to the file meanwhile"),
            WriteFailed::Io(e) => write!(f, "{e}"),
        }
    }
}

/// The file's header as paraes last read or wrote it: each write is made only if the header
/// still holds exactly that, and is durable before the next.
struct Header<'a> {
    file: &'a File,
    expected: Vec<u8>,
    changed: bool,
}

impl Header<'_> {
    fn write(&mut self, write: &HeaderWrite) -> Result<(), WriteFailed> {
        let mut now = vec![0u8; self.expected.len()];
        self.file
            .read_exact_at(&mut now, 0)
            .map_err(WriteFailed::Io)?;
        if now != self.expected {
            self.changed = true;
            return Err(WriteFailed::Changed);
        }
        self.file
            .write_all_at(&write.bytes, write.offset)
            .and_then(|()| self.file.sync_data())
            .map_err(WriteFailed::Io)?;
        let at = write.offset as usize;
        if let Some(bytes) = self.expected.get_mut(at..at + write.bytes.len()) {
            bytes.copy_from_slice(&write.bytes);
        }
        Ok(())
    }
}

/// Publishes the new slot (each write durable), reads the header back and confirms it, and
/// only then wipes the old slot. `record` is the header as re-read right before the first
/// write; each write is made only if the header still holds what paraes last wrote. If
/// publishing or the check fails, the bytes it overwrote are put back by the same protocol
/// (generation last), unless another program wrote meanwhile (its bytes are never written
/// over); the file is said to be unchanged only once it is read back equal to `record` and
/// the old file key opens it, body check included.
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
    let mut header = Header {
        file,
        expected: record.to_vec(),
        changed: false,
    };
    let published = in_place
        .publish
        .iter()
        .try_for_each(|write| header.write(write))
        .map_err(|e| anyhow!("writing the new stanzas failed: {e}"))
        .and_then(|()| {
            opened
                .confirm_rekey(plan, BodyAccess::File(file))
                .context("the new stanzas did not read back as written")
        });
    if let Err(e) = published {
        if header.changed {
            return Err(e.context(state_after_change(file, opened)));
        }
        let undone = undo.iter().try_for_each(|write| header.write(write));
        if header.changed {
            return Err(e.context(state_after_change(file, opened)));
        }
        return Err(e.context(state_after_undo(file, opened, record, undone.is_ok())));
    }
    for (write, what) in in_place.wipe.iter().zip([
        "wiping the old stanzas failed (the old and the new keys open the file; rekey again to finish)",
        "clearing the old stanzas' bytes failed (only the new keys open the file; rekey again to clear them)",
    ]) {
        if let Err(e) = header.write(write) {
            return Err(match e {
                WriteFailed::Changed => anyhow!("{e}").context(state_after_change(file, opened)),
                WriteFailed::Io(io) => anyhow::Error::new(io).context(what),
            });
        }
    }
    Ok(())
}

/// What the file is after another program wrote to it during the rekey (paraes stopped
/// writing at once and put nothing back over that program's bytes).
fn state_after_change(file: &File, opened: &Opened) -> String {
    let opens = opened.still_opens(BodyAccess::File(file)).is_ok();
    format!(
        "another program wrote to the file while paraes rekeyed it, and paraes stopped writing: {}",
        if opens {
            "the old keys open it as it is now (read back)"
        } else {
            "the old keys do not open it as it is now (read back): it holds what that program wrote"
        }
    )
}

/// What the file is after an undo, found by reading it back: its header bytes against the undo
/// record, and whether the old file key still opens it, body check included (with the secret
/// already at hand: no prompt).
fn state_after_undo(file: &File, opened: &Opened, record: &[u8], undone: bool) -> String {
    let mut now = vec![0u8; record.len()];
    let restored = file.read_exact_at(&mut now, 0).is_ok() && now == record;
    let opens = opened.still_opens(BodyAccess::File(file)).is_ok();
    match (restored, opens) {
        (true, true) => "the file is unchanged (read back: its header is as before, and the old keys open it)".into(),
        (false, true) => format!(
            "the file's header is not as it was before the rekey ({}), but the old keys open it (read back): run the rekey again",
            if undone { "it changed meanwhile" } else { "putting back what the rekey overwrote failed" }
        ),
        (_, false) => "the old keys do NOT open the file as it is now (read back): keep every copy of it you have".into(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use paraes_core::container::{self, Identity, Recipient, Unlock};
    use paraes_core::{pipeline, CpuEngine, Direction, Key, KeySize};
    use std::fs;

    fn key(byte: u8) -> Key {
        Key::new(&[byte; 32]).unwrap()
    }

    /// A v3 container of 100,000 bytes for key 1, as a file in `dir`; its bytes.
    fn container(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, Vec<u8>) {
        let (mut bytes, sealed) =
            container::seal(KeySize::Aes256, &[Recipient::Key(key(1))]).unwrap();
        let engine = CpuEngine::new(Some(1)).unwrap();
        let spec = sealed.stream_spec(&engine, Direction::Encrypt);
        let plain: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        pipeline::run(&spec, &mut &plain[..], &mut bytes, &|_| {}).unwrap();
        let path = dir.join(name);
        fs::write(&path, &bytes).unwrap();
        (path, bytes)
    }

    /// `path` opened with key 1, a plan to rekey it to key 2 in place, and the undo record.
    fn opened_for_rekey(file: &File) -> (Opened, Rekey, Vec<u8>) {
        let opened = UnverifiedHeader::read(&mut BufReader::new(file))
            .unwrap()
            .open(
                &Unlock::new(vec![Identity::Key(key(1))]),
                BodyAccess::File(file),
            )
            .unwrap();
        let plan = opened.rekey(&[Recipient::Key(key(2))]).unwrap();
        let record = opened.header_bytes().to_vec();
        (opened, plan, record)
    }

    fn open_rw(path: &std::path::Path) -> File {
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap()
    }

    /// Another program's bytes are never written over: a header that no longer holds what
    /// rekey read stops it before its first write, and nothing is put back over it.
    #[test]
    fn a_header_another_program_wrote_is_never_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = container(dir.path(), "v");
        let (_, other) = container(dir.path(), "w");
        let file = open_rw(&path);
        let (opened, plan, record) = opened_for_rekey(&file);
        let Rekey::InPlace(in_place) = &plan else {
            panic!("fits in place");
        };
        fs::write(&path, &other).unwrap();
        let err = format!(
            "{:#}",
            rekey_in_place(&file, &opened, &plan, in_place, &record).unwrap_err()
        );
        assert!(err.contains("another program wrote to the file"), "{err}");
        assert!(!err.contains("unchanged"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), other, "rekey wrote over it");
    }

    /// A failed rekey says "unchanged" only if the old key still opens the file with its body
    /// check: a body cut meanwhile (the header untouched) is not called unchanged.
    #[test]
    fn a_body_cut_during_the_rekey_is_not_called_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let (path, bytes) = container(dir.path(), "v");
        let file = open_rw(&path);
        let (opened, plan, record) = opened_for_rekey(&file);
        let Rekey::InPlace(in_place) = &plan else {
            panic!("fits in place");
        };
        file.set_len(bytes.len() as u64 - 20_000).unwrap();
        let err = format!(
            "{:#}",
            rekey_in_place(&file, &opened, &plan, in_place, &record).unwrap_err()
        );
        assert!(!err.contains("unchanged"), "{err}");
        assert!(err.contains("do NOT open"), "{err}");
        // The header was put back as it was.
        assert_eq!(fs::read(&path).unwrap()[..record.len()], record[..]);
    }

    /// With nothing else writing, the rekey goes through and the new key alone opens the file.
    #[test]
    fn an_undisturbed_rekey_in_place_moves_the_file_to_the_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = container(dir.path(), "v");
        let file = open_rw(&path);
        let (opened, plan, record) = opened_for_rekey(&file);
        let Rekey::InPlace(in_place) = &plan else {
            panic!("fits in place");
        };
        rekey_in_place(&file, &opened, &plan, in_place, &record).unwrap();
        let reopen = |k: u8| {
            UnverifiedHeader::read(&mut BufReader::new(&file))
                .and_then(|h| {
                    h.open(
                        &Unlock::new(vec![Identity::Key(key(k))]),
                        BodyAccess::File(&file),
                    )
                })
                .is_ok()
        };
        use std::io::Seek;
        (&file).rewind().unwrap();
        assert!(reopen(2));
        (&file).rewind().unwrap();
        assert!(!reopen(1));
    }
}
