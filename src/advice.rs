//! What to do about a failure, in terms of this tool's options. The library crates explain
//! what went wrong without naming command-line flags; this module adds the recommendation
//! (as rage's error.rs does), looking through each error's `source()` chain.

use paraes_core::container::ContainerError;
use paraes_core::pipeline::PipelineError;
use paraes_files::keys::KeyFileError;
use paraes_files::FileError;
use paraes_gpu::GpuError;

/// The advice when an output cannot be written where it would go; one-file and many-file runs
/// share it, and only one-file runs take `-o`.
const WRITE_ELSEWHERE: &str =
    "write elsewhere (-o PATH for one file, --output-dir DIR for several)";

/// The recommendation for `error`, if there is one.
pub fn advice(error: &anyhow::Error) -> Option<String> {
    for cause in error.chain() {
        if let Some(e) = cause.downcast_ref::<ContainerError>() {
            match e {
                // Raising the cap for two slots would run Argon2id for a slot that may be
                // planted: `info` shows them, and a rekey with the other key clears it.
                ContainerError::KdfTooCostly { slots, .. } if *slots > 1 => {
                    return Some(
                        "check the slots with `paraes info`; open the file with another key if you can"
                            .to_owned(),
                    )
                }
                ContainerError::KdfTooCostly { cost_mib, .. } => {
                    return Some(format!(
                        "if you trust this file, allow it with --max-kdf-mib {cost_mib}"
                    ))
                }
                ContainerError::UnverifiedSlot => {
                    return Some(
                        "`paraes upgrade --allow-unverified-slot` with your key makes it format v3 under the file key that opened it (one content for everyone; it names the other slot's recipients it drops), or if you trust it as it is, open it with --allow-unverified-slot"
                            .to_owned(),
                    )
                }
                ContainerError::NoIdentity => {
                    return Some("make one with `paraes keygen --x25519`".to_owned())
                }
                _ => {}
            }
        }
        if let Some(e) = cause.downcast_ref::<FileError>() {
            return file_advice(e);
        }
        // A key file's error without advice of its own may wrap one with (an identity file
        // with no identity): the chain goes on.
        if let Some(advice) = cause
            .downcast_ref::<KeyFileError>()
            .and_then(key_file_advice)
        {
            return Some(advice);
        }
        if let Some(PipelineError::BadPadding) = cause.downcast_ref::<PipelineError>() {
            return Some("if the stream was made with --no-pad, add --no-pad".to_owned());
        }
        if let Some(e) = cause.downcast_ref::<GpuError>() {
            return match e {
                GpuError::BadDevice { .. } => Some("pick another --gpu-device".to_owned()),
                // --chunk-size does not change the GPU's buffers (streams x pieces).
                GpuError::OutOfMemory(_) => Some("or use --backend cpu".to_owned()),
                _ => Some("or use --backend cpu".to_owned()),
            };
        }
    }
    None
}

/// What to do about a file that cannot be read or written, in this tool's options.
fn file_advice(error: &FileError) -> Option<String> {
    let advice = match error {
        FileError::Terminal(None) => "redirect it (> FILE) or use -o PATH".to_owned(),
        FileError::Terminal(Some(_)) => "choose another -o".to_owned(),
        FileError::DerivedNameTaken(_) => format!("remove it, or {WRITE_ELSEWHERE}"),
        FileError::OutputIsDirectory(_) => "give a file name with -o".to_owned(),
        FileError::Exists(_) | FileError::AppearedMeanwhile(_) => {
            "use --force to overwrite it".to_owned()
        }
        FileError::CannotCreate { .. } => WRITE_ELSEWHERE.to_owned(),
        FileError::OutputIsRead { .. } => "choose another output".to_owned(),
        FileError::Planted { .. } => format!("remove it, or {WRITE_ELSEWHERE}"),
        FileError::InputNotRegular { .. } => {
            "many-file runs take regular files only; give it alone to stream it".to_owned()
        }
        FileError::OutputNotRegular { .. }
        | FileError::InputIsDirectory(_)
        | FileError::Io { .. } => return None,
    };
    Some(advice)
}

/// A rank's failure (text, as it travelled over MPI) with what to do about it in this tool's
/// options: the library names no command-line flags.
#[cfg(feature = "mpi")]
pub fn rank_failure(failure: &paraes_mpi::JobError) -> String {
    match failure.reason {
        paraes_mpi::Reason::NotShared => format!("{}: use --mpi-io scatter", failure.message),
        paraes_mpi::Reason::Other => failure.message.clone(),
    }
}

/// What to do about key material given where it does not belong, in this tool's options.
fn key_file_advice(error: &KeyFileError) -> Option<String> {
    let advice = match error {
        KeyFileError::NotAKey(_) => {
            "make one with `paraes keygen`; a passphrase goes in --passphrase-file"
        }
        KeyFileError::IdentityNotKey(_) | KeyFileError::PrivateKeyNotKey(_) => "give it with -i",
        KeyFileError::KeyNotIdentity(_) => "give it with -k",
        KeyFileError::NotText(_)
        | KeyFileError::Directory(_)
        | KeyFileError::NoRecipient(_)
        | KeyFileError::TooLarge(_)
        | KeyFileError::Read { .. }
        | KeyFileError::Parse { .. } => return None,
    };
    Some(advice.to_owned())
}

/// The one line that reports `error`: its chain, then the recommendation if there is one.
pub fn error_line(error: &anyhow::Error) -> String {
    let mut message = format!("{error:#}");
    if let Some(advice) = advice(error) {
        message = format!("{message}: {advice}");
    }
    one_line(&message)
}

pub use paraes_files::one_line;

#[cfg(test)]
mod tests {
    use super::*;

    /// Advice follows the error's type through its chain, never its text: an identity file
    /// with no identity gets keygen's advice, another bad identity whose text happens to start
    /// the same way gets none.
    #[test]
    fn advice_is_chosen_by_the_error_s_type() {
        let empty = anyhow::Error::new(ContainerError::NoIdentity).context("identity file x");
        assert!(error_line(&empty).ends_with("make one with `paraes keygen --x25519`"));
        let lookalike = anyhow::Error::new(ContainerError::BadIdentity("no identity here".into()));
        assert_eq!(advice(&lookalike), None);
        let padding = anyhow::Error::new(PipelineError::BadPadding);
        assert!(advice(&padding).unwrap().contains("--no-pad"));
    }

    /// Key material in the wrong place is sent to the option that takes it; an identity file
    /// with no identity in it still gets keygen's advice through the key file's error.
    #[test]
    fn key_material_in_the_wrong_place_names_the_option_that_takes_it() {
        let key_as_identity =
            anyhow::Error::new(KeyFileError::KeyNotIdentity("identity file k".into()));
        assert_eq!(
            error_line(&key_as_identity),
            "identity file k holds a key, not an identity: give it with -k"
        );
        let identity_as_key = anyhow::Error::new(KeyFileError::IdentityNotKey("key file i".into()));
        assert!(error_line(&identity_as_key).ends_with("not a key: give it with -i"));
        let empty = anyhow::Error::new(KeyFileError::Parse {
            name: "identity file e".into(),
            source: ContainerError::NoIdentity,
        });
        assert!(error_line(&empty).ends_with("make one with `paraes keygen --x25519`"));
    }
}
