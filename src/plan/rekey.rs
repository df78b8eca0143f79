//! The option rules of `rekey`: what opens the file now, and what changes: ways in added and
//! removed by name (the other stanzas kept as they are), or every stanza replaced.

use std::path::PathBuf;

use anyhow::{bail, Result};
use paraes_core::container::StanzaSelector;

use super::keys::{KeyPlan, KeySource, PassphraseSource};
use crate::cli::RekeyArgs;
use paraes_files::path_id;

/// What a rekey does to the file's stanzas.
pub enum RekeyChange {
    /// `--new-*`: every stanza replaced by stanzas for these keys.
    Replace(KeyPlan),
    /// `--add-*` and `--remove`: the stanzas named removed, stanzas for `add` added, every
    /// other stanza kept as it is.
    Edit {
        /// The keys of the stanzas to add (none given: nothing added).
        add: KeyPlan,
        /// The stanzas to remove, by name.
        remove: Vec<StanzaSelector>,
    },
}

impl RekeyChange {
    /// The keys of the new stanzas.
    pub fn new_keys(&self) -> &KeyPlan {
        match self {
            RekeyChange::Replace(keys) | RekeyChange::Edit { add: keys, .. } => keys,
        }
    }
}

/// A validated `rekey`.
pub struct RekeyPlan {
    /// The container.
    pub file: PathBuf,
    /// What opens it now.
    pub open: KeyPlan,
    /// What changes.
    pub change: RekeyChange,
    /// `--force`: the stanza that opened the file may go.
    pub force: bool,
    /// `--rewrite`: a copy renamed over the file, never in place.
    pub rewrite: bool,
    /// No messages.
    pub quiet: bool,
    /// `-v`: say how the file was guarded.
    pub verbose: bool,
}

/// The keys of new stanzas: key files, a passphrase, recipients and recipients files.
fn new_keys(
    key_files: &[PathBuf],
    passphrase: Option<PassphraseSource>,
    recipients: &[String],
    recipients_files: &[PathBuf],
) -> KeyPlan {
    KeyPlan {
        keys: key_files.iter().map(|p| KeySource::from_path(p)).collect(),
        passphrase,
        recipients: recipients.to_vec(),
        recipients_files: recipients_files.to_vec(),
        ..KeyPlan::default()
    }
}

/// Whether a key plan names no key at all.
fn is_empty(keys: &KeyPlan) -> bool {
    keys.keys.is_empty() && keys.passphrase.is_none() && !keys.has_public_keys()
}

/// Builds the plan of `rekey`.
pub(super) fn rekey(args: &RekeyArgs) -> Result<RekeyPlan> {
    const C: &str = "rekey";
    let open = KeyPlan::new(&args.keys).with_unlock(&args.unlock);
    if open.keys.is_empty() && open.passphrase.is_none() && open.identities.is_empty() {
        usage!(C, "rekey must open the file first: give its current key (-k, --key, --key-fd, --key-env, -p, --passphrase-file or -i)");
    }
    let replace = new_keys(
        &args.new_key_file,
        args.new_passphrase_file
            .as_deref()
            .map(PassphraseSource::from_path),
        &args.new_recipient,
        &args.new_recipients_file,
    );
    let add = new_keys(
        &args.add_key_file,
        match &args.add_passphrase_file {
            Some(path) => Some(PassphraseSource::from_path(path)),
            None if args.add_passphrase => Some(PassphraseSource::Prompt),
            None => None,
        },
        &args.add_recipient,
        &args.add_recipients_file,
    );
    let edits = !is_empty(&add) || !args.remove.is_empty();
    let change = match (is_empty(&replace), edits) {
        (false, true) => usage!(
            C,
            "--new-* replaces every stanza, while --add-* and --remove keep the others: give one or the other"
        ),
        (true, false) => usage!(
            C,
            "say what changes: --add-key-file, --add-recipient, --add-recipients-file or --add-passphrase(-file) adds a way in, --remove NAME removes one (paraes info names them), --new-* replaces them all"
        ),
        (false, false) => RekeyChange::Replace(replace),
        (true, true) => RekeyChange::Edit {
            add,
            remove: args
                .remove
                .iter()
                .map(|text| text.parse::<StanzaSelector>())
                .collect::<Result<_, String>>()
                .or_else(|why| usage!(C, "--remove {why}"))?,
        },
    };
    if open.stdin_readers() + change.new_keys().stdin_readers() > 1 {
        usage!(C, "standard input can feed only one key or passphrase");
    }
    let container = path_id(&args.file);
    for (_, path) in open.paths().into_iter().chain(change.new_keys().paths()) {
        if container.is_some() && path_id(path) == container {
            bail!(
                "{} is the container being rekeyed, not a key: give its keys in other files",
                path.display()
            );
        }
    }
    Ok(RekeyPlan {
        file: args.file.clone(),
        open,
        change,
        force: args.force,
        rewrite: args.rewrite,
        quiet: args.quiet,
        verbose: args.verbose,
    })
}
