//! Rust errors as Python exceptions, each with one line that says what went wrong (the core's
//! and paraes-files' own messages, as the CLI prints them, with the keyword argument to use
//! where the CLI names its flag, chosen by the error's type): `paraes.Error` and its two
//! subclasses for files that no given key opens and for data that fails authentication;
//! `OSError` (with its errno, so `FileNotFoundError` and friends) for I/O; `ValueError` /
//! `TypeError` for bad arguments. Warnings (`UserWarning`) say what the CLI warns about.

use std::io;

use paraes_core::cobblestone::CobblestoneError;
use paraes_core::container::ContainerError;
use paraes_core::pipeline::PipelineError;
use paraes_files::armor::ArmorError;
use paraes_files::keys::KeyFileError;
use paraes_files::FileError;
use pyo3::exceptions::{
    PyFileExistsError, PyIsADirectoryError, PyOSError, PyPermissionError, PyValueError,
};
use pyo3::prelude::*;

pub use paraes_files::one_line;

pyo3::create_exception!(
    paraes,
    Error,
    pyo3::exceptions::PyException,
    "A paraes operation failed (the message says why, in one line)."
);
pyo3::create_exception!(
    paraes,
    AuthenticationError,
    Error,
    "Data failed authentication: it is damaged, truncated, reordered or was tampered with. Nothing unauthenticated was returned or kept."
);
pyo3::create_exception!(
    paraes,
    NoMatchingKeyError,
    Error,
    "None of the given keys, passphrases or identities opens this file or message."
);

/// An `OSError` (its subclass by errno) for `e`, saying what failed; damaged ASCII armor
/// (cut, extended or not base64) is damaged data, as a damaged binary container is:
/// [`AuthenticationError`].
pub fn os_error(e: &io::Error, what: &str) -> PyErr {
    if let Some(armor) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ArmorError>())
    {
        return AuthenticationError::new_err(one_line(&format!("{what}: {armor}")));
    }
    let text = e.to_string();
    // Python shows the errno itself ("[Errno 2] ..."): drop Rust's " (os error 2)".
    let text = match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(at)) => &text[..at],
        _ => &text[..],
    };
    let message = one_line(&format!("{what}: {text}"));
    match e.raw_os_error() {
        Some(errno) => PyOSError::new_err((errno, message)),
        None => PyOSError::new_err(message),
    }
}

/// A container error, with `name` naming the file where that helps.
pub fn container(e: ContainerError, name: &str) -> PyErr {
    let line = |e: &ContainerError| one_line(&format!("{name}: {e}"));
    match e {
        ContainerError::Io(io) => os_error(&io, &format!("reading {name} failed")),
        ContainerError::NotAContainer => Error::new_err(one_line(&format!(
            "{name} is not a paraes container (no paraes header)"
        ))),
        ContainerError::NoMatchingStanza(_) | ContainerError::WrongKeyOrDamagedHeader => {
            NoMatchingKeyError::new_err(line(&e))
        }
        ContainerError::TruncatedHeader
        | ContainerError::DamagedHeader
        | ContainerError::BodyKeyMismatch(_)
        | ContainerError::BodyCutOrExtended(_)
        | ContainerError::CommitmentMismatch => AuthenticationError::new_err(line(&e)),
        ContainerError::BadRecipients(_)
        | ContainerError::BadRecipient(_)
        | ContainerError::BadIdentity(_)
        | ContainerError::NoIdentity => PyValueError::new_err(one_line(&e.to_string())),
        // Raising the cap for two slots would run Argon2id for a slot that may be planted.
        ContainerError::KdfTooCostly { slots, .. } if slots > 1 => Error::new_err(format!(
            "{}: check the slots with `paraes info`; open the file with another key if you can",
            line(&e)
        )),
        ContainerError::KdfTooCostly { cost_mib, .. } => Error::new_err(format!(
            "{}: if you trust this file, allow it with max_kdf_mib={cost_mib}",
            line(&e)
        )),
        ContainerError::UnverifiedSlot => Error::new_err(format!(
            "{}: `paraes upgrade --allow-unverified-slot` with your key makes it format v3 under the file key that opened it, or if you trust it as it is, open it with allow_unverified_slot=True",
            line(&e)
        )),
        other => Error::new_err(line(&other)),
    }
}

