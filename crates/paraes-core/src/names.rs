//! How people write modes and key sizes: `Display` and `FromStr` for [`Mode`] and [`KeySize`],
//! the one mapping between these types and text (CLIs, reports, error messages).

use std::fmt;
use std::str::FromStr;

use crate::engine::Mode;
use crate::key::KeySize;

impl Mode {
    /// Every mode, in the order tools list them.
    pub const ALL: [Mode; 2] = [Mode::Ctr, Mode::Ecb];

    /// The mode's name in lower case, as command lines and file names write it (`ctr`, `ecb`).
    pub const fn lower(self) -> &'static str {
        match self {
            Mode::Ctr => "ctr",
            Mode::Ecb => "ecb",
        }
    }
}

/// `CTR` or `ECB`, as the standards name them.
impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Ctr => "CTR",
            Mode::Ecb => "ECB",
        })
    }
}

/// Text that names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a mode of operation: choose ctr or ecb")]
pub struct UnknownMode(pub String);

/// `ctr` or `ecb`, in any case.
impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.lower().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| UnknownMode(text.to_string()))
    }
}

/// The number of bits: `128`, `192` or `256` (so `AES-{size}-{mode}` reads `AES-256-CTR`).
impl fmt::Display for KeySize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.bits())
    }
}

/// Text that names no AES key size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not an AES key size: choose 128, 192 or 256 (bits)")]
pub struct UnknownKeySize(pub String);

/// `128`, `192` or `256`.
impl FromStr for KeySize {
    type Err = UnknownKeySize;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.trim()
            .parse::<u32>()
            .ok()
            .and_then(|bits| KeySize::from_bits(bits).ok())
            .ok_or_else(|| UnknownKeySize(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for mode in Mode::ALL {
            assert_eq!(mode.to_string().parse::<Mode>(), Ok(mode));
            assert_eq!(mode.lower().parse::<Mode>(), Ok(mode));
        }
        for size in KeySize::ALL {
            assert_eq!(size.to_string().parse::<KeySize>(), Ok(size));
        }
        assert!("cbc".parse::<Mode>().is_err());
        assert!("512".parse::<KeySize>().is_err());
        assert_eq!(
            format!("AES-{}-{}", KeySize::Aes256, Mode::Ctr),
            "AES-256-CTR"
        );
    }
}
