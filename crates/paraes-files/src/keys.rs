//! Key material by the rules every front end shares: what a secret file holds (a key, paraes
//! identities, a PEM private key such as an OpenSSH key), a key file's contents (16, 24 or 32
//! raw bytes, or the same as hex text), identity files (paraes's, or an OpenSSH private key),
//! recipients files, and the short-passphrase rule. Pure functions over bytes, readers and
//! paths: nothing is prompted or printed, and errors are typed ([`KeyFileError`]) and name no
//! flag or keyword (the front ends add theirs, by the error's type). Errors never repeat what a
//! file holds: it may be a secret given in the wrong place.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use paraes_core::container::{
    is_identity_text, parse_identity_file, parse_recipients, AskPassphrase, ContainerError,
    PublicRecipient, SecretIdentity,
};
use paraes_core::Key;
use zeroize::Zeroizing;

/// Key files are tiny; anything bigger is not one (and is not read whole).
pub const MAX_KEY_FILE: u64 = 1024;
/// Identity and recipients files are small text files; a bigger one is refused whole (never
/// read in part: a recipients list cut short would seal for fewer recipients than it lists).
pub const MAX_TEXT_FILE: u64 = 1 << 20;
/// Passphrases shorter than this (in characters) are warned about when a file is encrypted
/// with one.
pub const SHORT_PASSPHRASE: usize = 10;

/// Why key material could not be used. `name` fields say what it is as messages call it ("key
/// file k.key", "the key on standard input").
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// Not a key (of the right length, in hex or raw bytes). The message says what a key is
    /// and nothing about what was given.
    #[error("{0} is not a key: a key is 32, 48 or 64 hex digits, or 16, 24 or 32 random bytes")]
    NotAKey(String),
    /// An identity file given where a key is expected.
    #[error("{0} holds an identity, not a key")]
    IdentityNotKey(String),
    /// A private key file (an SSH key) given where a key is expected.
    #[error("{0} holds a private key (an SSH key?), not a key")]
    PrivateKeyNotKey(String),
    /// A key file given where an identity is expected.
    #[error("{0} holds a key, not an identity")]
    KeyNotIdentity(String),
    /// An identity or recipients file that is not UTF-8 text.
    #[error("{0} is not text")]
    NotText(String),
    /// A directory given as a file.
    #[error("{0} is a directory, not a file")]
    Directory(String),
    /// A recipients file with no recipient in it.
    #[error("{0} lists no recipient")]
    NoRecipient(String),
    /// An identity or recipients file over [`MAX_TEXT_FILE`] bytes.
    #[error(
        "{0} is over 1 MiB, more than an identity or recipients file holds: split a long list \
         into several files"
    )]
    TooLarge(String),
    /// It could not be read.
    #[error("cannot read {name}")]
    Read {
        /// What was read.
        name: String,
        /// The system's error.
        #[source]
        source: io::Error,
    },
    /// Its identities or recipients do not parse (the source says why, naming no secret).
    #[error("{name}")]
    Parse {
        /// What was parsed.
        name: String,
        /// Why it does not parse.
        #[source]
        source: ContainerError,
    },
}

/// What secret-file contents hold, judged by the whole contents (a raw key may start with `#`
/// or `P`, so no first line decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretContents {
    /// paraes identities, one a line (with blank lines and `#` comments).
    Identities,
    /// A PEM private key (an OpenSSH key, an RSA key in PEM).
    PrivateKey,
    /// A key: 32, 48 or 64 hex digits, or 16, 24 or 32 bytes that are not text.
    Key,
    /// None of these.
    Unknown,
}

/// What `contents` hold.
pub fn secret_contents(contents: &[u8]) -> SecretContents {
    if is_identity_text(contents) {
        SecretContents::Identities
    } else if is_private_key_file(contents) {
        SecretContents::PrivateKey
    } else if looks_like_text(contents) {
        if is_hex_key(contents) {
            SecretContents::Key
        } else {
            SecretContents::Unknown
        }
    } else if matches!(contents.len(), 16 | 24 | 32) {
        SecretContents::Key
    } else {
        SecretContents::Unknown
    }
}