/// An input or output file's error, with the keyword argument to use where there is one.
pub fn file(e: FileError) -> PyErr {
    let with = |advice: &str| one_line(&format!("{e}: {advice}"));
    match &e {
        FileError::Exists(_) | FileError::AppearedMeanwhile(_) => {
            PyFileExistsError::new_err((libc::EEXIST, with("pass overwrite=True to replace it")))
        }
        FileError::OutputIsDirectory(_) => {
            PyIsADirectoryError::new_err((libc::EISDIR, with("give the output a file name")))
        }
        FileError::OutputNotRegular { .. } => PyValueError::new_err(with(
            "write to a file, or stream with paraes.Writer over an open file object",
        )),
        FileError::InputNotRegular { .. } => PyValueError::new_err(with(
            "paraes.Reader reads a container at offsets; decrypt a stream with decrypt_file",
        )),
        FileError::OutputIsRead { .. } => PyValueError::new_err(with("write to another file")),
        FileError::Planted { .. } => {
            PyPermissionError::new_err((libc::EACCES, with("remove it, or write elsewhere")))
        }
        FileError::Io { what, source } => os_error(source, what),
        FileError::CannotCreate { .. } => match e.raw_os_error() {
            Some(errno) => PyOSError::new_err((errno, one_line(&e.to_string()))),
            None => PyOSError::new_err(one_line(&e.to_string())),
        },
        FileError::InputIsDirectory(_)
        | FileError::Terminal(_)
        | FileError::DerivedNameTaken(_) => PyValueError::new_err(one_line(&e.to_string())),
    }
}

/// A key, identity or recipients file's error, with the keyword argument to use where there
/// is one.
pub fn key_file(e: KeyFileError) -> PyErr {
    let with = |advice: &str| PyValueError::new_err(one_line(&format!("{e}: {advice}")));
    match &e {
        // The advice in parentheses, as Python said it before.
        KeyFileError::NotAKey(_) => PyValueError::new_err(one_line(&format!(
            "{e} (make one with paraes.generate_key() or `paraes keygen`; a passphrase goes in passphrase=)"
        ))),
        KeyFileError::IdentityNotKey(_) | KeyFileError::PrivateKeyNotKey(_) => {
            with("give it in identities=")
        }
        KeyFileError::KeyNotIdentity(_) => with("give it in keys="),
        KeyFileError::Read { name, source } => os_error(source, &format!("cannot read {name}")),
        KeyFileError::Parse {
            source: ContainerError::NoIdentity,
            ..
        } => with("make one with paraes.generate_identity()"),
        KeyFileError::Parse { name, source } => {
            PyValueError::new_err(one_line(&format!("{name}: {source}")))
        }
        KeyFileError::NotText(_)
        | KeyFileError::Directory(_)
        | KeyFileError::NoRecipient(_)
        | KeyFileError::TooLarge(_) => {
            PyValueError::new_err(one_line(&e.to_string()))
        }
    }
}

/// Says `text` with a `UserWarning` (which the caller's warning filters may make an error).
pub fn warn(text: &str) -> PyResult<()> {
    let text = std::ffi::CString::new(one_line(text))
        .unwrap_or_else(|_| c"paraes: a warning that holds a NUL byte".to_owned());
    Python::attach(|py| {
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        PyErr::warn(py, category.as_any(), &text, 1)
    })
}

/// A pipeline error; `input` and `output` name the two ends.
pub fn pipeline(e: PipelineError, input: &str, output: &str) -> PyErr {
    match e {
        PipelineError::Read(io) => os_error(&io, &format!("reading {input} failed")),
        PipelineError::Write(io) => os_error(&io, &format!("writing {output} failed")),
        PipelineError::Tampered(_)
        | PipelineError::Truncated(_)
        | PipelineError::BadPadding
        | PipelineError::TooLong => {
            AuthenticationError::new_err(one_line(&format!("{input}: {e}")))
        }
        other => Error::new_err(one_line(&other.to_string())),
    }
}

/// A read error of the seekable reader: authentication failures come wrapped in `InvalidData`.
pub fn read_error(e: io::Error, name: &str) -> PyErr {
    if e.kind() == io::ErrorKind::InvalidData {
        if let Some(inner) = e.get_ref() {
            if inner.downcast_ref::<PipelineError>().is_some() {
                let inner = e.into_inner().expect("checked above");
                let pipeline_error = *inner.downcast::<PipelineError>().expect("checked above");
                return pipeline(pipeline_error, name, "the buffer");
            }
        }
    }
    os_error(&e, &format!("reading {name} failed"))
}

/// A bare message's error.
pub fn message(e: CobblestoneError) -> PyErr {
    match e {
        CobblestoneError::KeyLength { .. } => PyValueError::new_err(e.to_string()),
        CobblestoneError::CommitmentMismatch => NoMatchingKeyError::new_err(e.to_string()),
        CobblestoneError::Truncated | CobblestoneError::Tampered(_) => {
            AuthenticationError::new_err(e.to_string())
        }
        CobblestoneError::TooLong => Error::new_err(e.to_string()),
    }
}
