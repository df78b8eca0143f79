//! Public-key recipients and their identities (secret keys), as text that survives copy-paste:
//! Bech32 (BIP 173) with a `paraes` prefix, so a mistyped or truncated key is refused by its
//! checksum. X25519 (`paraes1...`, `PARAES-SECRET-KEY-1...`) and the post-quantum hybrid
//! ML-KEM-768 + X25519 (X-Wing; `paraespq1...`, `PARAES-PQ-SECRET-KEY-1...`).

use std::fmt;
use std::str::FromStr;

use bech32::primitives::decode::{CheckedHrpstring, CheckedHrpstringError};
use bech32::primitives::iter::{ByteIterExt, Fe32IterExt};
use bech32::{Bech32, Checksum, Hrp};
use x_wing::{KeyExport, KeySizeUser, TryKeyInit};
use zeroize::Zeroizing;

use super::keys::random_bytes;
use super::ContainerError;

const X25519_RECIPIENT_HRP: &str = "paraes";
const X25519_IDENTITY_HRP: &str = "paraes-secret-key-";
const HYBRID_RECIPIENT_HRP: &str = "paraespq";
const HYBRID_IDENTITY_HRP: &str = "paraes-pq-secret-key-";
/// What every identity's text starts with (either case), and no recipient's.
const SECRET_PREFIX: &str = "paraes-";
/// Bytes of the ML-KEM-768 encapsulation key at the start of an X-Wing public key (the X25519
/// key follows): 3 x 384 bytes of 12-bit coefficients (t), then the 32-byte seed rho.
const MLKEM768_KEY_LEN: usize = 1184;
/// Bytes of the coefficients t of an ML-KEM-768 encapsulation key.
const MLKEM768_T_LEN: usize = 3 * 384;

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
fn encode(hrp: &str, data: &[u8], upper: bool) -> Zeroizing<String> {
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

/// X25519 of `secret` and `public`, or `None` where `public` is a low-order point: the result
/// is then all zero whatever the secret (RFC 7748 section 6.1), so it would keep nothing
/// secret. paraes's one check for low-order points: sealing, opening and parsing recipients
/// all go through it.
pub(crate) fn x25519_agree(
    secret: &x25519_dalek::StaticSecret,
    public: &x25519_dalek::PublicKey,
) -> Option<x25519_dalek::SharedSecret> {
    let shared = secret.diffie_hellman(public);
    shared.was_contributory().then_some(shared)
}

/// Refuses a low-order X25519 public key (`what` names it in the error).
fn check_x25519(public: &x25519_dalek::PublicKey, what: &str) -> Result<(), String> {
    // Any secret tells: a clamped scalar is a multiple of the cofactor 8, so it maps every
    // low-order point to zero, and (a multiple of neither large prime order) no other point.
    // This one is public and fixed.
    let probe = x25519_dalek::StaticSecret::from([0x5a; 32]);
    x25519_agree(&probe, public)
        .map(drop)
        .ok_or_else(|| degenerate(&format!("{what} is a low-order point")))
}

/// The error for a degenerate public key: what is wrong with it, what it means, what to do.
fn degenerate(what: &str) -> String {
    format!(
        "a degenerate key: {what}, which no real key is, so it would not keep a file secret; \
         ask its owner for the recipient again (`paraes keygen -y IDENTITY_FILE` prints it)"
    )
}

/// An X-Wing public key from its bytes, refusing degenerate ones: an ML-KEM-768 key whose
/// coefficients t are all zero (then its ciphertexts carry the shared secret in the clear), a
/// low-order X25519 key, and (in `ml-kem`, FIPS 203 section 7.2's modulus check) a coefficient
/// of q = 3329 or more.
fn hybrid_key(bytes: &[u8]) -> Result<x_wing::EncapsulationKey, String> {
    let expected = <x_wing::EncapsulationKey as KeySizeUser>::key_size();
    if bytes.len() != expected {
        return Err(format!("{} bytes of key data, not {expected}", bytes.len()));
    }
    if bytes[..MLKEM768_T_LEN].iter().all(|&b| b == 0) {
        return Err(degenerate("its ML-KEM-768 key is all zero"));
    }
    let x25519: [u8; 32] = bytes[MLKEM768_KEY_LEN..].try_into().expect("32 bytes");
    check_x25519(&x25519_dalek::PublicKey::from(x25519), "its X25519 key")?;
    x_wing::EncapsulationKey::new_from_slice(bytes).map_err(|_| {
        "its ML-KEM-768 key has a coefficient of 3329 or more, which no real key has \
         (FIPS 203 modulus check): copy it again"
            .to_string()
    })
}

/// An X25519 public key a file can be encrypted to.
#[derive(Clone, PartialEq, Eq)]
pub struct X25519Recipient(pub(crate) x25519_dalek::PublicKey);

/// The X25519 secret key that opens files encrypted to its [`X25519Recipient`].
#[derive(Clone)]
pub struct X25519Identity(pub(crate) x25519_dalek::StaticSecret);

/// A hybrid post-quantum public key (X-Wing: ML-KEM-768 + X25519).
#[derive(Clone, PartialEq, Eq)]
pub struct HybridRecipient(pub(crate) Box<x_wing::EncapsulationKey>);

/// The hybrid secret key (a 32-byte X-Wing seed) that opens files encrypted to its
/// [`HybridRecipient`].
#[derive(Clone)]
pub struct HybridIdentity(pub(crate) Box<x_wing::DecapsulationKey>);

/// A public-key recipient of either kind.
#[derive(Clone, PartialEq, Eq)]
pub enum PublicRecipient {
    /// X25519.
    X25519(X25519Recipient),
    /// ML-KEM-768 + X25519.
    Hybrid(HybridRecipient),
}

/// A secret identity of either kind.
#[derive(Clone)]
pub enum SecretIdentity {
    /// X25519.
    X25519(X25519Identity),
    /// ML-KEM-768 + X25519.
    Hybrid(HybridIdentity),
}

fn random_32() -> Result<Zeroizing<[u8; 32]>, ContainerError> {
    let mut seed = Zeroizing::new([0u8; 32]);
    random_bytes(&mut seed[..])?;
    Ok(seed)
}

impl SecretIdentity {
    /// A fresh X25519 identity.
    pub fn generate_x25519() -> Result<Self, ContainerError> {
        Ok(SecretIdentity::X25519(X25519Identity(
            x25519_dalek::StaticSecret::from(*random_32()?),
        )))
    }

    /// A fresh hybrid (ML-KEM-768 + X25519) identity.
    pub fn generate_hybrid() -> Result<Self, ContainerError> {
        Ok(SecretIdentity::Hybrid(HybridIdentity(Box::new(
            x_wing::DecapsulationKey::from(*random_32()?),
        ))))
    }

    /// The recipient that files for this identity are encrypted to.
    pub fn recipient(&self) -> PublicRecipient {
        match self {
            SecretIdentity::X25519(id) => {
                PublicRecipient::X25519(X25519Recipient(x25519_dalek::PublicKey::from(&id.0)))
            }
            SecretIdentity::Hybrid(id) => {
                use x_wing::Decapsulator;
                PublicRecipient::Hybrid(HybridRecipient(Box::new(id.0.encapsulation_key().clone())))
            }
        }
    }

    /// The identity as text (the secret: write it only to a private file).
    pub fn to_secret_text(&self) -> Zeroizing<String> {
        match self {
            SecretIdentity::X25519(id) => encode(X25519_IDENTITY_HRP, id.0.as_bytes(), true),
            SecretIdentity::Hybrid(id) => encode(HYBRID_IDENTITY_HRP, id.0.as_bytes(), true),
        }
    }
}

impl fmt::Debug for SecretIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretIdentity({}, <redacted>)", self.recipient())
    }
}

