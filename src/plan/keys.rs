//! The key sources of a plan: where a symmetric key, a passphrase, recipients and identities
//! come from (read later by `keys.rs`), and the rules between them.

use std::path::{Path, PathBuf};

use paraes_files::{fd_id, path_id};
use zeroize::Zeroizing;

use crate::cli::{KeyArgs, RecipientArgs, UnlockArgs};

/// Where a symmetric key comes from.
pub enum KeySource {
    /// A key file (a regular file, a pipe such as `<(...)`, a device).
    File(PathBuf),
    /// `-k -`: standard input.
    Stdin,
    /// `--key-fd N`.
    Fd(u32),
    /// `--key-env VAR`: hex text in an environment variable.
    Env(String),
    /// `--key HEX`.
    Hex(Zeroizing<String>),
}

impl KeySource {
    /// A key file given on the command line: `-` is standard input.
    pub(super) fn from_path(path: &Path) -> Self {
        if path == Path::new("-") {
            KeySource::Stdin
        } else {
            KeySource::File(path.to_path_buf())
        }
    }
}

/// Where a passphrase comes from.
pub enum PassphraseSource {
    /// Asked on the terminal.
    Prompt,
    /// The first line of a file.
    File(PathBuf),
    /// The first line of standard input.
    Stdin,
}

impl PassphraseSource {
    /// A passphrase file given on the command line: `-` is standard input.
    pub(super) fn from_path(path: &Path) -> Self {
        if path == Path::new("-") {
            PassphraseSource::Stdin
        } else {
            PassphraseSource::File(path.to_path_buf())
        }
    }
}

/// Every key option of one command.
#[derive(Default)]
pub struct KeyPlan {
    /// Symmetric keys, in command-line order.
    pub keys: Vec<KeySource>,
    /// A passphrase.
    pub passphrase: Option<PassphraseSource>,
    /// `-r` recipients (enc, rekey's new set).
    pub recipients: Vec<String>,
    /// `-R` recipient files.
    pub recipients_files: Vec<PathBuf>,
    /// `-i` identity files (dec, rekey).
    pub identities: Vec<PathBuf>,
    /// The Argon2id cap for opening (MiB x passes).
    pub max_kdf_mib: u64,
    /// `--allow-unverified-slot`: open despite a second slot the file key does not verify.
    pub allow_unverified_slot: bool,
}

impl KeyPlan {
    pub(super) fn new(keys: &KeyArgs) -> Self {
        let mut plan = KeyPlan {
            max_kdf_mib: paraes_core::container::DEFAULT_MAX_KDF_MIB,
            ..KeyPlan::default()
        };
        plan.keys
            .extend(keys.key_file.iter().map(|p| KeySource::from_path(p)));
        if let Some(fd) = keys.key_fd {
            plan.keys.push(KeySource::Fd(fd));
        }
        if let Some(var) = &keys.key_env {
            plan.keys.push(KeySource::Env(var.clone()));
        }
        if let Some(hex) = &keys.key {
            plan.keys.push(KeySource::Hex(Zeroizing::new(hex.clone())));
        }
        plan.passphrase = match &keys.passphrase_file {
            Some(path) => Some(PassphraseSource::from_path(path)),
            None if keys.passphrase => Some(PassphraseSource::Prompt),
            None => None,
        };
        plan
    }

    pub(super) fn with_recipients(mut self, recipients: &RecipientArgs) -> Self {
        self.recipients = recipients.recipient.clone();
        self.recipients_files = recipients.recipients_file.clone();
        self
    }

    pub(super) fn with_unlock(mut self, unlock: &UnlockArgs) -> Self {
        self.identities = unlock.identity.clone();
        if let Some(cap) = unlock.max_kdf_mib {
            self.max_kdf_mib = cap;
        }
        self.allow_unverified_slot = unlock.allow_unverified_slot;
        self
    }

    /// How many of the sources read standard input: `-`, `--key-fd 0`, or a path that is
    /// standard input under another name (`/dev/stdin`, `/proc/self/fd/0`, the same pipe).
    pub(super) fn stdin_readers(&self) -> usize {
        let stdin = fd_id(0);
        let by_path = |path: &Path| stdin.is_some() && path_id(path) == stdin;
        self.keys
            .iter()
            .filter(|k| match k {
                KeySource::Stdin | KeySource::Fd(0) => true,
                KeySource::File(path) => by_path(path),
                _ => false,
            })
            .count()
            + usize::from(match &self.passphrase {
                Some(PassphraseSource::Stdin) => true,
                Some(PassphraseSource::File(path)) => by_path(path),
                _ => false,
            })
    }

    /// The open descriptors these sources read (`-` is 0, `--key-fd N` is N).
    pub(super) fn descriptors(&self) -> Vec<(&'static str, u32)> {
        let mut fds: Vec<(&'static str, u32)> = self
            .keys
            .iter()
            .filter_map(|k| match k {
                KeySource::Stdin => Some(("the key on standard input", 0)),
                KeySource::Fd(fd) => Some(("the key on that file descriptor", *fd)),
                _ => None,
            })
            .collect();
        if let Some(PassphraseSource::Stdin) = self.passphrase {
            fds.push(("the passphrase on standard input", 0));
        }
        fds
    }

    /// Every file these sources read, and what it is (to keep the output off them).
    pub fn paths(&self) -> Vec<(&'static str, &Path)> {
        let mut paths: Vec<(&'static str, &Path)> = self
            .keys
            .iter()
            .filter_map(|k| match k {
                KeySource::File(path) => Some(("the key file", path.as_path())),
                _ => None,
            })
            .collect();
        if let Some(PassphraseSource::File(path)) = &self.passphrase {
            paths.push(("the passphrase file", path));
        }
        paths.extend(
            self.recipients_files
                .iter()
                .map(|p| ("the recipients file", p.as_path())),
        );
        paths.extend(
            self.identities
                .iter()
                .map(|p| ("the identity file", p.as_path())),
        );
        paths
    }

    pub(super) fn has_public_keys(&self) -> bool {
        !(self.recipients.is_empty() && self.recipients_files.is_empty())
    }
}
