//! Reading the key sources of a plan: key files (regular files, pipes such as `<(...)`,
//! standard input), `--key-fd`, `--key-env`, `--key`, passphrases (terminal, file, standard
//! input), recipients (paraes's, and OpenSSH public key lines) and identity files (paraes's, and
//! OpenSSH private keys, whose passphrase is asked on the terminal only when a stanza names the
//! key, and once however often the key is given); turned into the container's recipients (enc),
//! the unlock set (dec, rekey) or the one raw key (--raw). Secrets stay in zeroizing buffers.

use std::fs;
use std::io::{IsTerminal, Read};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::container::{
    Argon2Params, Identity, PublicRecipient, Recipient, SecretIdentity, Unlock,
};
use paraes_core::{Key, KeySize};
use paraes_files::keys::{
    key_from_hex, key_from_reader, read_recipients_file, readable_by_others, secret_contents,
    short_passphrase_warning, SecretContents,
};
use zeroize::Zeroizing;

use crate::plan::{KeyPlan, KeySource, PassphraseSource};

/// Only the start of a passphrase file is read (its first line is the passphrase).
const MAX_PASSPHRASE_FILE: u64 = 64 * 1024;
/// What the recipients' texts start with (either case), the only texts an error may repeat:
/// paraes's, and OpenSSH public key lines (public too).
const RECIPIENT_PREFIXES: [&str; 5] = ["paraes1", "paraespq1", "ssh-", "ecdsa-", "sk-"];

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
                let file = not_a_terminal(file, &name, TYPED_PASSPHRASE)?;
                first_line(file, &name, confirm)?
            }
            Some(PassphraseSource::Stdin) => {
                let stdin = stdin_unbuffered()?;
                let stdin = not_a_terminal(stdin, "standard input", TYPED_PASSPHRASE)?;
                first_line(stdin, "standard input", confirm)?
            }
        };
        if let Some(warning) = short_passphrase_warning(&passphrase).filter(|_| confirm) {
            warn(&warning);
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
            let recipient: PublicRecipient =
                text.parse().with_context(|| recipient_context(text))?;
            out.push(Recipient::Public(recipient));
        }
        for path in &self.recipients_files {
            out.extend(
                read_recipients_file(path)?
                    .into_iter()
                    .map(Recipient::Public),
            );
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
        // One key given twice (`-i k -i k`, two paths to one file, a copy without its
        // passphrase) is one identity: its passphrase is asked at most once.
        Ok(Unlock {
            identities: Identity::merge_same_keys(identities),
            max_kdf_mib: self.max_kdf_mib,
            allow_unverified_slot: self.allow_unverified_slot,
        })
    }
}

/// Whether `text` starts with `prefix`, in either case.
fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// What an error about `-r TEXT` calls it: `-r` and the start of the recipient, or just `-r`
/// when the text does not start like a recipient (it may be an identity, a key or a passphrase
/// given by mistake, none of which an error may repeat).
fn recipient_context(text: &str) -> String {
    let text = text.trim();
    if !RECIPIENT_PREFIXES
        .iter()
        .any(|prefix| starts_with_ignore_case(text, prefix))
    {
        return "-r".to_string();
    }
    if text.chars().count() > 24 {
        format!("-r {}...", text.chars().take(20).collect::<String>())
    } else {
        format!("-r {text}")
    }
}

/// Reads one symmetric key.
fn read_key(source: &KeySource, warn: Warn<'_>) -> Result<Key> {
    match source {
        KeySource::File(path) => {
            let (file, name) = open_secret(path, "key file", warn)?;
            Ok(key_from_reader(
                not_a_terminal(file, &name, TYPED_KEY)?,
                &name,
            )?)
        }
        KeySource::Stdin => {
            let name = "the key on standard input";
            let stdin = not_a_terminal(stdin_unbuffered()?, "standard input", TYPED_KEY)?;
            Ok(key_from_reader(stdin, name)?)
        }
        KeySource::Fd(fd) => {
            // Reopening /dev/fd/N reads the descriptor without taking ownership of it.
            let path = PathBuf::from(format!("/dev/fd/{fd}"));
            let file = fs::File::open(&path)
                .with_context(|| format!("cannot read the key from file descriptor {fd} (is it open? e.g. --key-fd 3 3<my.key)"))?;
            let name = format!("file descriptor {fd}");
            let file = not_a_terminal(file, &name, TYPED_KEY)?;
            Ok(key_from_reader(
                file,
                &format!("the key on file descriptor {fd}"),
            )?)
        }
        KeySource::Env(var) => {
            // As bytes: `std::env::var`'s error for a value that is not UTF-8 holds the value
            // and prints it.
            let value = std::env::var_os(var)
                .ok_or_else(|| anyhow!("environment variable {var} is not set"))?;
            let bytes = Zeroizing::new(value.into_vec());
            Ok(key_from_hex(&bytes, &format!("the key in ${var}"))?)
        }
        KeySource::Hex(text) => {
            warn("--key puts the key in the process list where other users can see it: prefer --key-file, --key-fd or --key-env");
            Ok(key_from_hex(text.as_bytes(), "--key")?)
        }
    }
}

