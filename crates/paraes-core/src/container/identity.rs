//! Public-key recipients and their identities (secret keys): the two public types that hold a
//! key of any public-key stanza kind (each kind's own key types, in its file under `stanza/`,
//! behind [`RecipientKey`] and [`IdentityKey`]), and their text, which survives copy-paste:
//! Bech32 (BIP 173) with a `paraes` prefix, so a mistyped or truncated key is refused by its
//! checksum. X25519 (`paraes1...`, `PARAES-SECRET-KEY-1...`) and the post-quantum hybrid
//! ML-KEM-768 + X25519 (X-Wing; `paraespq1...`, `PARAES-PQ-SECRET-KEY-1...`). A kind may also
//! have another text form ([`TextKeys`]: OpenSSH's public key lines and private key files), which
//! is tried before Bech32. Text is parsed through the stanza registry (the `FromStr` impls and
//! the readers of whole identity and recipient files are in `stanza/text.rs`, beside it), which
//! gives each kind's forms; this file knows no kind, and names no stanza. An
//! identity whose secret is locked (an SSH key with a passphrase) asks the caller's
//! [`AskPassphrase`] only when a stanza needs it.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use bech32::primitives::decode::{CheckedHrpstring, CheckedHrpstringError};
use bech32::primitives::iter::{ByteIterExt, Fe32IterExt};
use bech32::{Bech32, Checksum, Hrp};
use zeroize::Zeroizing;

use super::keys::random_bytes;
use super::ContainerError;

/// What every identity's text starts with (either case), and no recipient's.
pub(crate) const SECRET_PREFIX: &str = "paraes-";
/// Bytes of every identity's Bech32 data: a 32-byte secret (a seed or a scalar).
const IDENTITY_DATA_LEN: usize = 32;

/// Bech32's checksum with a code length that fits a 1,216-byte X-Wing public key (BIP 173
/// limits strings to 90 characters, and the `bech32` crate's Bech32 to 1,023). Past 1,023
/// characters the checksum still catches every error burst of up to 6 characters and any other
/// change with probability 1 - 2^-30, as age's post-quantum recipients do with the same code.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum LongBech32 {}

impl Checksum for LongBech32 {
    type MidstateRepr = u32;
    const CODE_LENGTH: usize = 4096;
    const CHECKSUM_LENGTH: usize = <Bech32 as Checksum>::CHECKSUM_LENGTH;
    const GENERATOR_SH: [u32; 5] = <Bech32 as Checksum>::GENERATOR_SH;
    const TARGET_RESIDUE: u32 = <Bech32 as Checksum>::TARGET_RESIDUE;
}

/// `data` as Bech32 text under `hrp`, written character by character into a buffer sized once
/// (no reallocation, no intermediate copy in either case), so that an identity's text leaves
/// no copy behind.
pub(crate) fn encode(hrp: &str, data: &[u8], upper: bool) -> Zeroizing<String> {
    let hrp = Hrp::parse(hrp).expect("valid prefix");
    let len = bech32::encoded_length::<LongBech32>(hrp, data).expect("fits the code length");
    let mut text = Zeroizing::new(String::with_capacity(len));
    for c in data
        .iter()
        .copied()
        .bytes_to_fes()
        .with_checksum::<LongBech32>(&hrp)
        .chars()
    {
        text.push(if upper { c.to_ascii_uppercase() } else { c });
    }
    text
}

/// The prefix and data of a Bech32 string (either case, not mixed). Errors say what is wrong
/// without naming any character of the text (it may be a secret).
fn decode(text: &str) -> Result<(String, Zeroizing<Vec<u8>>), String> {
    let checked = CheckedHrpstring::new::<LongBech32>(text.trim()).map_err(|e| match e {
        CheckedHrpstringError::Checksum(_) => {
            "its checksum does not match: a character was changed or it was cut short; copy it again"
        }
        _ => "it is not Bech32 text (a prefix, 1, then letters and digits in one case): copy it again",
    }
    .to_string())?;
    let mut data = Zeroizing::new(Vec::with_capacity(
        checked.data_part_ascii_no_checksum().len() * 5 / 8,
    ));
    data.extend(checked.byte_iter());
    Ok((checked.hrp().to_lowercase(), data))
}

