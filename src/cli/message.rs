//! The bare-message options of `enc` and `dec` (`--format cobblestone` and its context).

use clap::{Args, ValueEnum};

/// The bare-message options of `enc` and `dec`.
#[derive(Args, Debug)]
pub struct MessageArgs {
    /// cobblestone: no container, a bare C2SP chunked-encryption message (Cobblestone-128 or
    /// -256 by the key's size; pyca/cryptography 50 reads and writes it) under your 16- or
    /// 32-byte random key itself [default: container]
    #[arg(long, value_name = "FORMAT", value_enum, conflicts_with = "raw")]
    pub format: Option<FormatArg>,

    /// With --format cobblestone: the message's context, the exact UTF-8 bytes of TEXT
    /// [default: empty]
    #[arg(long, value_name = "TEXT", conflicts_with = "context_hex")]
    pub context: Option<String>,

    /// With --format cobblestone: the message's context as hex
    #[arg(long, value_name = "HEX")]
    pub context_hex: Option<String>,
}

/// What `enc` writes and `dec` reads.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// A paraes container (the default).
    Container,
    /// A bare C2SP chunked-encryption message (Cobblestone).
    Cobblestone,
}
