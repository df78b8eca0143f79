//! Key arguments as the CLI takes them: a key is a key file's contents (16, 24 or 32 raw bytes,
//! or the same as hex text) given as bytes, or the path of such a file (str or os.PathLike);
//! an identity is an identity file's text (`PARAES-SECRET-KEY-1...`, bytes or a str that starts
//! with `PARAES-`) or its path; a recipient is a `paraes1...`/`paraespq1...` str, or the path of
//! a recipients file (os.PathLike); a passphrase is str (UTF-8) or bytes. The rules and the
//! error lines follow the CLI's `src/keys.rs`, except that a str taken as a path where no file
//! is found is never shown in an error: it may be a key's hex or a passphrase in the wrong place.

use std::io::Read;
use std::path::PathBuf;

use paraes_core::container::{
    parse_identities, parse_recipients, Argon2Params, Identity, PublicRecipient, Recipient,
    SecretIdentity, Unlock,
};
use paraes_core::Key;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use zeroize::Zeroizing;

use crate::errors;
use crate::raw::Exported;

/// Key files are tiny; anything bigger is not one (and is not read whole).
const MAX_KEY_FILE: u64 = 1024;
/// Identity and recipient files are small text files.
const MAX_TEXT_FILE: u64 = 1 << 20;
/// What every identity's text starts with (either case).
const IDENTITY_PREFIX: &str = "PARAES-";

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(generate_key, m)?)?;
    m.add_function(wrap_pyfunction!(generate_identity, m)?)?;
    m.add_function(wrap_pyfunction!(recipient_of, m)?)?;
    Ok(())
}

/// What a key or identity argument holds: its contents, or where to read them.
enum Source {
    Contents(Zeroizing<Vec<u8>>),
    /// A path; `from_str` when it came as a str, which may be key material given by mistake
    /// (a key's hex, a passphrase): its text is then never shown unless a file is there.
    Path {
        path: PathBuf,
        from_str: bool,
    },
}

