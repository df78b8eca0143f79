//! Key arguments as the CLI takes them, read by the same rules (`paraes_files::keys`): a key is
//! a key file's contents (16, 24 or 32 raw bytes, or the same as hex text) given as bytes, or
//! the path of such a file (str or os.PathLike); an identity is an identity file's text
//! (paraes's `PARAES-SECRET-KEY-1...` lines, comments and all, or an OpenSSH private key) given
//! as bytes or str, or its path; a recipient is a `paraes1...`/`paraespq1...` str or an OpenSSH
//! public key line (`ssh-ed25519 ...`, `ssh-rsa ...`), or the path of a recipients file
//! (os.PathLike); a passphrase is str (UTF-8) or bytes. A locked SSH key is unlocked with
//! `ssh_passphrase=`, never by a prompt. A str taken as a path where no file is found is never
//! shown in an error: it may be a key's hex or a passphrase in the wrong place.

use std::path::PathBuf;
use std::sync::Arc;

use paraes_core::container::{
    Argon2Params, AskPassphrase, Identity, PublicRecipient, Recipient, SecretIdentity, Unlock,
    DEFAULT_MAX_KDF_MIB,
};
use paraes_core::Key;
use paraes_files::keys::{self as rules, KeyFileError, SecretContents};
use paraes_files::FilesRead;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use zeroize::Zeroizing;

use crate::buffer::Exported;
use crate::errors;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(generate_key, m)?)?;
    m.add_function(wrap_pyfunction!(generate_identity, m)?)?;
    m.add_function(wrap_pyfunction!(recipient_of, m)?)?;
    Ok(())
}

/// Which argument a value came in, for the error of a str that names no file.
#[derive(Clone, Copy)]
enum Argument {
    Keys,
    Identities,
}

/// What a key or identity argument holds: its contents, or where to read them.
enum Source {
    /// The contents, and how they were given ("bytes", "a str").
    Contents(Zeroizing<Vec<u8>>, &'static str),
    /// A path; `from_str` when it came as a str, which may be key material given by mistake
    /// (a key's hex, a passphrase): its text is then never shown unless a file is there.
    Path { path: PathBuf, from_str: bool },
}

impl Source {
    /// A bytes-like object is the contents; a str or os.PathLike is a path, except a str given
    /// as an identity that holds (or starts like) an identity file's text.
    fn of(obj: &Bound<'_, PyAny>, argument: Argument) -> PyResult<Self> {
        let what = match argument {
            Argument::Keys => "a key",
            Argument::Identities => "an identity",
        };
        if let Ok(text) = obj.cast::<PyString>() {
            let text = text.to_str()?;
            if matches!(argument, Argument::Identities) && is_identity_text(text) {
                let contents = Zeroizing::new(text.as_bytes().to_vec());
                return Ok(Source::Contents(contents, "a str"));
            }
            return Ok(Source::Path {
                path: PathBuf::from(text),
                from_str: true,
            });
        }
        if let Ok(exported) = Exported::new(obj, what) {
            let contents = Zeroizing::new(exported.bytes().to_vec());
            return Ok(Source::Contents(contents, "bytes"));
        }
        obj.extract::<PathBuf>()
            .map(|path| Source::Path {
                path,
                from_str: false,
            })
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "{what} must be bytes (the contents) or a path (str or os.PathLike)"
                ))
            })
    }
}

/// Whether a str given as an identity is an identity file's text rather than its path: it
/// holds paraes identities or a private key (an OpenSSH key), or starts like an identity (so
/// that a damaged one is told as such, not looked for as a file).
fn is_identity_text(text: &str) -> bool {
    const PREFIX: &[u8] = b"PARAES-";
    let starts_like_one = text
        .trim_start()
        .as_bytes()
        .get(..PREFIX.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(PREFIX));
    starts_like_one
        || matches!(
            rules::secret_contents(text.as_bytes()),
            SecretContents::Identities | SecretContents::PrivateKey
        )
}

/// The error of a key file's rules for a path that came as `from_str`: where no file could be
/// looked at, the str is not shown (the OS's reason is); otherwise the rules' error.
fn path_error(e: KeyFileError, argument: Argument, from_str: bool) -> PyErr {
    match e {
        KeyFileError::Read { source, .. } if from_str => unshown_path_error(&source, argument),
        other => errors::key_file(other),
    }
}