/// What to do instead of typing a passphrase where it shows.
const TYPED_PASSPHRASE: &str =
    "use -p, which asks for the passphrase on the terminal without echo (--passphrase-file - is for a pipe)";
/// What to do instead of typing a key where it shows.
const TYPED_KEY: &str = "pipe the key in, or give it with --key-file, --key-fd or --key-env";

/// `file`, unless it is a terminal: a secret typed there shows on the screen (and in its
/// scrollback) as it is typed, since nothing turns the echo off. `-p` asks without echo.
fn not_a_terminal(file: fs::File, name: &str, instead: &str) -> Result<fs::File> {
    if file.is_terminal() {
        bail!("{name} is a terminal, where a secret shows as it is typed: {instead}");
    }
    Ok(file)
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

/// Opens a secret file (key or passphrase): refuses a directory, warns when other users can
/// read a regular file. Pipes (`<(...)`) and devices are read as streams.
fn open_secret(path: &Path, what: &str, warn: Warn<'_>) -> Result<(fs::File, String)> {
    let name = format!("{what} {}", path.display());
    let (file, meta) = paraes_files::keys::open_secret(path, &name)?;
    warn_if_readable(&meta, what, path, warn);
    Ok((file, name))
}

/// Warns when other users can read a secret file (a regular one: a pipe is no file to chmod).
fn warn_if_readable(meta: &fs::Metadata, what: &str, path: &Path, warn: Warn<'_>) {
    if meta.is_file() && readable_by_others(meta) {
        let shown = path.display();
        warn(&format!(
            "{what} {shown} can be read by other users: chmod 600 {shown}"
        ));
    }
}

/// The first line of a passphrase source; one that anyone may know is refused when `sealing`
/// (what is already sealed with it still opens).
fn first_line(reader: impl Read, name: &str, sealing: bool) -> Result<Zeroizing<Vec<u8>>> {
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
    if sealing {
        refuse_public_first_line(&contents, line, name)?;
    }
    Ok(Zeroizing::new(line.to_vec()))
}

/// Refuses a passphrase file whose first line anyone may know: an identity file's (its comment,
/// the same in every one), a PEM file's (`-----BEGIN OPENSSH PRIVATE KEY-----`, a certificate's),
/// a public key (a recipient). Taken as the passphrase, it would open what it sealed for all.
fn refuse_public_first_line(contents: &[u8], line: &[u8], name: &str) -> Result<()> {
    if secret_contents(contents) == SecretContents::Identities {
        bail!(
            "{name} holds an identity, not a passphrase, and its first line is no secret: give it \
             with -i to open a file, its recipient (`paraes keygen -y FILE`) with -r to encrypt"
        );
    }
    let text = std::str::from_utf8(line).unwrap_or_default().trim();
    if text.starts_with("-----BEGIN ") {
        bail!(
            "the first line of {name} is a PEM header, the same in every such file, not a \
             passphrase: a private key (an SSH key) goes with -i, a public key with -r"
        );
    }
    if text.parse::<PublicRecipient>().is_ok() {
        bail!(
            "the first line of {name} is a public key (a recipient), not a passphrase: anyone \
             who has it could open the file: encrypt to it with -r"
        );
    }
    Ok(())
}

/// The identities of an identity file (paraes's, or an OpenSSH private key, whose passphrase
/// is asked on the terminal when a stanza names it), warning when other users can read it.
pub fn read_identity_file(path: &Path, warn: Warn<'_>) -> Result<Vec<SecretIdentity>> {
    let identities =
        paraes_files::keys::read_identity_file(path, Arc::new(crate::prompt::SshKeyPassphrase))?;
    // Only a file that holds identities is a secret (a public key given by mistake is not).
    if let Ok(meta) = fs::metadata(path) {
        warn_if_readable(&meta, "identity file", path, warn);
    }
    Ok(identities)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_recipients_are_repeated_in_errors() {
        assert_eq!(recipient_context("PARAES-SECRET-KEY-1QQQQ"), "-r");
        assert_eq!(recipient_context("00112233445566778899aabbccddeeff"), "-r");
        assert_eq!(recipient_context(" paraes1qqq "), "-r paraes1qqq");
        assert_eq!(
            recipient_context("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI me"),
            "-r ssh-ed25519 AAAAC3Nz..."
        );
        assert_eq!(
            recipient_context("PARAESPQ1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"),
            "-r PARAESPQ1QQQQQQQQQQQ..."
        );
    }
}
