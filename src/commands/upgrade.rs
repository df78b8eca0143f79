//! `upgrade`: a format v2 container re-encrypted as v3 under the same file key, keeping the
//! stanzas of the slot that opened it (so recipients who are not present still open the
//! upgraded file). Crash-safe as rekey's rewrite path: the v3 copy is written beside the file,
//! read back whole (every chunk tag, and its plaintext length against the v2 file's), made
//! durable and only then renamed over it. docs/FORMAT.md, "Format v3".

use std::fs;
use std::io::{BufReader, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::container::{self, BodyAccess, Opened, Unlock, UnverifiedHeader};
use paraes_core::pipeline::{self, Sink, Source, Workers};
use paraes_core::positioned::ReadAt;
use paraes_core::{CpuEngine, Direction, Engine, KeySize};

use crate::advice::one_line;
use crate::plan::UpgradePlan;
use crate::run::prepare::warner;
use paraes_files::replace::{Step, Taken};

/// Runs `upgrade` over every file of the plan, one after another (each file's pipeline uses
/// every core); a file that fails is reported and the others go on.
pub fn run(plan: &UpgradePlan) -> Result<()> {
    let containers = &plan.containers;
    let warn = warner(containers.quiet);
    let unlock = containers.keys.unlock(&warn)?;
    let engine = CpuEngine::new(None)?;
    let mut failed = containers.unlisted.len();
    for (path, why) in &containers.unlisted {
        eprintln!(
            "paraes: error: {}: {}",
            one_line(&path.display().to_string()),
            one_line(why)
        );
    }
    for path in &containers.files {
        let shown = one_line(&path.display().to_string());
        match upgrade_one(path, &unlock, &engine, plan.key_size) {
            Ok(()) if !containers.quiet => eprintln!("paraes: upgraded {shown} to format v3"),
            Ok(()) => {}
            Err(e) => {
                failed += 1;
                eprintln!("paraes: error: {shown}: {}", crate::advice::error_line(&e));
            }
        }
    }
    let total = containers.files.len() + containers.unlisted.len();
    match failed {
        0 => Ok(()),
        n => {
            if total > 1 {
                eprintln!("paraes: {n} of {total} files were not upgraded (each is unchanged)");
            }
            Err(anyhow!(crate::run::prepare::Reported))
        }
    }
}

/// Upgrades one v2 container in place of itself (a symbolic link: at its target).
fn upgrade_one(path: &Path, unlock: &Unlock, engine: &dyn Engine, key_size: KeySize) -> Result<()> {
    // The same lock as rekey: an upgrade and a rekey of one file never interleave.
    let taken = Taken::take(path)?;
    let Taken { file, meta, .. } = &taken;
    if paraes_files::file_looks_armored(file)? {
        // Only format v3 is ever armored.
        bail!("it is already format v3 (an ASCII-armored container)");
    }
    let unverified = UnverifiedHeader::read(&mut BufReader::new(file))?;
    match unverified.info().version {
        2 => {}
        3 => bail!("it is already format v3"),
        v => bail!(
            "it is format v{v}, which has no file key to keep: decrypt it and encrypt it again"
        ),
    }
    let opened = unverified.open(unlock, BodyAccess::File(file))?;
    let (header, upgraded) = opened.upgrade(key_size)?;
    // Only the slot that opened the file is kept: with --allow-unverified-slot, the other
    // slot's recipients lose their way in, and are named.
    // Said even under --quiet: the user overrode a refusal, and ways in are dropped.
    if let Some(ignored) = opened.ignored_slot() {
        eprintln!(
            "paraes: warning: {}: stanza slot {} (generation {}) is ignored as asked (it does not authenticate under the file key that opened this format v2 file) and dropped: the upgraded file keeps only the stanzas of slot {}, so what slot {} lists ({}) opens it only where slot {} has a way in for it too",
            one_line(&path.display().to_string()),
            ignored.position,
            ignored.generation,
            1 - ignored.position,
            ignored.position,
            ignored.lists,
            1 - ignored.position,
        );
    }
    if meta.nlink() > 1 {
        bail!(
            "it has {} hard links: the upgraded copy would replace this name only and leave the other links in format v2; remove the other links (find -samefile) or upgrade a copy",
            meta.nlink()
        );
    }
    taken
        .replace_by_copy(
            opened.header_bytes(),
            |copy| transcrypt(&opened, &upgraded, &header, file, meta.len(), copy, engine),
            |copy, plaintext| confirm(&opened, copy, engine, &plaintext),
        )
        .map_err(|(step, e): (Step, anyhow::Error)| {
            e.context(match step {
                Step::Write => "writing the upgraded copy failed (the file is unchanged)",
                Step::Confirm => {
                    "the upgraded copy did not read back whole (the file is unchanged)"
                }
                Step::Recheck => "cannot replace it with its upgraded copy",
                Step::Commit => {
                    "replacing the file with its upgraded copy failed (the file is unchanged)"
                }
            })
        })
}

/// The plaintext that went through an upgrade: its length and BLAKE3 hash, taken on the way
/// in (the v2 body decrypted) and again on the way out (the v3 copy decrypted).
#[derive(Debug, PartialEq, Eq)]
struct Plaintext {
    len: u64,
    hash: blake3::Hash,
}

/// A writer that hashes and counts what goes through it.
struct Hashing<W> {
    inner: W,
    hasher: blake3::Hasher,
    len: u64,
}

impl<W> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing {
            inner,
            hasher: blake3::Hasher::new(),
            len: 0,
        }
    }

    fn plaintext(&self) -> Plaintext {
        Plaintext {
            len: self.len,
            hash: self.hasher.finalize(),
        }
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    /// One vectored write of the inner writer (opened windows come as the data between their
    /// tags: the default would write one 16 KiB slot a call), hashing what it took.
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        let n = self.inner.write_vectored(bufs)?;
        let mut left = n;
        for buf in bufs {
            let taken = left.min(buf.len());
            self.hasher.update(&buf[..taken]);
            left -= taken;
        }
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `header` and the v2 body of `old` decrypted and encrypted again under `upgraded` to
/// `copy`: one run decrypts into a pipe on its own thread while another encrypts from it, each
/// with many chunks in flight (the v2 body read at its offsets, the v3 body written at its
/// offsets), so memory stays bounded whatever the size. Returns the plaintext's length and
/// hash; a v2 chunk that fails authentication fails the whole copy.
fn transcrypt(
    opened: &Opened,
    upgraded: &Opened,
    header: &[u8],
    old: &fs::File,
    old_len: u64,
    copy: &fs::File,
    engine: &dyn Engine,
) -> Result<Plaintext> {
    let start = opened.info().chunks_start();
    let body = Source::At {
        file: old,
        at: start,
        len: old_len.saturating_sub(start),
    };
    let (from_v2, to_v3) = std::io::pipe()?;
    copy.write_all_at(header, 0)?;
    let decrypt = opened.stream_spec(engine, Direction::Decrypt);
    let encrypt = upgraded.stream_spec(engine, Direction::Encrypt);
    let workers = workers(engine);
    let (decrypted, encrypted) = std::thread::scope(|scope| {
        let decrypting = scope.spawn(move || {
            let mut to_v3 = Hashing::new(to_v3);
            pipeline::run_parallel(&decrypt, body, Sink::Stream(&mut to_v3), workers, &|_| {})
                .map(|_| to_v3.plaintext())
        });
        let mut from_v2 = from_v2;
        let written_at = Sink::At {
            file: copy,
            at: header.len() as u64,
            take_turns: false,
        };
        let encrypted = pipeline::run_parallel(
            &encrypt,
            Source::Stream(&mut from_v2),
            written_at,
            workers,
            &|_| {},
        )
        .map_err(anyhow::Error::new);
        // Closing the read end ends a decryption still writing (a failed write of the copy
        // would otherwise leave it blocked on a full pipe for ever).
        drop(from_v2);
        let decrypted = decrypting
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (decrypted, encrypted)
    });
    // When the copy could not be written, that is the cause (the decryption then fails on the
    // closed pipe); otherwise a decryption failure is.
    encrypted?;
    decrypted.context("the v2 body did not decrypt")
}

/// The workers of upgrade's runs: one per engine thread, two at least (so reading and writing
/// overlap the AES).
fn workers(engine: &dyn Engine) -> Workers {
    Workers::new(engine.workers().max(2))
}

/// Reads the upgraded copy back: it opens with the same file key (slot tag and key
/// commitment), every chunk tag verifies as it is decrypted, and its plaintext has the length
/// and hash of what the v2 body gave.
fn confirm(
    opened: &Opened,
    copy: &fs::File,
    engine: &dyn Engine,
    plaintext: &Plaintext,
) -> Result<()> {
    copy.sync_all()?;
    let len = copy.metadata()?.len();
    let mut reader = BufReader::new(ReadAt::new(copy, 0, len));
    let again = UnverifiedHeader::read(&mut reader)?.open_with_secret(opened.secret())?;
    if again.info().version != container::VERSION {
        bail!("the copy is not format v{}", container::VERSION);
    }
    let start = again.info().chunks_start();
    let body = Source::At {
        file: copy,
        at: start,
        len: len.saturating_sub(start),
    };
    let mut read_back = Hashing::new(std::io::sink());
    let spec = again.stream_spec(engine, Direction::Decrypt);
    pipeline::run_parallel(
        &spec,
        body,
        Sink::Stream(&mut read_back),
        workers(engine),
        &|_| {},
    )?;
    let read_back = read_back.plaintext();
    if read_back.len != plaintext.len {
        bail!(
            "the copy holds {} bytes of plaintext, the file {}",
            read_back.len,
            plaintext.len
        );
    }
    if read_back.hash != plaintext.hash {
        bail!("the copy's plaintext differs from the file's");
    }
    Ok(())
}