/// The error for a str taken as a path where no file can be looked at: it may be a key's hex
/// or a passphrase given in the wrong place, so the text is not shown (the OS's reason is).
fn unshown_path_error(e: &std::io::Error, argument: Argument) -> PyErr {
    let (given, instead) = match argument {
        Argument::Identities => (
            "identities: a str is an identity's text (PARAES-SECRET-KEY-1..., or an OpenSSH private key) or the path of an identity file,",
            "pass the identity's text (or its bytes)",
        ),
        Argument::Keys => (
            "keys: a str is the path of a key file,",
            "pass the key as bytes (bytes.fromhex(...)) and a passphrase as passphrase=",
        ),
    };
    let found = if e.kind() == std::io::ErrorKind::NotFound {
        "and none exists there"
    } else {
        "and that path cannot be looked at"
    };
    errors::os_error(
        e,
        &format!("{given} {found}; {instead} (the str is not shown: it may be secret)"),
    )
}

/// One symmetric key from a key argument.
fn read_key(obj: &Bound<'_, PyAny>) -> PyResult<Key> {
    match Source::of(obj, Argument::Keys)? {
        Source::Contents(contents, given) => {
            rules::key_from_contents(&contents, &format!("the key given as {given}"))
                .map_err(errors::key_file)
        }
        Source::Path { path, from_str } => {
            let name = format!("key file {}", path.display());
            rules::open_secret(&path, &name)
                .and_then(|(file, _)| rules::key_from_reader(file, &name))
                .map_err(|e| path_error(e, Argument::Keys, from_str))
        }
    }
}

/// The secret identities of an identity argument; a locked SSH key asks `ask`.
fn read_identities(
    obj: &Bound<'_, PyAny>,
    ask: &Arc<dyn AskPassphrase>,
) -> PyResult<Vec<SecretIdentity>> {
    match Source::of(obj, Argument::Identities)? {
        Source::Contents(contents, given) => rules::identities_from_contents(
            &contents,
            "the identity given",
            &format!("(given as {given})"),
            Arc::clone(ask),
        )
        .map_err(errors::key_file),
        Source::Path { path, from_str } => rules::read_identity_file(&path, Arc::clone(ask))
            .map_err(|e| path_error(e, Argument::Identities, from_str)),
    }
}

/// The public recipients of a recipient argument: a recipient's text, or a recipients file.
fn read_recipients(obj: &Bound<'_, PyAny>) -> PyResult<Vec<PublicRecipient>> {
    if let Ok(text) = obj.cast::<PyString>() {
        let recipient: PublicRecipient = text.to_str()?.trim().parse().map_err(
            |e: paraes_core::container::ContainerError| {
                PyValueError::new_err(errors::one_line(&e.to_string()))
            },
        )?;
        return Ok(vec![recipient]);
    }
    let path: PathBuf = obj.extract().map_err(|_| {
        PyTypeError::new_err(
            "a recipient is a str (paraes1..., paraespq1..., or an ssh-ed25519/ssh-rsa public key line) or the path of a recipients file (os.PathLike)",
        )
    })?;
    rules::read_recipients_file(&path).map_err(errors::key_file)
}

/// A passphrase argument's bytes (str as UTF-8); `keyword` names the argument.
fn passphrase(obj: &Bound<'_, PyAny>, keyword: &str) -> PyResult<Zeroizing<Vec<u8>>> {
    let bytes = if let Ok(text) = obj.cast::<PyString>() {
        Zeroizing::new(text.to_str()?.as_bytes().to_vec())
    } else if let Ok(bytes) = obj.cast::<PyBytes>() {
        Zeroizing::new(bytes.as_bytes().to_vec())
    } else {
        return Err(PyTypeError::new_err(format!(
            "{keyword}= takes a str or bytes"
        )));
    };
    if bytes.is_empty() {
        return Err(PyValueError::new_err(format!("{keyword}= is empty")));
    }
    Ok(bytes)
}