impl FromStr for SecretIdentity {
    type Err = ContainerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: String| ContainerError::BadIdentity(why);
        let (hrp, data) = decode(text).map_err(bad)?;
        if data.len() != 32 {
            return Err(bad(format!("{} bytes of key data, not 32", data.len())));
        }
        let mut seed = Zeroizing::new([0u8; 32]);
        seed.copy_from_slice(&data);
        match hrp.as_str() {
            X25519_IDENTITY_HRP => Ok(SecretIdentity::X25519(X25519Identity(
                x25519_dalek::StaticSecret::from(*seed),
            ))),
            HYBRID_IDENTITY_HRP => Ok(SecretIdentity::Hybrid(HybridIdentity(Box::new(
                x_wing::DecapsulationKey::from(*seed),
            )))),
            other => Err(bad(format!(
                "prefix \"{other}\" (expected {} or {})",
                X25519_IDENTITY_HRP.to_uppercase(),
                HYBRID_IDENTITY_HRP.to_uppercase()
            ))),
        }
    }
}

impl fmt::Display for PublicRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublicRecipient::X25519(r) => {
                f.write_str(&encode(X25519_RECIPIENT_HRP, r.0.as_bytes(), false))
            }
            PublicRecipient::Hybrid(r) => {
                f.write_str(&encode(HYBRID_RECIPIENT_HRP, &r.0.to_bytes(), false))
            }
        }
    }
}

impl fmt::Debug for PublicRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicRecipient({self})")
    }
}

impl FromStr for PublicRecipient {
    type Err = ContainerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: String| ContainerError::BadRecipient(why);
        if starts_like_identity(text) {
            // Refused before decoding, so that nothing about it (whole or mistyped) is told.
            return Err(bad(
                "that is a secret identity (PARAES-SECRET-KEY-1...), not a recipient: give the \
                 recipient that `paraes keygen -y IDENTITY_FILE` prints"
                    .into(),
            ));
        }
        let (hrp, data) = decode(text).map_err(bad)?;
        match hrp.as_str() {
            X25519_RECIPIENT_HRP => {
                let bytes: [u8; 32] = data[..]
                    .try_into()
                    .map_err(|_| bad(format!("{} bytes of key data, not 32", data.len())))?;
                let key = x25519_dalek::PublicKey::from(bytes);
                check_x25519(&key, "its X25519 key").map_err(bad)?;
                Ok(PublicRecipient::X25519(X25519Recipient(key)))
            }
            HYBRID_RECIPIENT_HRP => Ok(PublicRecipient::Hybrid(HybridRecipient(Box::new(
                hybrid_key(&data).map_err(bad)?,
            )))),
            other => Err(bad(format!(
                "prefix \"{other}\" (expected {X25519_RECIPIENT_HRP}1... or {HYBRID_RECIPIENT_HRP}1...)"
            ))),
        }
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

/// The identities of an identity file (at least one).
pub fn parse_identities(text: &str) -> Result<Vec<SecretIdentity>, ContainerError> {
    let out = parse_lines(text, ContainerError::BadIdentity)?;
    if out.is_empty() {
        return Err(ContainerError::BadIdentity("no identity in it".into()));
    }
    Ok(out)
}

/// The recipients of a recipients file.
pub fn parse_recipients(text: &str) -> Result<Vec<PublicRecipient>, ContainerError> {
    parse_lines(text, ContainerError::BadRecipient)
}

#[cfg(test)]
mod tests {
    use super::*;

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
