//! Reading the key sources of a plan: key files (regular files, pipes such as `<(...)`,
//! standard input), `--key-fd`, `--key-env`, `--key`, passphrases (terminal, file, standard
//! input), recipients and identity files; turned into the container's recipients (enc), the
//! unlock set (dec, rekey) or the one raw key (--raw). Secrets stay in zeroizing buffers.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use paraes_core::container::{
    parse_identities, parse_recipients, Argon2Params, Identity, PublicRecipient, Recipient,
    SecretIdentity, Unlock,
};
use paraes_core::{Key, KeySize};
use zeroize::Zeroizing;

use crate::plan::{KeyPlan, KeySource, PassphraseSource};

/// Key files are tiny; anything bigger is not one (and is not read whole).
const MAX_KEY_FILE: u64 = 1024;
/// Only the start of a passphrase file is read (its first line is the passphrase).
const MAX_PASSPHRASE_FILE: u64 = 64 * 1024;
/// Identity and recipient files are small text files.
const MAX_TEXT_FILE: u64 = 1 << 20;
/// Passphrases shorter than this get a warning when a file is encrypted with one.
const SHORT_PASSPHRASE: usize = 10;

/// A warning printer (silenced by --quiet).
pub type Warn<'a> = &'a dyn Fn(&str);

impl KeyPlan {
    fn read_keys(&self, warn: Warn<'_>) -> Result<Vec<Key>> {
        self.keys
            .iter()
            .map(|source| read_key(source, warn))
            .collect()
    }

    fn read_passphrase(&self, confirm: bool, warn: Warn<'_>) -> Result<Option<Zeroizing<Vec<u8>>>> {
        let passphrase = match &self.passphrase {
            None => return Ok(None),
            Some(PassphraseSource::Prompt) => crate::prompt::passphrase(confirm)?,
            Some(PassphraseSource::File(path)) => {
                let (file, name) = open_secret(path, "passphrase file", warn)?;
                first_line(file, &name)?
            }
            Some(PassphraseSource::Stdin) => first_line(stdin_unbuffered()?, "standard input")?,
        };
        if confirm
            && std::str::from_utf8(&passphrase).map_or(passphrase.len(), |s| s.chars().count())
                < SHORT_PASSPHRASE
        {
            warn(&format!("this passphrase is shorter than {SHORT_PASSPHRASE} characters: Argon2id slows guessing, but a short passphrase can still be guessed; prefer a long one or a key file"));
        }
        Ok(Some(passphrase))
    }

    /// The one key of a raw stream, of `size` if given.
    pub fn raw_key(&self, size: Option<KeySize>, warn: Warn<'_>) -> Result<Key> {
        let mut keys = self.read_keys(warn)?;
        if keys.len() != 1 {
            bail!("a raw stream uses exactly one key");
        }
        let key = keys.remove(0);
        if let Some(wanted) = size {
            if key.size() != wanted {
                bail!(
                    "the key is {} bits but --bits asks for {}: use a key of that size",
                    key.size(),
                    wanted
                );
            }
        }
        Ok(key)
    }