/// A list argument as its items (a lone str or bytes is refused: it is almost surely one item
/// given without its list); `None` is an empty list.
fn items<'py>(obj: Option<&Bound<'py, PyAny>>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let Some(obj) = obj.filter(|obj| !obj.is_none()) else {
        return Ok(Vec::new());
    };
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "{what} is a list: write {what}=[...] even for one"
        )));
    }
    obj.try_iter()?.collect()
}

/// An optional argument that was given (not left out, not `None`).
fn given<'a, 'py>(obj: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    obj.filter(|obj| !obj.is_none())
}

/// Notes each of `objs` given as the path of a file (`what` says what kind, as "key file") in
/// `read`: an output must not be one of them.
fn note_paths(
    objs: Option<&Bound<'_, PyAny>>,
    keyword: &str,
    what: &str,
    argument: Option<Argument>,
    read: &mut FilesRead,
) -> PyResult<()> {
    for obj in items(objs, keyword)? {
        let path = match argument {
            Some(argument) => match Source::of(&obj, argument) {
                Ok(Source::Path { path, .. }) => path,
                _ => continue,
            },
            None => match obj.extract::<PathBuf>() {
                Ok(path) => path,
                Err(_) => continue,
            },
        };
        read.path(format!("{what} {}", path.display()), &path);
    }
    Ok(())
}

