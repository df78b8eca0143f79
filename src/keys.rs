//! Where keys come from: key files, `--key`, and passphrases from the terminal or a file.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use paraes_core::Key;
use zeroize::Zeroizing;

use crate::cli::CryptArgs;

/// Key files are tiny; anything bigger is not one (and is not read whole).
const MAX_KEY_FILE: u64 = 1024;
/// Only the start of a passphrase file is read (its first line is the passphrase).
const MAX_PASSPHRASE_FILE: u64 = 64 * 1024;

/// The user's secret: a key, or a passphrase still to be stretched with the container's salt.
pub enum Secret {
    /// A raw AES key.
    Key(Key),
    /// A passphrase (zeroized on drop).
    Passphrase(Zeroizing<Vec<u8>>),
}

/// Reads the secret the options name. `confirm` asks for a terminal passphrase twice.
pub fn secret(args: &CryptArgs, confirm: bool, warn: &dyn Fn(&str)) -> Result<Secret> {
    if let Some(path) = &args.key_file {
        return Ok(Secret::Key(read_key_file(path, warn)?));
    }
    if let Some(text) = &args.key {
        warn("--key puts the key in the process list where other users can see it: prefer --key-file");
        let bytes = Zeroizing::new(
            hex::decode(text.trim())
                .ok()
                .filter(|b| matches!(b.len(), 16 | 24 | 32))
                .context("--key needs 32, 48 or 64 hex digits (make a key with `paraes keygen`)")?,
        );
        return Ok(Secret::Key(Key::new(&bytes)?));
    }
    if let Some(path) = &args.passphrase_file {
        return Ok(Secret::Passphrase(read_passphrase_file(path)?));
    }
    let first = Zeroizing::new(
        rpassword::prompt_password("Passphrase: ")
            .context("no terminal to ask for the passphrase: use --passphrase-file PATH")?
            .into_bytes(),
    );
    if first.is_empty() {
        bail!("the passphrase is empty: type one, or use a key file");
    }
    if confirm {
        let again = Zeroizing::new(
            rpassword::prompt_password("Passphrase again: ")
                .context("no terminal to ask for the passphrase: use --passphrase-file PATH")?
                .into_bytes(),
        );
        if again != first {
            bail!("the two passphrases differ: try again");
        }
    }
    Ok(Secret::Passphrase(first))
}

/// Reads a key file, warning when other users can read it.
fn read_key_file(path: &Path, warn: &dyn Fn(&str)) -> Result<Key> {
    let shown = path.display();
    let meta = fs::metadata(path).with_context(|| format!("cannot read key file {shown}"))?;
    if !meta.is_file() {
        bail!("key file {shown} is not a regular file");
    }
    if meta.len() > MAX_KEY_FILE {
        bail!("{shown} is not a key file ({} bytes): a key file holds 16/24/32 raw bytes or 32/48/64 hex digits", meta.len());
    }
    if meta.permissions().mode() & 0o077 != 0 {
        warn(&format!(
            "key file {shown} can be read by other users: chmod 600 {shown}"
        ));
    }
    let mut contents = Zeroizing::new(Vec::new());
    fs::File::open(path)
        .and_then(|f| f.take(MAX_KEY_FILE).read_to_end(&mut contents))
        .with_context(|| format!("cannot read key file {shown}"))?;
    Key::parse(&contents).with_context(|| format!("key file {shown}"))
}

/// The first line of a passphrase file.
fn read_passphrase_file(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    let shown = path.display();
    let mut contents = Zeroizing::new(Vec::new());
    fs::File::open(path)
        .and_then(|f| f.take(MAX_PASSPHRASE_FILE).read_to_end(&mut contents))
        .with_context(|| format!("cannot read passphrase file {shown}"))?;
    let line = contents.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        bail!("passphrase file {shown} is empty: put the passphrase on its first line");
    }
    Ok(Zeroizing::new(line.to_vec()))
}
