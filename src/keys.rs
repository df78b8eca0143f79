//! Where keys come from: key files, `--key`, passphrases (terminal or file), recipients and
//! identity files; turned into the container's recipients (enc), unlock set (dec) or raw key.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use paraes_core::container::{
    parse_identities, parse_recipients, Argon2Params, Identity, PublicRecipient, Recipient, Unlock,
};
use paraes_core::Key;
use zeroize::Zeroizing;

use crate::cli::PassphraseArgs;

/// Key files are tiny; anything bigger is not one (and is not read whole).
const MAX_KEY_FILE: u64 = 1024;
/// Only the start of a passphrase file is read (its first line is the passphrase).
const MAX_PASSPHRASE_FILE: u64 = 64 * 1024;
/// Identity and recipient files are small text files.
const MAX_TEXT_FILE: u64 = 1 << 20;

/// The key options of one command, whichever command it is.
pub struct KeySources<'a> {
    /// `-k` files.
    pub key_files: &'a [PathBuf],
    /// `--key HEX`.
    pub key: Option<&'a str>,
    /// `-p` / `--passphrase-file`.
    pub passphrase: &'a PassphraseArgs,
    /// `-i` identity files.
    pub identities: &'a [PathBuf],
    /// `-r` recipients.
    pub recipients: &'a [String],
    /// `-R` recipient files.
    pub recipients_files: &'a [PathBuf],
}

impl KeySources<'_> {
    fn keys(&self, warn: &dyn Fn(&str)) -> Result<Vec<Key>> {
        let mut keys = Vec::new();
        for path in self.key_files {
            keys.push(read_key_file(path, warn)?);
        }
        if let Some(text) = self.key {
            warn("--key puts the key in the process list where other users can see it: prefer --key-file");
            let bytes = Zeroizing::new(
                hex::decode(text.trim())
                    .ok()
                    .filter(|b| matches!(b.len(), 16 | 24 | 32))
                    .context(
                        "--key needs 32, 48 or 64 hex digits (make a key with `paraes keygen`)",
                    )?,
            );
            keys.push(Key::new(&bytes)?);
        }
        Ok(keys)
    }

    fn passphrase(&self, confirm: bool) -> Result<Option<Zeroizing<Vec<u8>>>> {
        if let Some(path) = &self.passphrase.passphrase_file {
            return Ok(Some(read_passphrase_file(path)?));
        }
        if self.passphrase.passphrase {
            return Ok(Some(prompt_passphrase(confirm)?));
        }
        Ok(None)
    }

    /// The one raw key of `--raw` (a raw stream has nowhere to keep a wrapped key).
    pub fn raw_key(&self, warn: &dyn Fn(&str)) -> Result<Key> {
        let mut keys = self.keys(warn)?;
        if keys.len() != 1 {
            bail!("--raw uses exactly one key (one --key-file or --key): a raw stream has no header for more");
        }
        Ok(keys.remove(0))
    }

    /// The recipients of `enc`: one stanza each.
    pub fn recipients(&self, warn: &dyn Fn(&str)) -> Result<Vec<Recipient>> {
        let mut out: Vec<Recipient> = self.keys(warn)?.into_iter().map(Recipient::Key).collect();
        if let Some(passphrase) = self.passphrase(true)? {
            out.push(Recipient::Passphrase(
                passphrase,
                Argon2Params::recommended()?,
            ));
        }
        for text in self.recipients {
            let recipient: PublicRecipient = text
                .parse()
                .with_context(|| format!("-r {}", shorten(text)))?;
            out.push(Recipient::Public(recipient));
        }
        for path in self.recipients_files {
            let text = read_text(path, "recipients file")?;
            let list = parse_recipients(&text)
                .with_context(|| format!("recipients file {}", path.display()))?;
            if list.is_empty() {
                bail!("recipients file {} lists no recipient", path.display());
            }
            out.extend(list.into_iter().map(Recipient::Public));
        }
        Ok(out)
    }

    /// What `dec` (or `rekey`) tries the stanzas with.
    pub fn unlock(&self, max_kdf_mib: u64, warn: &dyn Fn(&str)) -> Result<Unlock> {
        let mut identities: Vec<Identity> =
            self.keys(warn)?.into_iter().map(Identity::Key).collect();
        if let Some(passphrase) = self.passphrase(false)? {
            identities.push(Identity::Passphrase(passphrase));
        }
        for path in self.identities {
            identities.extend(
                read_identity_file(path, warn)?
                    .into_iter()
                    .map(Identity::Secret),
            );
        }
        Ok(Unlock {
            identities,
            max_kdf_mib,
        })
    }
}

/// The start of a long recipient, for error messages.
fn shorten(text: &str) -> String {
    if text.chars().count() > 24 {
        format!("{}...", text.chars().take(20).collect::<String>())
    } else {
        text.to_string()
    }
}

/// Asks for a passphrase on the terminal; `confirm` asks twice.
fn prompt_passphrase(confirm: bool) -> Result<Zeroizing<Vec<u8>>> {
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
    Ok(first)
}

/// Warns when other users can read a secret file.
fn warn_if_readable(meta: &fs::Metadata, what: &str, path: &Path, warn: &dyn Fn(&str)) {
    if meta.permissions().mode() & 0o077 != 0 {
        let shown = path.display();
        warn(&format!(
            "{what} {shown} can be read by other users: chmod 600 {shown}"
        ));
    }
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
    warn_if_readable(&meta, "key file", path, warn);
    let mut contents = Zeroizing::new(Vec::new());
    fs::File::open(path)
        .and_then(|f| f.take(MAX_KEY_FILE).read_to_end(&mut contents))
        .with_context(|| format!("cannot read key file {shown}"))?;
    if contents.trim_ascii_start().starts_with(b"PARAES-") || contents.starts_with(b"#") {
        bail!("key file {shown} holds an identity, not a key: give it with -i {shown}");
    }
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

/// A small text file (identities, recipients).
fn read_text(path: &Path, what: &str) -> Result<Zeroizing<String>> {
    let shown = path.display();
    let mut contents = Zeroizing::new(Vec::new());
    fs::File::open(path)
        .and_then(|f| f.take(MAX_TEXT_FILE).read_to_end(&mut contents))
        .with_context(|| format!("cannot read {what} {shown}"))?;
    let text = std::str::from_utf8(&contents)
        .map(str::to_string)
        .map_err(|_| anyhow::anyhow!("{what} {shown} is not text"))?;
    Ok(Zeroizing::new(text))
}

/// The identities of an identity file, warning when other users can read it.
pub fn read_identity_file(
    path: &Path,
    warn: &dyn Fn(&str),
) -> Result<Vec<paraes_core::container::SecretIdentity>> {
    if let Ok(meta) = fs::metadata(path) {
        warn_if_readable(&meta, "identity file", path, warn);
    }
    let text = read_text(path, "identity file")?;
    parse_identities(&text).with_context(|| format!("identity file {}", path.display()))
}