/// Whether contents are a PEM private key file (an SSH key): text whose first line is
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
    !text.is_empty() && text.iter().all(u8::is_ascii_graphic)
}

/// Whether `text` (surrounding whitespace ignored) is a key's hex: 32, 48 or 64 hex digits.
fn is_hex_key(text: &[u8]) -> bool {
    let text = text.trim_ascii();
    matches!(text.len(), 32 | 48 | 64) && text.iter().all(u8::is_ascii_hexdigit)
}

/// The key written as hex in `text` (surrounding whitespace ignored): a key given as text
/// (an environment variable, an argument), never raw bytes.
pub fn key_from_hex(text: &[u8], name: &str) -> Result<Key, KeyFileError> {
    if !is_hex_key(text) {
        return Err(KeyFileError::NotAKey(name.to_owned()));
    }
    Key::parse(text.trim_ascii()).map_err(|_| KeyFileError::NotAKey(name.to_owned()))
}

/// The key in key-file `contents` (raw bytes or hex text); an identity file or a private key
/// given instead is told as such.
pub fn key_from_contents(contents: &[u8], name: &str) -> Result<Key, KeyFileError> {
    if contents.len() as u64 > MAX_KEY_FILE {
        return Err(KeyFileError::NotAKey(name.to_owned()));
    }
    match secret_contents(contents) {
        SecretContents::Identities => Err(KeyFileError::IdentityNotKey(name.to_owned())),
        SecretContents::PrivateKey => Err(KeyFileError::PrivateKeyNotKey(name.to_owned())),
        SecretContents::Key => {
            Key::parse(contents).map_err(|_| KeyFileError::NotAKey(name.to_owned()))
        }
        SecretContents::Unknown => Err(KeyFileError::NotAKey(name.to_owned())),
    }
}

/// Reads at most `max` bytes from `reader` into a buffer sized once (reading never
/// reallocates, which would leave copies of a secret behind), wiped when dropped.
fn read_at_most(
    reader: impl Read,
    max: u64,
    name: &str,
) -> Result<Zeroizing<Vec<u8>>, KeyFileError> {
    let mut contents = Zeroizing::new(Vec::with_capacity(max as usize));
    reader
        .take(max)
        .read_to_end(&mut contents)
        .map_err(|source| KeyFileError::Read {
            name: name.to_owned(),
            source,
        })?;
    Ok(contents)
}

/// The whole of the identity or recipients file `file` (`name` says which), refused when it is
/// over [`MAX_TEXT_FILE`] bytes rather than cut short.
fn read_text_file(file: File, name: &str) -> Result<Zeroizing<Vec<u8>>, KeyFileError> {
    let contents = read_at_most(file, MAX_TEXT_FILE + 1, name)?;
    if contents.len() as u64 > MAX_TEXT_FILE {
        return Err(KeyFileError::TooLarge(name.to_owned()));
    }
    Ok(contents)
}

/// The key read from `reader` (a key file, a pipe, a descriptor): its contents as
/// [`key_from_contents`] takes them. A reader holding more than a key file can is not one.
pub fn key_from_reader(reader: impl Read, name: &str) -> Result<Key, KeyFileError> {
    let contents = read_at_most(reader, MAX_KEY_FILE + 1, name)?;
    key_from_contents(&contents, name)
}

/// Opens the secret file `path` (`name` says what it is in errors): a directory is refused,
/// pipes and devices are read as streams. Returns its metadata too, for a front end that warns
/// when other users can read it.
pub fn open_secret(path: &Path, name: &str) -> Result<(File, Metadata), KeyFileError> {
    let cannot_read = |source| KeyFileError::Read {
        name: name.to_owned(),
        source,
    };
    let meta = fs::metadata(path).map_err(cannot_read)?;
    if meta.is_dir() {
        return Err(KeyFileError::Directory(name.to_owned()));
    }
    let file = File::open(path).map_err(cannot_read)?;
    Ok((file, meta))
}

