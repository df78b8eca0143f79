//! Rust errors as Python exceptions, each with one line that says what went wrong (the core's
//! own messages, as the CLI prints them): `paraes.Error` and its two subclasses for files that
//! no given key opens and for data that fails authentication; `OSError` (with its errno, so
//! `FileNotFoundError` and friends) for I/O; `ValueError`/`TypeError` for bad arguments.

use std::io;

use paraes_core::cobblestone::CobblestoneError;
use paraes_core::container::ContainerError;
use paraes_core::pipeline::PipelineError;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

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

/// `text` with control characters escaped, so a file name cannot split a message in lines.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// An `OSError` (its subclass by errno) for `e`, saying what failed.
pub fn os_error(e: &io::Error, what: &str) -> PyErr {
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
        other => Error::new_err(line(&other)),
    }
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