/// Whether `text` starts like a secret identity (of any kind, in either case, whole or not).
fn starts_like_identity(text: &str) -> bool {
    text.trim_start()
        .as_bytes()
        .get(..SECRET_PREFIX.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(SECRET_PREFIX.as_bytes()))
}

/// The error for a degenerate public key: what is wrong with it, what it means, what to do.
pub(crate) fn degenerate(what: &str) -> String {
    format!(
        "a degenerate key: {what}, which no real key is, so it would not keep a file secret; \
         ask its owner for the recipient again (`paraes keygen -y IDENTITY_FILE` prints it)"
    )
}

/// A fresh random 32-byte secret (a seed or a scalar), wiped on drop.
pub(crate) fn random_secret() -> Result<Zeroizing<[u8; 32]>, ContainerError> {
    let mut seed = Zeroizing::new([0u8; 32]);
    random_bytes(&mut seed[..])?;
    Ok(seed)
}

/// A public key of one public-key stanza kind (that kind's own type, in its file), as a
/// [`PublicRecipient`] holds it; the kind's `Kind::wrap` finds its own type in a recipient.
pub(crate) trait RecipientKey: Any + Send + Sync {
    /// Its text, as users give it (`paraes1...`): equal keys, and only they, have equal text.
    fn text(&self) -> String;
    /// Whether its stanza resists a quantum computer (a classical public-key stanza beside it
    /// in one file voids that). The default: no.
    fn post_quantum(&self) -> bool {
        false
    }
}

/// A secret key of one public-key stanza kind (that kind's own type, in its file), as a
/// [`SecretIdentity`] holds it; the kind's `Kind::unwrap` finds its own type in an identity.
pub(crate) trait IdentityKey: Any + Send + Sync {
    /// The recipient that files for this identity are sealed to.
    fn recipient(&self) -> PublicRecipient;
    /// Its text (the secret), as [`SecretIdentity::to_secret_text`] gives it.
    fn secret_text(&self) -> Zeroizing<String>;
    /// Whether opening a stanza with it may ask for a passphrase ([`SecretIdentity::may_prompt`]).
    /// The default: no (its secret is at hand).
    fn may_prompt(&self) -> bool {
        false
    }
}

/// How a public-key kind's keys are written as Bech32 text (the kind's `Kind::bech32`).
pub(crate) trait Bech32Keys: Sync {
    /// The prefix (HRP, lower case) of its recipients: `paraes` for `paraes1...`.
    fn recipient_prefix(&self) -> &'static str;
    /// The prefix (HRP, lower case) of its identities, which starts with [`SECRET_PREFIX`].
    fn identity_prefix(&self) -> &'static str;
    /// The recipient whose Bech32 data is `data`, refusing a degenerate key; errors say what is
    /// wrong without naming the data.
    fn recipient(&self, data: &[u8]) -> Result<PublicRecipient, String>;
    /// The identity whose Bech32 data is the 32-byte secret `secret`.
    fn identity(&self, secret: &[u8; 32]) -> SecretIdentity;
}

