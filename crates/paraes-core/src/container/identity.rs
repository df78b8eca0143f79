//! Public-key recipients and their identities (secret keys), as text that survives copy-paste:
//! Bech32 (BIP 173) with a `paraes` prefix, so a mistyped or truncated key is refused by its
//! checksum. X25519 (`paraes1...`, `PARAES-SECRET-KEY-1...`) and the post-quantum hybrid
//! ML-KEM-768 + X25519 (X-Wing; `paraespq1...`, `PARAES-PQ-SECRET-KEY-1...`).

use std::fmt;
use std::str::FromStr;

use bech32::primitives::decode::CheckedHrpstring;
use bech32::{Bech32, Checksum, Hrp};
use x_wing::{KeyExport, KeySizeUser, TryKeyInit};
use zeroize::Zeroizing;

use super::keys::random_bytes;
use super::ContainerError;

const X25519_RECIPIENT_HRP: &str = "paraes";
const X25519_IDENTITY_HRP: &str = "paraes-secret-key-";
const HYBRID_RECIPIENT_HRP: &str = "paraespq";
const HYBRID_IDENTITY_HRP: &str = "paraes-pq-secret-key-";

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

fn encode(hrp: &str, data: &[u8], upper: bool) -> String {
    let hrp = Hrp::parse(hrp).expect("valid prefix");
    let text = bech32::encode_lower::<LongBech32>(hrp, data).expect("fits the code length");
    if upper {
        text.to_ascii_uppercase()
    } else {
        text
    }
}

/// The prefix and data of a Bech32 string (either case, not mixed).
fn decode(text: &str) -> Result<(String, Zeroizing<Vec<u8>>), String> {
    let checked = CheckedHrpstring::new::<LongBech32>(text.trim()).map_err(|e| e.to_string())?;
    let data = Zeroizing::new(checked.byte_iter().collect::<Vec<u8>>());
    Ok((checked.hrp().to_lowercase(), data))
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
        Zeroizing::new(match self {
            SecretIdentity::X25519(id) => encode(X25519_IDENTITY_HRP, id.0.as_bytes(), true),
            SecretIdentity::Hybrid(id) => encode(HYBRID_IDENTITY_HRP, id.0.as_bytes(), true),
        })
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
        let seed: [u8; 32] = data[..]
            .try_into()
            .map_err(|_| bad(format!("{} bytes of key data, not 32", data.len())))?;
        let seed = Zeroizing::new(seed);
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
        let (hrp, data) = decode(text).map_err(bad)?;
        match hrp.as_str() {
            X25519_RECIPIENT_HRP => {
                let bytes: [u8; 32] = data[..]
                    .try_into()
                    .map_err(|_| bad(format!("{} bytes of key data, not 32", data.len())))?;
                Ok(PublicRecipient::X25519(X25519Recipient(
                    x25519_dalek::PublicKey::from(bytes),
                )))
            }
            HYBRID_RECIPIENT_HRP => {
                let expected = <x_wing::EncapsulationKey as KeySizeUser>::key_size();
                if data.len() != expected {
                    return Err(bad(format!(
                        "{} bytes of key data, not {expected}",
                        data.len()
                    )));
                }
                let key = x_wing::EncapsulationKey::new_from_slice(&data)
                    .map_err(|_| bad("not a valid ML-KEM-768 + X25519 public key".into()))?;
                Ok(PublicRecipient::Hybrid(HybridRecipient(Box::new(key))))
            }
            other if other.starts_with("paraes-") => Err(bad(
                "this is a secret identity, not a recipient: share the recipient \
                 (`paraes keygen -y IDENTITY_FILE` prints it)"
                    .into(),
            )),
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
