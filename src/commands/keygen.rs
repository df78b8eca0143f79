//! `keygen`: a random symmetric key, an X25519 or post-quantum identity, or the recipients of
//! an identity file (`-y`); secrets go to standard output or a new file of mode 0600.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use paraes_core::container::{self, SecretIdentity};
use paraes_core::KeySize;
use rustix::fs::FileType;
use zeroize::Zeroizing;

use crate::cli::KeygenArgs;
use paraes_files::{Output, OutputOptions};

/// Writes a secret `text` to `-o PATH` (mode 0600, put in place whole or not at all) or
/// standard output.
fn write_secret(output: Option<&Path>, force: bool, text: &str) -> Result<()> {
    match output.filter(|p| *p != Path::new("-")) {
        None => {
            warn_if_others_can_read_stdout();
            std::io::stdout()
                .write_all(text.as_bytes())
                .context("writing the key failed")
        }
        Some(path) => {
            let mut file = Output::create(
                Some(path),
                &OutputOptions {
                    replace: force,
                    binary: false,
                    ..OutputOptions::default()
                },
            )?;
            file.writer()
                .write_all(text.as_bytes())
                .with_context(|| format!("writing {} failed", path.display()))?;
            Ok(file.commit()?)
        }
    }
}

/// Warns when standard output is a file other users can read: `paraes keygen > my.key` under
/// the usual umask (022) makes one of mode 0644, which `-o` never does.
fn warn_if_others_can_read_stdout() {
    let Ok(stat) = rustix::fs::fstat(std::io::stdout()) else {
        return;
    };
    let mode = stat.st_mode & 0o7777;
    let regular = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile;
    if regular && mode & 0o077 != 0 {
        crate::run::prepare::warner(false)(&format!(
            "standard output is a file other users can read (mode {mode:04o}), and so is the \
             secret written to it: chmod 600 it, or use -o FILE, which makes one of mode 0600"
        ));
    }
}

/// `keygen`: a symmetric key, an identity (`--x25519`, `--pq`), or the recipients of an
/// identity file (`-y`).
pub fn run(args: &KeygenArgs) -> Result<()> {
    if let Some(path) = &args.recipient_of {
        let identities =
            crate::keys::read_identity_file(path, &crate::run::prepare::warner(false))?;
        // A full disk or a reader that left (`| head`) is an error to report, not a panic.
        let mut out = std::io::stdout().lock();
        return identities
            .iter()
            .try_for_each(|identity| writeln!(out, "{}", identity.recipient()))
            .and_then(|()| out.flush())
            .context("writing standard output failed");
    }
    if args.x25519 || args.pq {
        let identity = if args.pq {
            SecretIdentity::generate_hybrid()?
        } else {
            SecretIdentity::generate_x25519()?
        };
        let recipient = identity.recipient();
        let comments = format!(
            "# paraes identity ({}); keep this file secret\n# recipient: {recipient}\n",
            if args.pq {
                "ML-KEM-768 + X25519"
            } else {
                "X25519"
            },
        );
        let secret = identity.to_secret_text();
        // Sized once: growing a String would leave copies of the secret in freed memory.
        let mut text = Zeroizing::new(String::with_capacity(comments.len() + secret.len() + 1));
        text.push_str(&comments);
        text.push_str(&secret);
        text.push('\n');
        write_secret(args.output.as_deref(), args.force, &text)?;
        eprintln!("recipient: {recipient}");
        return Ok(());
    }
    let size = args.bits.unwrap_or(KeySize::Aes256);
    let mut key = Zeroizing::new([0u8; 32]);
    container::random_bytes(&mut key[..size.bytes()])?;
    // The hex text and its newline, in one wiped buffer (no intermediate String).
    let mut text = Zeroizing::new([b'\n'; 65]);
    let digits = 2 * size.bytes();
    hex::encode_to_slice(&key[..size.bytes()], &mut text[..digits])
        .expect("the buffer fits 64 hex digits");
    let text = std::str::from_utf8(&text[..=digits]).expect("hex digits are text");
    write_secret(args.output.as_deref(), args.force, text)
}