/// How a public-key kind's keys are written as text other than Bech32 (the kind's
/// `Kind::text`): OpenSSH's public key lines and private key files. Kinds may share one form
/// (both SSH kinds share OpenSSH's); the registry lists each form once. Forms are tried in
/// registry order, before Bech32; each says whether the text is written in it at all.
pub(crate) trait TextKeys: Sync {
    /// The recipient written on `line` (trimmed, not blank, not a `#` comment), or `None` if
    /// the line is not in this form (the next form is tried). Errors say what is wrong and what
    /// to do, and may repeat nothing of the line but a public key's type.
    fn recipient(&self, line: &str) -> Option<Result<PublicRecipient, String>>;
    /// The identities of a whole identity file `text` written in this form, or `None` if it is
    /// not. `name` names the file in prompts and errors; `ask` is asked for a passphrase, later,
    /// when a stanza needs a locked secret. Errors name nothing of the text.
    fn identities(
        &self,
        text: &str,
        name: &str,
        ask: &Arc<dyn AskPassphrase>,
    ) -> Option<Result<Vec<SecretIdentity>, String>>;
}

/// Asks for the passphrase of a locked identity (an SSH private key with a passphrase), given
/// by the caller (the binary asks on its terminal). Called only when a stanza's tag shows that
/// the file may open with that identity, and at most once per identity: the outcome, key or
/// failure, is kept.
pub trait AskPassphrase: Send + Sync {
    /// The passphrase of `what` (e.g. "SSH key /home/me/.ssh/id_ed25519"), or why there is none
    /// (a sentence that says what to do: it ends the error).
    fn ask(&self, what: &str) -> Result<Zeroizing<Vec<u8>>, String>;
}

/// A public-key recipient, of any public-key stanza kind (X25519, ML-KEM-768 + X25519).
#[derive(Clone)]
pub struct PublicRecipient(Arc<dyn RecipientKey>);

/// A secret identity, of any public-key stanza kind (X25519, ML-KEM-768 + X25519). Its
/// secret lives once however often it is cloned, and is wiped when the last clone drops.
#[derive(Clone)]
pub struct SecretIdentity(Arc<dyn IdentityKey>);

impl PublicRecipient {
    /// The recipient of a kind's public key.
    pub(crate) fn new(key: impl RecipientKey) -> Self {
        PublicRecipient(Arc::new(key))
    }

    /// The public key if it is a `T`.
    pub(crate) fn key<T: 'static>(&self) -> Option<&T> {
        let key: &dyn Any = &*self.0;
        key.downcast_ref()
    }

    /// Whether its stanza is post-quantum (ML-KEM-768 + X25519): a file that also holds a
    /// classical public-key stanza (X25519, SSH) opens for whoever breaks that one.
    pub fn is_post_quantum(&self) -> bool {
        self.0.post_quantum()
    }
}

impl SecretIdentity {
    /// The identity of a kind's secret key.
    pub(crate) fn new(key: impl IdentityKey) -> Self {
        SecretIdentity(Arc::new(key))
    }

    /// The secret key if it is a `T`.
    pub(crate) fn key<T: 'static>(&self) -> Option<&T> {
        let key: &dyn Any = &*self.0;
        key.downcast_ref()
    }

    /// The recipient that files for this identity are encrypted to.
    pub fn recipient(&self) -> PublicRecipient {
        self.0.recipient()
    }

    /// The identity as text (the secret: write it only to a private file).
    pub fn to_secret_text(&self) -> Zeroizing<String> {
        self.0.secret_text()
    }

    /// Whether opening a stanza with this identity may ask for a passphrase (through the
    /// [`AskPassphrase`] it was read with): true only while its secret is locked (an SSH key
    /// with a passphrase) and its unlock has not been tried; false for an identity whose secret
    /// is at hand, and for a locked one once unlocked or once its unlock failed (the outcome is
    /// kept: it never asks again). Its clones share the answer.
    pub fn may_prompt(&self) -> bool {
        self.0.may_prompt()
    }
}

impl fmt::Debug for SecretIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretIdentity({}, <redacted>)", self.recipient())
    }
}

impl fmt::Display for PublicRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.text())
    }
}

impl fmt::Debug for PublicRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicRecipient({self})")
    }
}

impl PartialEq for PublicRecipient {
    fn eq(&self, other: &Self) -> bool {
        self.0.text() == other.0.text()
    }
}