/// Whether other users may read a file with this metadata (a secret file should be mode 600).
pub fn readable_by_others(meta: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o077 != 0
}

/// The identities in identity-file `contents`: paraes's, one a line, or an OpenSSH private
/// key, whose passphrase `ask` is asked for when a stanza needs it (never before). `name` says
/// what it is in errors ("identity file id.txt"); `file_name` names it in the passphrase
/// question and in the advice of an SSH key's errors. A key file given instead is told as such.
pub fn identities_from_contents(
    contents: &[u8],
    name: &str,
    file_name: &str,
    ask: Arc<dyn AskPassphrase>,
) -> Result<Vec<SecretIdentity>, KeyFileError> {
    if secret_contents(contents) == SecretContents::Key {
        return Err(KeyFileError::KeyNotIdentity(name.to_owned()));
    }
    let text = std::str::from_utf8(contents).map_err(|_| KeyFileError::NotText(name.to_owned()))?;
    parse_identity_file(text, file_name, ask).map_err(|source| KeyFileError::Parse {
        name: name.to_owned(),
        source,
    })
}

/// The identities of the identity file `path`, as [`identities_from_contents`] reads them.
pub fn read_identity_file(
    path: &Path,
    ask: Arc<dyn AskPassphrase>,
) -> Result<Vec<SecretIdentity>, KeyFileError> {
    let file_name = path.display().to_string();
    let name = format!("identity file {file_name}");
    let (file, _) = open_secret(path, &name)?;
    let contents = read_text_file(file, &name)?;
    identities_from_contents(&contents, &name, &file_name, ask)
}

/// The recipients in recipients-file `contents` (at least one): paraes's and OpenSSH public
/// key lines, one a line, with blank lines and `#` comments.
pub fn recipients_from_contents(
    contents: &[u8],
    name: &str,
) -> Result<Vec<PublicRecipient>, KeyFileError> {
    let text = std::str::from_utf8(contents).map_err(|_| KeyFileError::NotText(name.to_owned()))?;
    let list = parse_recipients(text).map_err(|source| KeyFileError::Parse {
        name: name.to_owned(),
        source,
    })?;
    if list.is_empty() {
        return Err(KeyFileError::NoRecipient(name.to_owned()));
    }
    Ok(list)
}

/// The recipients of the recipients file `path`, as [`recipients_from_contents`] reads them.
pub fn read_recipients_file(path: &Path) -> Result<Vec<PublicRecipient>, KeyFileError> {
    let name = format!("recipients file {}", path.display());
    let (file, _) = open_secret(path, &name)?;
    let contents = read_text_file(file, &name)?;
    recipients_from_contents(&contents, &name)
}