impl Source {
    /// A bytes-like object is the contents; a str or os.PathLike is a path, except a str that
    /// starts like an identity when `text_prefix` says so.
    fn of(obj: &Bound<'_, PyAny>, what: &str, identity_text: bool) -> PyResult<Self> {
        if let Ok(text) = obj.cast::<PyString>() {
            let text = text.to_str()?;
            if identity_text && starts_with_ignore_case(text.trim_start(), IDENTITY_PREFIX) {
                return Ok(Source::Contents(Zeroizing::new(text.as_bytes().to_vec())));
            }
            return Ok(Source::Path {
                path: PathBuf::from(text),
                from_str: true,
            });
        }
        if let Ok(exported) = Exported::new(obj, what) {
            return Ok(Source::Contents(Zeroizing::new(exported.bytes().to_vec())));
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

    /// The contents, at most `max` bytes of a file (one more, to tell a file that is larger).
    fn read(self, what: &str, max: u64) -> PyResult<(Zeroizing<Vec<u8>>, String)> {
        match self {
            Source::Contents(bytes) => Ok((bytes, format!("the {what} given as bytes"))),
            Source::Path { path, from_str } => {
                let name = format!("{what} {}", path.display());
                let meta = std::fs::metadata(&path).map_err(|e| {
                    if from_str {
                        unshown_path_error(&e, what)
                    } else {
                        errors::os_error(&e, &format!("cannot read {name}"))
                    }
                })?;
                if meta.is_dir() {
                    return Err(PyValueError::new_err(errors::one_line(&format!(
                        "{name} is a directory, not a file"
                    ))));
                }
                let mut contents = Zeroizing::new(Vec::with_capacity(max as usize + 1));
                std::fs::File::open(&path)
                    .and_then(|f| f.take(max + 1).read_to_end(&mut contents))
                    .map_err(|e| errors::os_error(&e, &format!("cannot read {name}")))?;
                Ok((contents, name))
            }
        }
    }
}

/// The error for a str taken as a path where no file can be looked at: it may be a key's hex
/// or a passphrase given in the wrong place, so the text is not shown (the OS's reason is).
fn unshown_path_error(e: &std::io::Error, what: &str) -> PyErr {
    let (argument, instead) = match what {
        "identity file" => (
            "identities: a str is an identity's text (PARAES-SECRET-KEY-1...) or the path of an identity file,",
            "pass the identity's text (or its bytes)",
        ),
        _ => (
            "keys: a str is the path of a key file,",
            "pass the key as bytes (bytes.fromhex(...)) and a passphrase as passphrase=",
        ),
    };
    let message = if e.kind() == std::io::ErrorKind::NotFound {
        format!(
            "{argument} and none exists there; {instead} (the str is not shown: it may be secret)"
        )
    } else {
        format!("{argument} and that path cannot be looked at; {instead} (the str is not shown: it may be secret)")
    };
    errors::os_error(e, &message)
}

/// Whether `text` starts with `prefix`, in either case.
fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// The error for contents that are not a key; it says nothing about what was given.
fn not_a_key(name: &str) -> PyErr {
    PyValueError::new_err(errors::one_line(&format!(
        "{name} is not a key: a key is 32, 48 or 64 hex digits, or 16, 24 or 32 random bytes (make one with paraes.generate_key() or `paraes keygen`; a passphrase goes in passphrase=)"
    )))
}

/// One symmetric key from a key argument.
fn read_key(obj: &Bound<'_, PyAny>) -> PyResult<Key> {
    let (contents, name) = Source::of(obj, "key", false)?.read("key file", MAX_KEY_FILE)?;
    let name = name.replace("the key file given as bytes", "the key given as bytes");
    if contents.len() as u64 > MAX_KEY_FILE {
        return Err(not_a_key(&name));
    }
    if paraes_core::container::is_identity_text(&contents) {
        return Err(PyValueError::new_err(errors::one_line(&format!(
            "{name} holds an identity, not a key: give it in identities="
        ))));
    }
    let text = contents.trim_ascii();
    let looks_like_text = !text.is_empty() && text.iter().all(u8::is_ascii_graphic);
    if looks_like_text
        && (!matches!(text.len(), 32 | 48 | 64) || !text.iter().all(u8::is_ascii_hexdigit))
    {
        return Err(not_a_key(&name));
    }
    Key::parse(&contents).map_err(|_| not_a_key(&name))
}

/// The secret identities of an identity argument.
fn read_identities(obj: &Bound<'_, PyAny>) -> PyResult<Vec<SecretIdentity>> {
    let (contents, name) =
        Source::of(obj, "identity", true)?.read("identity file", MAX_TEXT_FILE)?;
    let name = name.replace("the identity file given as bytes", "the identity given");
    let text = std::str::from_utf8(&contents)
        .map_err(|_| PyValueError::new_err(errors::one_line(&format!("{name} is not text"))))?;
    parse_identities(text)
        .map_err(|e| PyValueError::new_err(errors::one_line(&format!("{name}: {e}"))))
}

/// The public recipients of a recipient argument: a recipient's text, or a recipients file.
fn read_recipients(obj: &Bound<'_, PyAny>) -> PyResult<Vec<PublicRecipient>> {
    if let Ok(text) = obj.cast::<PyString>() {
        let text = text.to_str()?;
        let recipient: PublicRecipient = text
            .trim()
            .parse()
            .map_err(|e| PyValueError::new_err(errors::one_line(&format!("{e}"))))?;
        return Ok(vec![recipient]);
    }
    let path: PathBuf = obj.extract().map_err(|_| {
        PyTypeError::new_err(
            "a recipient is a str (paraes1... or paraespq1...) or the path of a recipients file (os.PathLike)",
        )
    })?;
    let (contents, name) = Source::Path {
        path,
        from_str: false,
    }
    .read("recipients file", MAX_TEXT_FILE)?;
    let text = std::str::from_utf8(&contents)
        .map_err(|_| PyValueError::new_err(errors::one_line(&format!("{name} is not text"))))?;
    let list = parse_recipients(text)
        .map_err(|e| PyValueError::new_err(errors::one_line(&format!("{name}: {e}"))))?;
    if list.is_empty() {
        return Err(PyValueError::new_err(errors::one_line(&format!(
            "{name} lists no recipient"
        ))));
    }
    Ok(list)
}

/// A passphrase argument's bytes (str as UTF-8).
fn passphrase(obj: &Bound<'_, PyAny>) -> PyResult<Zeroizing<Vec<u8>>> {
    let bytes = if let Ok(text) = obj.cast::<PyString>() {
        Zeroizing::new(text.to_str()?.as_bytes().to_vec())
    } else if let Ok(bytes) = obj.cast::<PyBytes>() {
        Zeroizing::new(bytes.as_bytes().to_vec())
    } else {
        return Err(PyTypeError::new_err("a passphrase is a str or bytes"));
    };
    if bytes.is_empty() {
        return Err(PyValueError::new_err("the passphrase is empty"));
    }
    Ok(bytes)
}

/// A list argument as its items (a lone str or bytes is refused: it is almost surely one item
/// given without its list).
fn items<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "{what} is a list: write {what}=[...] even for one"
        )));
    }
    obj.try_iter()?.collect()
}

/// enc's recipients: one stanza per key, the passphrase, and each public recipient.
pub fn recipients(
    keys: &Bound<'_, PyAny>,
    recipients: &Bound<'_, PyAny>,
    pass: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Recipient>> {
    let mut out = Vec::new();
    for key in items(keys, "keys")? {
        out.push(Recipient::Key(read_key(&key)?));
    }
    if let Some(pass) = pass {
        let params =
            Argon2Params::recommended().map_err(|e| errors::Error::new_err(e.to_string()))?;
        out.push(Recipient::Passphrase(passphrase(pass)?, params));
    }
    for recipient in items(recipients, "recipients")? {
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

/// dec's keys, passphrase and identities.
pub fn unlock(
    keys: &Bound<'_, PyAny>,
    identities: &Bound<'_, PyAny>,
    pass: Option<&Bound<'_, PyAny>>,
) -> PyResult<Unlock> {
    let mut out = Vec::new();
    for key in items(keys, "keys")? {
        out.push(Identity::Key(read_key(&key)?));
    }
    if let Some(pass) = pass {
        out.push(Identity::Passphrase(passphrase(pass)?));
    }
    for identity in items(identities, "identities")? {
        out.extend(
            read_identities(&identity)?
                .into_iter()
                .map(Identity::Secret),
        );
    }
    if out.is_empty() {
        return Err(PyValueError::new_err(
            "no keys, identities or passphrase: give what opens the file",
        ));
    }
    Ok(Unlock::new(out))
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
fn generate_identity(pq: bool) -> PyResult<(String, String)> {
    let identity = if pq {
        SecretIdentity::generate_hybrid()
    } else {
        SecretIdentity::generate_x25519()
    }
    .map_err(|e| errors::Error::new_err(e.to_string()))?;
    Ok((
        identity.to_secret_text().to_string(),
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