/// The files a call reads, which its output must not be: the key files among `keys`, and the
/// files among `others` (its argument, keyword, and what its files are called), read as
/// `argument` says ([`note_paths`]).
fn files_read(
    keys: Option<&Bound<'_, PyAny>>,
    (others, keyword, what): (Option<&Bound<'_, PyAny>>, &str, &str),
    argument: Option<Argument>,
) -> PyResult<FilesRead> {
    let mut read = FilesRead::new();
    note_paths(keys, "keys", "key file", Some(Argument::Keys), &mut read)?;
    note_paths(others, keyword, what, argument, &mut read)?;
    Ok(read)
}

/// The keyword arguments that say who can open a new container (`encrypt_file`, `Writer`).
pub struct SealArgs<'a, 'py> {
    pub keys: Option<&'a Bound<'py, PyAny>>,
    pub recipients: Option<&'a Bound<'py, PyAny>>,
    pub passphrase: Option<&'a Bound<'py, PyAny>>,
}

impl SealArgs<'_, '_> {
    /// The key and recipients files among the arguments, which the output must not be.
    pub fn files_read(&self) -> PyResult<FilesRead> {
        let recipients = (self.recipients, "recipients", "recipients file");
        files_read(self.keys, recipients, None)
    }

    /// One stanza per key, the passphrase (a short one is warned about, as the CLI does, with
    /// a `UserWarning`), and each public recipient.
    pub fn recipients(&self) -> PyResult<Vec<Recipient>> {
        let mut out = Vec::new();
        for key in items(self.keys, "keys")? {
            out.push(Recipient::Key(read_key(&key)?));
        }
        if let Some(pass) = given(self.passphrase) {
            let pass = passphrase(pass, "passphrase")?;
            if let Some(warning) = rules::short_passphrase_warning(&pass) {
                errors::warn(&warning)?;
            }
            let params =
                Argon2Params::recommended().map_err(|e| errors::Error::new_err(e.to_string()))?;
            out.push(Recipient::Passphrase(pass, params));
        }
        for recipient in items(self.recipients, "recipients")? {
            out.extend(
                read_recipients(&recipient)?
                    .into_iter()
                    .map(Recipient::Public),
            );
        }
        if out.is_empty() {
            return Err(PyValueError::new_err(
                "no keys, recipients or passphrase: a container needs at least one way to open it",
            ));
        }
        Ok(out)
    }
}

/// The keyword arguments that open a container (`decrypt_file`, `Reader`), as the CLI's
/// `-k`, `-p`, `-i`, `--max-kdf-mib` and `--allow-unverified-slot`.
pub struct UnlockArgs<'a, 'py> {
    pub keys: Option<&'a Bound<'py, PyAny>>,
    pub identities: Option<&'a Bound<'py, PyAny>>,
    pub passphrase: Option<&'a Bound<'py, PyAny>>,
    /// The passphrase of the locked SSH keys among the identities.
    pub ssh_passphrase: Option<&'a Bound<'py, PyAny>>,
    /// The most Argon2id work (MiB x passes) the passphrase stanzas may ask (`None`: the
    /// CLI's default).
    pub max_kdf_mib: Option<u64>,
    pub allow_unverified_slot: bool,
}

impl UnlockArgs<'_, '_> {
    /// The key and identity files among the arguments, which the output must not be.
    pub fn files_read(&self) -> PyResult<FilesRead> {
        let identities = (self.identities, "identities", "identity file");
        files_read(self.keys, identities, Some(Argument::Identities))
    }

    /// What the stanzas are tried with; one key given twice is tried once.
    pub fn unlock(&self) -> PyResult<Unlock> {
        let mut out = Vec::new();
        for key in items(self.keys, "keys")? {
            out.push(Identity::Key(read_key(&key)?));
        }
        if let Some(pass) = given(self.passphrase) {
            out.push(Identity::Passphrase(passphrase(pass, "passphrase")?));
        }
        let ssh_passphrase = given(self.ssh_passphrase)
            .map(|pass| passphrase(pass, "ssh_passphrase"))
            .transpose()?;
        let ask: Arc<dyn AskPassphrase> = Arc::new(GivenSshPassphrase(ssh_passphrase));
        for identity in items(self.identities, "identities")? {
            out.extend(
                read_identities(&identity, &ask)?
                    .into_iter()
                    .map(Identity::Secret),
            );
        }
        if out.is_empty() {
            return Err(PyValueError::new_err(
                "no keys, identities or passphrase: give what opens the file",
            ));
        }
        Ok(Unlock {
            identities: Identity::merge_same_keys(out),
            max_kdf_mib: self.max_kdf_mib.unwrap_or(DEFAULT_MAX_KDF_MIB),
            allow_unverified_slot: self.allow_unverified_slot,
        })
    }
}

/// The passphrase of a locked SSH key, as given in `ssh_passphrase=` (nothing is ever asked).
struct GivenSshPassphrase(Option<Zeroizing<Vec<u8>>>);

impl AskPassphrase for GivenSshPassphrase {
    fn ask(&self, _what: &str) -> Result<Zeroizing<Vec<u8>>, String> {
        self.0
            .clone()
            .ok_or_else(|| "it has a passphrase: give it with ssh_passphrase=".to_owned())
    }
}

/// A fresh random AES key of `bits` (128, 192 or 256) bits, as raw bytes.
#[pyfunction]
#[pyo3(signature = (bits = 256))]
fn generate_key<'py>(py: Python<'py>, bits: u32) -> PyResult<Bound<'py, PyBytes>> {
    let size =
        paraes_core::KeySize::from_bits(bits).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut key = Zeroizing::new(vec![0u8; size.bytes()]);
    paraes_core::container::random_bytes(&mut key)
        .map_err(|e| errors::Error::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &key))
}

/// A fresh identity: `(identity_text, recipient)`. X25519, or with `pq=True` the post-quantum
/// hybrid (ML-KEM-768 + X25519). Keep the identity text secret; give out the recipient.
#[pyfunction]
#[pyo3(signature = (*, pq = false))]
fn generate_identity(py: Python<'_>, pq: bool) -> PyResult<(Py<PyString>, String)> {
    let identity = if pq {
        SecretIdentity::generate_hybrid()
    } else {
        SecretIdentity::generate_x25519()
    }
    .map_err(|e| errors::Error::new_err(e.to_string()))?;
    // Python's string straight from the zeroizing text: no plain copy is left to free unwiped.
    let secret = identity.to_secret_text();
    Ok((
        PyString::new(py, &secret).unbind(),
        identity.recipient().to_string(),
    ))
}

/// The recipient (`paraes1...` or `paraespq1...`) of an identity's text.
#[pyfunction]
fn recipient_of(identity: &str) -> PyResult<String> {
    let identity: SecretIdentity =
        identity
            .trim()
            .parse()
            .map_err(|e: paraes_core::container::ContainerError| {
                PyValueError::new_err(e.to_string())
            })?;
    Ok(identity.recipient().to_string())
}