/// The warning for a passphrase a file is encrypted with that is shorter than
/// [`SHORT_PASSPHRASE`] characters (bytes, if it is not UTF-8), if it is.
pub fn short_passphrase_warning(passphrase: &[u8]) -> Option<String> {
    let length = std::str::from_utf8(passphrase).map_or(passphrase.len(), |s| s.chars().count());
    (length < SHORT_PASSPHRASE).then(|| {
        format!(
            "this passphrase is shorter than {SHORT_PASSPHRASE} characters: Argon2id slows \
             guessing, but a short passphrase can still be guessed; prefer a long one or a key \
             file"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks no one: the tests hold no locked key.
    struct NoAnswer;

    impl AskPassphrase for NoAnswer {
        fn ask(&self, _what: &str) -> Result<Zeroizing<Vec<u8>>, String> {
            Err("no one to ask".into())
        }
    }

    const HEX_KEY: &str = "00112233445566778899aabbccddeeff";

    #[test]
    fn bad_key_text_is_refused_in_words_that_do_not_depend_on_it() {
        let expected = KeyFileError::NotAKey("k".into()).to_string();
        for text in [
            &b"00112233445566778899aabbccddeeXf"[..],
            b"X0112233445566778899aabbccddeeff",
            b"0011",
            b"00112233445566778899aabbccddeeff0",
            b"\xff\xfehunter2\x01",
        ] {
            assert_eq!(key_from_hex(text, "k").unwrap_err().to_string(), expected);
            assert_eq!(
                key_from_contents(text, "k").unwrap_err().to_string(),
                expected
            );
        }
        assert!(!expected.contains("position"), "{expected}");
        assert!(key_from_hex(HEX_KEY.as_bytes(), "k").is_ok());
        assert!(key_from_hex(format!(" {HEX_KEY}\n").as_bytes(), "k").is_ok());
    }

    #[test]
    fn raw_key_bytes_are_not_taken_for_text() {
        let raw: Vec<u8> = (0u8..32).collect();
        assert_eq!(secret_contents(&raw), SecretContents::Key);
        assert!(key_from_reader(&raw[..], "k").is_ok());
        assert!(key_from_reader(format!("{HEX_KEY}\n").as_bytes(), "k").is_ok());
        // A raw key may start like a comment or an identity: the whole content decides.
        let mut raw = raw;
        raw[0] = b'#';
        assert!(key_from_contents(&raw, "k").is_ok());
        raw[..7].copy_from_slice(b"PARAES-");
        assert!(key_from_contents(&raw, "k").is_ok());
        let too_long = vec![b'0'; MAX_KEY_FILE as usize + 1];
        assert!(matches!(
            key_from_reader(&too_long[..], "k"),
            Err(KeyFileError::NotAKey(_))
        ));
    }

    #[test]
    fn identity_and_private_key_files_are_not_keys() {
        let identity = SecretIdentity::generate_x25519().unwrap();
        let text = format!("# mine\n{}\n", &*identity.to_secret_text());
        assert_eq!(secret_contents(text.as_bytes()), SecretContents::Identities);
        let err = key_from_contents(text.as_bytes(), "key file id").unwrap_err();
        assert!(matches!(err, KeyFileError::IdentityNotKey(_)), "{err}");
        assert_eq!(err.to_string(), "key file id holds an identity, not a key");
        for pem in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n",
            "\n-----BEGIN RSA PRIVATE KEY-----\r\nMII\r\n",
        ] {
            assert_eq!(secret_contents(pem.as_bytes()), SecretContents::PrivateKey);
            let err = key_from_contents(pem.as_bytes(), "k").unwrap_err();
            assert!(matches!(err, KeyFileError::PrivateKeyNotKey(_)), "{err}");
        }
        assert_eq!(
            secret_contents(b"-----BEGIN PUBLIC KEY-----\n"),
            SecretContents::Unknown
        );
    }

    #[test]
    fn a_key_given_as_an_identity_is_named_as_a_key() {
        let raw: Vec<u8> = (100u8..132).collect();
        for key in [
            HEX_KEY.as_bytes(),
            format!("{HEX_KEY}{HEX_KEY}\n").as_bytes(),
            &raw,
        ] {
            let err = identities_from_contents(key, "identity file k", "k", Arc::new(NoAnswer))
                .unwrap_err();
            assert!(matches!(err, KeyFileError::KeyNotIdentity(_)), "{err}");
            assert_eq!(
                err.to_string(),
                "identity file k holds a key, not an identity"
            );
        }
        let identity = SecretIdentity::generate_hybrid().unwrap();
        let text = format!("{}\n", &*identity.to_secret_text());
        let read = identities_from_contents(text.as_bytes(), "i", "i", Arc::new(NoAnswer));
        assert_eq!(read.unwrap()[0].recipient(), identity.recipient());
        let err = identities_from_contents(b"# nothing\n", "i", "i", Arc::new(NoAnswer));
        assert!(matches!(
            err,
            Err(KeyFileError::Parse {
                source: ContainerError::NoIdentity,
                ..
            })
        ));
        assert!(matches!(
            identities_from_contents(b"\xff\xfe\x00", "i", "i", Arc::new(NoAnswer)),
            Err(KeyFileError::NotText(_))
        ));
    }

    #[test]
    fn recipients_files_list_at_least_one() {
        let recipient = SecretIdentity::generate_x25519().unwrap().recipient();
        let text = format!("# team\n{recipient}\n");
        let list = recipients_from_contents(text.as_bytes(), "r").unwrap();
        assert_eq!(list, vec![recipient]);
        let err = recipients_from_contents(b"# nobody\n", "recipients file r").unwrap_err();
        assert_eq!(err.to_string(), "recipients file r lists no recipient");
    }

    /// A recipients or identity file over the limit is refused whole, never read in part: cut
    /// at the limit on a line's end, the first part alone parses, and a file sealed for it would
    /// leave out every recipient after the cut.
    #[test]
    fn a_text_file_over_the_limit_is_refused_not_cut_short() {
        let dir = tempfile::tempdir().unwrap();
        let first = SecretIdentity::generate_x25519().unwrap().recipient();
        let second = SecretIdentity::generate_x25519().unwrap().recipient();
        let head = format!("{first}\n");
        let filler = MAX_TEXT_FILE as usize - head.len() - 2;
        let text = format!("{head}#{}\n{second}\n", "x".repeat(filler));
        assert_eq!(text.find(&second.to_string()), Some(MAX_TEXT_FILE as usize));
        let path = dir.path().join("team.txt");
        fs::write(&path, &text).unwrap();
        let err = read_recipients_file(&path).unwrap_err();
        assert!(matches!(err, KeyFileError::TooLarge(_)), "{err:?}");
        assert!(err.to_string().contains("split a long list"), "{err}");
        let err = read_identity_file(&path, Arc::new(NoAnswer)).unwrap_err();
        assert!(matches!(err, KeyFileError::TooLarge(_)), "{err:?}");
        // At the limit exactly, it is read whole.
        fs::write(&path, &text.as_bytes()[..MAX_TEXT_FILE as usize]).unwrap();
        assert_eq!(read_recipients_file(&path).unwrap(), vec![first]);
    }

    #[test]
    fn files_are_read_with_their_names_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_identity_file(dir.path(), Arc::new(NoAnswer)).unwrap_err();
        assert!(matches!(err, KeyFileError::Directory(_)), "{err}");
        let missing = dir.path().join("missing");
        let err = read_recipients_file(&missing).unwrap_err();
        assert!(
            err.to_string().starts_with("cannot read recipients file "),
            "{err}"
        );
        let key_file = dir.path().join("k.key");
        fs::write(&key_file, HEX_KEY).unwrap();
        let err = read_identity_file(&key_file, Arc::new(NoAnswer)).unwrap_err();
        assert!(matches!(err, KeyFileError::KeyNotIdentity(_)), "{err}");
        let (file, _) = open_secret(&key_file, "key file k.key").unwrap();
        assert!(key_from_reader(file, "key file k.key").is_ok());
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&key_file, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(readable_by_others(&fs::metadata(&key_file).unwrap()));
        fs::set_permissions(&key_file, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(!readable_by_others(&fs::metadata(&key_file).unwrap()));
    }

    #[test]
    fn short_passphrases_are_counted_in_characters() {
        assert!(short_passphrase_warning(b"hunter2").is_some());
        assert!(short_passphrase_warning("ünïcödé".as_bytes()).is_some());
        assert!(short_passphrase_warning("ünïcödé ok".as_bytes()).is_none());
        assert!(short_passphrase_warning(b"correct horse").is_none());
        assert!(short_passphrase_warning(b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6").is_none());
    }
}
