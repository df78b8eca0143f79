//! Reading the key sources of a plan: key files (regular files, pipes such as `<(...)`,
//! standard input), `--key-fd`, `--key-env`, `--key`, passphrases (terminal, file, standard
//! input), recipients (paraes's, and OpenSSH public key lines) and identity files (paraes's, and
//! OpenSSH private keys, whose passphrase is asked on the terminal only when a stanza names the
//! key, and once however often the key is given); turned into the container's recipients (enc),
//! the unlock set (dec, rekey) or the one raw key (--raw). Secrets stay in zeroizing buffers.

use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::container::{
    parse_identity_file, parse_recipients, Argon2Params, Identity, PublicRecipient, Recipient,
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
            let recipient: PublicRecipient =
                text.parse().with_context(|| recipient_context(text))?;
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
            // As bytes: `std::env::var`'s error for a value that is not UTF-8 holds the value
            // and prints it.
            let value = std::env::var_os(var)
                .ok_or_else(|| anyhow!("environment variable {var} is not set"))?;
            let bytes = Zeroizing::new(value.into_vec());
            parse_hex_key(&bytes, &format!("the key in ${var}"))
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
        return Err(not_a_key(name));
    }
    if paraes_core::container::is_identity_text(&contents) {
        bail!("{name} holds an identity, not a key: give it with -i");
    }
    if is_private_key_file(&contents) {
        bail!("{name} holds a private key (an SSH key?), not a key: give it with -i");
    }
    if looks_like_text(&contents) {
        return parse_hex_key(&contents, name);
    }
    Key::parse(&contents).map_err(|_| not_a_key(name))
}

/// Whether key-file contents are a PEM private key file (an SSH key): text whose first line is
/// `-----BEGIN ... PRIVATE KEY-----`.
fn is_private_key_file(contents: &[u8]) -> bool {
    let start = contents.trim_ascii_start();
    let first = start.split(|&b| b == b'\n').next().unwrap_or_default();
    first.starts_with(b"-----BEGIN ") && first.trim_ascii_end().ends_with(b"PRIVATE KEY-----")
}

/// Whether key bytes are meant as hex text: printable ASCII and whitespace only (32 random
/// raw bytes are all printable with probability about 10^-14).
fn looks_like_text(bytes: &[u8]) -> bool {
    let text = bytes.trim_ascii();
    !text.is_empty() && text.iter().all(|b| b.is_ascii_graphic())
}

/// Parses a key written as hex (surrounding whitespace ignored).
fn parse_hex_key(text: &[u8], name: &str) -> Result<Key> {
    let text = text.trim_ascii();
    if !matches!(text.len(), 32 | 48 | 64) || !text.iter().all(u8::is_ascii_hexdigit) {
        return Err(not_a_key(name));
    }
    Key::parse(text).map_err(|_| not_a_key(name))
}

/// The error for key text or bytes that are not a key. It says what a key is and nothing about
/// what was given (no character, position or length of it): that may be a passphrase or
/// another secret given by mistake.
fn not_a_key(name: &str) -> anyhow::Error {
    anyhow!(
        "{name} is not a key: a key is 32, 48 or 64 hex digits, or 16, 24 or 32 random bytes \
         (make one with `paraes keygen`; a passphrase goes in --passphrase-file)"
    )
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
    // Moved into the String, not copied; a buffer that is not text is wiped on the way out.
    match String::from_utf8(std::mem::take(&mut *contents)) {
        Ok(text) => Ok(Zeroizing::new(text)),
        Err(e) => {
            drop(Zeroizing::new(e.into_bytes()));
            bail!("{what} {shown} is not text")
        }
    }
}

/// The identities of an identity file (paraes's, or an OpenSSH private key, whose passphrase
/// is asked on the terminal when a stanza names it), warning when other users can read it.
pub fn read_identity_file(path: &Path, warn: Warn<'_>) -> Result<Vec<SecretIdentity>> {
    let text = read_text(path, "identity file")?;
    let name = path.display().to_string();
    let identities = parse_identity_file(&text, &name, Arc::new(crate::prompt::SshKeyPassphrase))
        .with_context(|| format!("identity file {name}"))?;
    // Only a file that holds identities is a secret (a public key given by mistake is not).
    if let Ok(meta) = fs::metadata(path) {
        if meta.is_file() {
            warn_if_readable(&meta, "identity file", path, warn);
        }
    }
    Ok(identities)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_key_text_is_refused_in_words_that_do_not_depend_on_it() {
        let expected = not_a_key("k").to_string();
        for text in [
            &b"00112233445566778899aabbccddeeXf"[..],
            b"X0112233445566778899aabbccddeeff",
            b"0011",
            b"00112233445566778899aabbccddeeff0",
        ] {
            assert_eq!(parse_hex_key(text, "k").unwrap_err().to_string(), expected);
        }
        assert!(!expected.contains("position"), "{expected}");
        assert!(parse_hex_key(b"00112233445566778899aabbccddeeff", "k").is_ok());
    }

    #[test]
    fn identity_files_are_told_by_their_whole_content() {
        let mut raw: Vec<u8> = (0u8..32).collect();
        raw[0] = b'#';
        assert!(!paraes_core::container::is_identity_text(&raw));
        assert!(key_from(&raw[..], "k").is_ok());
        raw[..7].copy_from_slice(b"PARAES-");
        assert!(!paraes_core::container::is_identity_text(&raw));
        assert!(key_from(&raw[..], "k").is_ok());
        for text in [
            "# me\nPARAES-SECRET-KEY-1QQQ\n",
            "  paraes-pq-secret-key-1qqq\r\n\n# two\nPARAES-SECRET-KEY-1QQQ",
        ] {
            assert!(
                paraes_core::container::is_identity_text(text.as_bytes()),
                "{text}"
            );
        }
        for text in [
            "# only a comment\n",
            "# key\n00112233",
            "PARAES-X\u{7}\n",
            "",
        ] {
            assert!(
                !paraes_core::container::is_identity_text(text.as_bytes()),
                "{text}"
            );
        }
    }

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

    #[test]
    fn private_key_files_are_not_keys() {
        for text in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n",
            "\n-----BEGIN RSA PRIVATE KEY-----\r\nMII\r\n",
        ] {
            assert!(is_private_key_file(text.as_bytes()), "{text}");
            let err = key_from(text.as_bytes(), "k").unwrap_err().to_string();
            assert!(err.contains("give it with -i"), "{err}");
        }
        assert!(!is_private_key_file(b"-----BEGIN PUBLIC KEY-----\n"));
        assert!(!is_private_key_file(b"00112233445566778899aabbccddeeff"));
    }

    #[test]
    fn raw_key_bytes_are_not_taken_for_text() {
        let raw: Vec<u8> = (0u8..32).collect();
        assert!(!looks_like_text(&raw));
        assert!(key_from(&raw[..], "k").is_ok());
        assert!(key_from(&b"00112233445566778899aabbccddeeff\n"[..], "k").is_ok());
    }
}