    /// The recipients of `enc` (and rekey's new set): one stanza each.
    pub fn recipients(&self, warn: Warn<'_>) -> Result<Vec<Recipient>> {
        let mut out: Vec<Recipient> = self
            .read_keys(warn)?
            .into_iter()
            .map(Recipient::Key)
            .collect();
        if let Some(passphrase) = self.read_passphrase(true, warn)? {
            out.push(Recipient::Passphrase(
                passphrase,
                Argon2Params::recommended()?,
            ));
        }
        for text in &self.recipients {
            let recipient: PublicRecipient = text
                .parse()
                .with_context(|| format!("-r {}", shorten(text)))?;
            out.push(Recipient::Public(recipient));
        }
        for path in &self.recipients_files {
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
    pub fn unlock(&self, warn: Warn<'_>) -> Result<Unlock> {
        let mut identities: Vec<Identity> = self
            .read_keys(warn)?
            .into_iter()
            .map(Identity::Key)
            .collect();
        if let Some(passphrase) = self.read_passphrase(false, warn)? {
            identities.push(Identity::Passphrase(passphrase));
        }
        for path in &self.identities {
            identities.extend(
                read_identity_file(path, warn)?
                    .into_iter()
                    .map(Identity::Secret),
            );
        }
        Ok(Unlock {
            identities,
            max_kdf_mib: self.max_kdf_mib,
            allow_unverified_slot: self.allow_unverified_slot,
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

/// Reads one symmetric key.
fn read_key(source: &KeySource, warn: Warn<'_>) -> Result<Key> {
    match source {
        KeySource::File(path) => {
            let (file, name) = open_secret(path, "key file", warn)?;
            key_from(file, &name)
        }
        KeySource::Stdin => key_from(stdin_unbuffered()?, "the key on standard input"),
        KeySource::Fd(fd) => {
            // Reopening /dev/fd/N reads the descriptor without taking ownership of it.
            let path = PathBuf::from(format!("/dev/fd/{fd}"));
            let file = fs::File::open(&path)
                .with_context(|| format!("cannot read the key from file descriptor {fd} (is it open? e.g. --key-fd 3 3<my.key)"))?;
            key_from(file, &format!("the key on file descriptor {fd}"))
        }
        KeySource::Env(var) => {
            let text =
                Zeroizing::new(std::env::var(var).with_context(|| {
                    format!("environment variable {var} is not set (or not text)")
                })?);
            parse_hex_key(text.as_bytes(), &format!("the key in ${var}"))
        }
        KeySource::Hex(text) => {
            warn("--key puts the key in the process list where other users can see it: prefer --key-file, --key-fd or --key-env");
            parse_hex_key(text.as_bytes(), "--key")
        }
    }
}

/// Standard input without std's buffer (which would keep a copy of the secret for the life of
/// the process): a duplicate of descriptor 0.
fn stdin_unbuffered() -> Result<fs::File> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot read standard input")?;
    Ok(fs::File::from(fd))
}

/// Reads a key (raw bytes or hex text) from `reader`; `name` names it in errors.
fn key_from(reader: impl Read, name: &str) -> Result<Key> {
    // Sized once, so that reading never reallocates (which would leave copies behind).
    let mut contents = Zeroizing::new(Vec::with_capacity(MAX_KEY_FILE as usize + 1));
    reader
        .take(MAX_KEY_FILE + 1)
        .read_to_end(&mut contents)
        .with_context(|| format!("cannot read {name}"))?;
    if contents.len() as u64 > MAX_KEY_FILE {
        bail!("{name} is not a key (more than {MAX_KEY_FILE} bytes): a key is 16/24/32 raw bytes or 32/48/64 hex digits");
    }
    if contents.trim_ascii_start().starts_with(b"PARAES-") || contents.starts_with(b"#") {
        bail!("{name} holds an identity, not a key: give it with -i");
    }
    if looks_like_text(&contents) {
        return parse_hex_key(&contents, name);
    }
    Key::parse(&contents).with_context(|| name.to_string())
}

/// Whether key bytes are meant as hex text: printable ASCII and whitespace only (32 random
/// raw bytes are all printable with probability about 10^-14).
fn looks_like_text(bytes: &[u8]) -> bool {
    let text = bytes.trim_ascii();
    !text.is_empty() && text.iter().all(|b| b.is_ascii_graphic())
}

/// Parses a key written as hex, naming the first character that is not a hex digit.
fn parse_hex_key(text: &[u8], name: &str) -> Result<Key> {
    let text = text.trim_ascii();
    if let Some(at) = text.iter().position(|b| !b.is_ascii_hexdigit()) {
        let shown = char::from(text[at]);
        let shown = if shown.is_ascii_graphic() {
            format!("'{shown}'")
        } else {
            format!("byte 0x{:02x}", text[at])
        };
        bail!(
            "{name}: {shown} at position {} is not a hex digit (0-9, a-f): a key is 32, 48 or 64 hex digits",
            at + 1
        );
    }
    if !matches!(text.len(), 32 | 48 | 64) {
        bail!(
            "{name}: {} hex digits, but a key is 32, 48 or 64 (make one with `paraes keygen`)",
            text.len()
        );
    }
    Key::parse(text).with_context(|| name.to_string())
}

/// Opens a secret file (key or passphrase): refuses a directory, warns when other users can
/// read a regular file. Pipes (`<(...)`) and devices are read as streams.
fn open_secret(path: &Path, what: &str, warn: Warn<'_>) -> Result<(fs::File, String)> {
    let name = format!("{what} {}", path.display());
    let meta = fs::metadata(path).with_context(|| format!("cannot read {name}"))?;
    if meta.is_dir() {
        bail!("{name} is a directory, not a file");
    }
    if meta.is_file() {
        warn_if_readable(&meta, what, path, warn);
    }
    let file = fs::File::open(path).with_context(|| format!("cannot read {name}"))?;
    Ok((file, name))
}

/// Warns when other users can read a secret file.
fn warn_if_readable(meta: &fs::Metadata, what: &str, path: &Path, warn: Warn<'_>) {
    if meta.permissions().mode() & 0o077 != 0 {
        let shown = path.display();
        warn(&format!(
            "{what} {shown} can be read by other users: chmod 600 {shown}"
        ));
    }
}

/// The first line of a passphrase source.
fn first_line(reader: impl Read, name: &str) -> Result<Zeroizing<Vec<u8>>> {
    let mut contents = Zeroizing::new(Vec::with_capacity(MAX_PASSPHRASE_FILE as usize));
    reader
        .take(MAX_PASSPHRASE_FILE)
        .read_to_end(&mut contents)
        .with_context(|| format!("cannot read the passphrase from {name}"))?;
    let line = contents.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        bail!("the passphrase from {name} is empty: put the passphrase on its first line");
    }
    Ok(Zeroizing::new(line.to_vec()))
}

/// A small text file (identities, recipients).
fn read_text(path: &Path, what: &str) -> Result<Zeroizing<String>> {
    let shown = path.display();
    let mut contents = Zeroizing::new(Vec::with_capacity(MAX_TEXT_FILE as usize));
    fs::File::open(path)
        .and_then(|f| f.take(MAX_TEXT_FILE).read_to_end(&mut contents))
        .with_context(|| format!("cannot read {what} {shown}"))?;
    let text = std::str::from_utf8(&contents)
        .map(str::to_string)
        .map_err(|_| anyhow::anyhow!("{what} {shown} is not text"))?;
    Ok(Zeroizing::new(text))
}

/// The identities of an identity file, warning when other users can read it.
pub fn read_identity_file(path: &Path, warn: Warn<'_>) -> Result<Vec<SecretIdentity>> {
    if let Ok(meta) = fs::metadata(path) {
        if meta.is_file() {
            warn_if_readable(&meta, "identity file", path, warn);
        }
    }
    let text = read_text(path, "identity file")?;
    parse_identities(&text).with_context(|| format!("identity file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_hex_digit_is_named() {
        let text = b"00112233445566778899aabbccddeeXf";
        let e = parse_hex_key(text, "k").unwrap_err().to_string();
        assert!(e.contains("'X' at position 31"), "{e}");
        assert!(parse_hex_key(b"00112233445566778899aabbccddeeff", "k").is_ok());
        let e = parse_hex_key(b"0011", "k").unwrap_err().to_string();
        assert!(e.contains("4 hex digits"), "{e}");
    }

    #[test]
    fn raw_key_bytes_are_not_taken_for_text() {
        let raw: Vec<u8> = (0u8..32).collect();
        assert!(!looks_like_text(&raw));
        assert!(key_from(&raw[..], "k").is_ok());
        assert!(key_from(&b"00112233445566778899aabbccddeeff\n"[..], "k").is_ok());
    }
}