impl Eq for PublicRecipient {}

/// "a", "a or b", "a, b or c".
fn one_of(items: Vec<String>) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The identity `text` (either case) written with one of `forms` (the registry's, in its
/// order). Errors name no character of the text.
pub(crate) fn parse_identity(
    text: &str,
    forms: &[&dyn Bech32Keys],
) -> Result<SecretIdentity, ContainerError> {
    let bad = |why: String| ContainerError::BadIdentity(why);
    let (hrp, data) = decode(text).map_err(bad)?;
    if data.len() != IDENTITY_DATA_LEN {
        return Err(bad(format!(
            "{} bytes of key data, not {IDENTITY_DATA_LEN}",
            data.len()
        )));
    }
    let mut secret = Zeroizing::new([0u8; IDENTITY_DATA_LEN]);
    secret.copy_from_slice(&data);
    match forms.iter().find(|form| form.identity_prefix() == hrp) {
        Some(form) => Ok(form.identity(&secret)),
        None => Err(bad(format!(
            "prefix \"{hrp}\" (expected {})",
            one_of(
                forms
                    .iter()
                    .map(|form| form.identity_prefix().to_uppercase())
                    .collect()
            )
        ))),
    }
}

/// The recipient `text` written with one of `forms` (the registry's, in its order); an
/// identity given as a recipient is refused before it is decoded, so that nothing about it is
/// told.
pub(crate) fn parse_recipient(
    text: &str,
    forms: &[&dyn Bech32Keys],
    text_forms: &[&dyn TextKeys],
) -> Result<PublicRecipient, ContainerError> {
    let bad = |why: String| ContainerError::BadRecipient(why);
    if let Some(parsed) = text_forms
        .iter()
        .find_map(|form| form.recipient(text.trim()))
    {
        return parsed.map_err(bad);
    }
    if starts_like_identity(text) {
        return Err(bad(
            "that is a secret identity (PARAES-SECRET-KEY-1...), not a recipient: give the \
             recipient that `paraes keygen -y IDENTITY_FILE` prints"
                .into(),
        ));
    }
    let (hrp, data) = decode(text).map_err(bad)?;
    match forms.iter().find(|form| form.recipient_prefix() == hrp) {
        Some(form) => form.recipient(&data).map_err(bad),
        None => Err(bad(format!(
            "prefix \"{hrp}\" (expected {})",
            one_of(
                forms
                    .iter()
                    .map(|form| format!("{}1...", form.recipient_prefix()))
                    .collect()
            )
        ))),
    }
}

/// Whether key-file contents are an identity file rather than a raw or hex key, judged by the
/// whole content (a raw key may start with `#` or `P`): text whose lines are blank, `#`
/// comments, or start like an identity (`PARAES-`, either case), with at least one of those.
/// Random raw bytes are not text. The CLI and the Python package both go by this rule.
pub fn is_identity_text(contents: &[u8]) -> bool {
    const PREFIX: &[u8] = b"PARAES-";
    let Ok(text) = std::str::from_utf8(contents) else {
        return false;
    };
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return false;
    }
    let mut identities = 0;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let starts = line
            .as_bytes()
            .get(..PREFIX.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(PREFIX));
        if !starts {
            return false;
        }
        identities += 1;
    }
    identities > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::stanza::{parse_identities, parse_recipients, Identity};

    #[test]
    fn identities_and_recipients_round_trip_as_text() {
        for id in [
            SecretIdentity::generate_x25519().unwrap(),
            SecretIdentity::generate_hybrid().unwrap(),
        ] {
            let text = id.to_secret_text();
            assert!(text.starts_with("PARAES-"), "{}", &text[..20]);
            let again: SecretIdentity = text.parse().unwrap();
            assert_eq!(again.recipient(), id.recipient());
            let recipient = id.recipient().to_string();
            assert!(recipient.starts_with("paraes"));
            assert_eq!(
                recipient.parse::<PublicRecipient>().unwrap(),
                id.recipient()
            );
            assert!(
                !format!("{id:?}").contains(&text[20..40]),
                "Debug shows no secret"
            );
        }
    }

    #[test]
    fn a_changed_character_is_caught_by_the_checksum() {
        let id = SecretIdentity::generate_x25519().unwrap();
        let recipient = id.recipient().to_string();
        for position in [7, 20, recipient.len() - 1] {
            let mut bytes = recipient.clone().into_bytes();
            bytes[position] = if bytes[position] == b'q' { b'p' } else { b'q' };
            let changed = String::from_utf8(bytes).unwrap();
            assert!(changed.parse::<PublicRecipient>().is_err(), "{changed}");
        }
        assert!(recipient[..recipient.len() - 3]
            .parse::<PublicRecipient>()
            .is_err());
        let secret = id.to_secret_text();
        assert!(secret.parse::<PublicRecipient>().is_err());
        assert!(recipient.parse::<SecretIdentity>().is_err());
    }

    /// Only a locked key whose unlock has not been tried may prompt: not a key, a passphrase,
    /// a paraes identity, an SSH key without a passphrase, nor a locked key once unlocked or
    /// once its unlock failed (its clones alike); a stanza for another key leaves it locked.
    #[test]
    fn only_a_locked_key_not_yet_tried_may_prompt() {
        use crate::container::keys::FileSecret;
        use crate::container::stanza::ssh_tests::{
            identity, identity_with, opens, recipient, seal, Asker, ED25519, ED25519_LOCKED,
            ED25519_PUB, PASSPHRASE, RSA_PUB,
        };
        for ready in [
            Identity::Key(crate::key::Key::new(&[7; 32]).unwrap()),
            Identity::Passphrase(Zeroizing::new(b"words".to_vec())),
            Identity::Secret(SecretIdentity::generate_x25519().unwrap()),
            Identity::Secret(SecretIdentity::generate_hybrid().unwrap()),
            Identity::Secret(identity(ED25519)),
        ] {
            assert!(!ready.may_prompt());
        }
        let d = FileSecret::random().unwrap();
        let own = seal(&recipient(ED25519_PUB), &d);
        let other = seal(&recipient(RSA_PUB), &d);
        for (answer, unlocks) in [
            (Some(PASSPHRASE), true),
            (Some("wrong"), false),
            (None, false),
        ] {
            let ask = Asker::new(answer);
            let secret = identity_with(ED25519_LOCKED, &ask).unwrap();
            let locked = Identity::Secret(secret.clone());
            assert!(locked.may_prompt() && secret.may_prompt());
            assert_eq!(opens(&other, &secret).unwrap(), None);
            assert!(locked.may_prompt(), "another key's stanza asks nothing");
            assert_eq!(opens(&own, &secret).is_ok(), unlocks, "{answer:?}");
            assert_eq!(ask.asked(), 1);
            assert!(!locked.may_prompt() && !secret.may_prompt(), "{answer:?}");
        }
    }

    #[test]
    fn files_of_identities_and_recipients() {
        let a = SecretIdentity::generate_x25519().unwrap();
        let b = SecretIdentity::generate_hybrid().unwrap();
        let text = format!(
            "# my keys\n\n{}\n  {}  \n",
            a.to_secret_text().as_str(),
            b.to_secret_text().as_str()
        );
        assert_eq!(parse_identities(&text).unwrap().len(), 2);
        assert!(parse_identities("# nothing\n").is_err());
        let err = parse_identities("# x\nPARAES-SECRET-KEY-1QQQ\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert_eq!(
            err.to_string().matches("not a paraes identity").count(),
            1,
            "{err}"
        );
        let recipients = format!("{}\n# c\n{}\n", a.recipient(), b.recipient());
        assert_eq!(parse_recipients(&recipients).unwrap().len(), 2);
    }
}
