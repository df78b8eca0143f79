//! Keys as text, read through the registry (beside it): a recipient or an identity (the
//! `FromStr` impls of [`PublicRecipient`] and [`SecretIdentity`]), and whole files of them. The
//! text itself is `identity.rs`'s (Bech32) and each kind's other form's (`ssh_text.rs`); the
//! registry ([`KINDS`]) says which forms there are.

use std::str::FromStr;
use std::sync::Arc;

use zeroize::Zeroizing;

use super::KINDS;
use crate::container::identity::{
    self, AskPassphrase, Bech32Keys, PublicRecipient, SecretIdentity, TextKeys,
};
use crate::container::ContainerError;

/// The Bech32 text forms of the registered kinds, in registry order.
pub(super) fn bech32_forms() -> Vec<&'static dyn Bech32Keys> {
    KINDS.iter().filter_map(|kind| kind.bech32()).collect()
}

/// The other text forms of the registered kinds, in registry order, each once.
pub(crate) fn text_forms() -> Vec<&'static dyn TextKeys> {
    let mut forms: Vec<&'static dyn TextKeys> = Vec::new();
    for form in KINDS.iter().filter_map(|kind| kind.text()) {
        if !forms.iter().any(|seen| std::ptr::addr_eq(*seen, form)) {
            forms.push(form);
        }
    }
    forms
}

/// Parsed through the registry (here, beside it); the text itself is `identity.rs`'s.
impl FromStr for PublicRecipient {
    type Err = ContainerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        identity::parse_recipient(text, &bech32_forms(), &text_forms())
    }
}

/// Parsed through the registry (here, beside it); the text itself is `identity.rs`'s.
impl FromStr for SecretIdentity {
    type Err = ContainerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        identity::parse_identity(text, &bech32_forms())
    }
}

/// An [`AskPassphrase`] that has no one to ask: a locked identity stays locked.
struct NoOneToAsk;

impl AskPassphrase for NoOneToAsk {
    fn ask(&self, _what: &str) -> Result<Zeroizing<Vec<u8>>, String> {
        Err("it has a passphrase and there is no way to ask for it here".into())
    }
}

/// The values of a text file with one per line; blank lines and lines starting with `#` are
/// ignored. Errors name the line (never its contents, which may be secret), through `wrap`.
fn parse_lines<T: FromStr<Err = ContainerError>>(
    text: &str,
    wrap: fn(String) -> ContainerError,
) -> Result<Vec<T>, ContainerError> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(line.parse().map_err(|e: ContainerError| {
            let why = match e {
                ContainerError::BadIdentity(why) | ContainerError::BadRecipient(why) => why,
                other => other.to_string(),
            };
            wrap(format!("line {}: {why}", number + 1))
        })?);
    }
    Ok(out)
}

/// The identities of an identity file (at least one). A locked identity in it (an SSH key
/// with a passphrase) cannot be unlocked: see [`parse_identity_file`].
pub fn parse_identities(text: &str) -> Result<Vec<SecretIdentity>, ContainerError> {
    parse_identity_file(text, "the identity", Arc::new(NoOneToAsk))
}

/// The identities of the identity file `name` whose content is `text` (at least one): a whole
/// file in one of the registry's other text forms (an OpenSSH private key), or Bech32
/// identities one a line. A locked identity asks `ask` for its passphrase when a stanza may
/// open with it, and never before.
pub fn parse_identity_file(
    text: &str,
    name: &str,
    ask: Arc<dyn AskPassphrase>,
) -> Result<Vec<SecretIdentity>, ContainerError> {
    if let Some(parsed) = text_forms()
        .iter()
        .find_map(|form| form.identities(text, name, &ask))
    {
        return parsed.map_err(ContainerError::BadIdentity);
    }
    let out = parse_lines(text, ContainerError::BadIdentity)?;
    if out.is_empty() {
        return Err(ContainerError::NoIdentity);
    }
    Ok(out)
}

/// The recipients of a recipients file.
pub fn parse_recipients(text: &str) -> Result<Vec<PublicRecipient>, ContainerError> {
    parse_lines(text, ContainerError::BadRecipient)
}
