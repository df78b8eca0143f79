//! What a row measures: the engine seam in CTR or ECB ([`paraes_core::Mode`]), or format v3's
//! body, 16 KiB AES-GCM chunks (C2SP Cobblestone) sealed by the pipeline on the engine.

use std::fmt;
use std::str::FromStr;

use paraes_core::Mode;

/// The mode of a `paraes bench` row (`mode` in JSON and CSV).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BenchMode {
    /// AES-CTR through the engine seam (one stream counter).
    Ctr,
    /// AES-ECB through the engine seam.
    Ecb,
    /// Format v3's body: 16 KiB AES-GCM chunks sealed as `paraes_core::pipeline::seal` seals
    /// them: whole by the engine where it can (the CPU engine's stitched kernel), elsewhere each
    /// chunk's CTR on the engine (counters `nonce_i || be32(2 + j)`) and its GHASH tag (see
    /// [`crate::measure::measure_gcm`]). 128 and 256-bit keys only.
    Gcm,
}

/// What the `gcm` rows measure, in one paragraph (for the table's header and the summary).
pub const GCM_NOTE: &str = "gcm rows: format v3's body (C2SP Cobblestone: 16 KiB AES-GCM \
    chunks) sealed in memory as `paraes enc` seals a file: the buffer in its workers' windows \
    (4 MiB, or smaller where the buffer is too short to give each of the engine's threads four, \
    256 KiB at least), \
    as many windows sealed side by side as the engine has threads. Where the engine runs the \
    records job in place (the CPU engine with more than one thread or with the stitched kernel), \
    each window lies in its records' data slots and is \
    sealed there 16 GCM chunks at a time, as a worker seals what it reads (by the stitched \
    VAES-512 + VPCLMULQDQ kernel, CTR and GHASH in one pass, where the CPU has it, else by CTR \
    and then GHASH); where it runs the records job apart, each window sealed whole into a \
    second buffer; elsewhere the CTR of the window's GCM chunks in one engine call, counters \
    nonce_i || be32(2+j), then each GCM chunk's GHASH tag and E(J0) on the worker's thread, \
    the data moved apart to make room for the tags. A size that is not whole 16 KiB chunks is \
    a stream's end, whose last GCM chunk is short. openssl gcm rows: `openssl speed -evp \
    aes-BITS-gcm`, one GCM context streamed over every buffer (CTR and GHASH, no tag per \
    buffer).";

impl BenchMode {
    /// Every mode, in the order `--mode` lists them.
    pub const ALL: [BenchMode; 3] = [BenchMode::Ctr, BenchMode::Ecb, BenchMode::Gcm];

    /// The name rows and command lines use: `ctr`, `ecb`, `gcm`.
    pub const fn lower(self) -> &'static str {
        match self {
            BenchMode::Ctr => "ctr",
            BenchMode::Ecb => "ecb",
            BenchMode::Gcm => "gcm",
        }
    }

    /// The engine seam's mode of the rows measured by one engine call (`None` for GCM, whose
    /// rows are measured through the pipeline's seal, with CTR on the engine).
    pub const fn engine_mode(self) -> Option<Mode> {
        match self {
            BenchMode::Ctr => Some(Mode::Ctr),
            BenchMode::Ecb => Some(Mode::Ecb),
            BenchMode::Gcm => None,
        }
    }

    /// Whether the mode has `bits`-bit keys: CTR and ECB have 128, 192 and 256; GCM (format
    /// v3's body, C2SP Cobblestone-128 and -256) has 128 and 256 only.
    pub const fn has_key_bits(self, bits: u32) -> bool {
        match self {
            BenchMode::Ctr | BenchMode::Ecb => matches!(bits, 128 | 192 | 256),
            BenchMode::Gcm => matches!(bits, 128 | 256),
        }
    }

    /// The cipher's name, e.g. `AES-256-GCM`.
    pub fn cipher(self, bits: u32) -> String {
        format!("AES-{bits}-{self}")
    }
}

impl From<Mode> for BenchMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Ctr => BenchMode::Ctr,
            Mode::Ecb => BenchMode::Ecb,
        }
    }
}

/// `CTR`, `ECB`, `GCM`.
impl fmt::Display for BenchMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BenchMode::Ctr => "CTR",
            BenchMode::Ecb => "ECB",
            BenchMode::Gcm => "GCM",
        })
    }
}

/// Text that names no bench mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBenchMode(pub String);

impl fmt::Display for UnknownBenchMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not a mode: choose ctr, ecb or gcm", self.0)
    }
}

impl std::error::Error for UnknownBenchMode {}

/// `ctr`, `ecb` or `gcm`, in any case.
impl FromStr for BenchMode {
    type Err = UnknownBenchMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        BenchMode::ALL
            .into_iter()
            .find(|mode| mode.lower().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| UnknownBenchMode(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_key_sizes() {
        for mode in BenchMode::ALL {
            assert_eq!(mode.lower().parse::<BenchMode>(), Ok(mode));
            assert_eq!(mode.to_string().parse::<BenchMode>(), Ok(mode));
        }
        assert_eq!(" Gcm ".parse::<BenchMode>(), Ok(BenchMode::Gcm));
        let err = "cbc".parse::<BenchMode>().unwrap_err().to_string();
        assert_eq!(err, "'cbc' is not a mode: choose ctr, ecb or gcm");
        assert_eq!(BenchMode::from(Mode::Ecb), BenchMode::Ecb);
        assert_eq!(BenchMode::Ctr.engine_mode(), Some(Mode::Ctr));
        assert_eq!(BenchMode::Gcm.engine_mode(), None);
        assert_eq!(BenchMode::Gcm.cipher(256), "AES-256-GCM");
        assert!(BenchMode::Ctr.has_key_bits(192) && BenchMode::Ecb.has_key_bits(192));
        assert!(!BenchMode::Gcm.has_key_bits(192));
        assert!(BenchMode::Gcm.has_key_bits(128) && BenchMode::Gcm.has_key_bits(256));
        assert!(!GCM_NOTE.contains('\n') && !GCM_NOTE.contains("  "));
        // The note names `paraes enc`'s workers' window, which `paraes bench` seals gcm rows in.
        assert_eq!(paraes_core::pipeline::WINDOW, 4 << 20);
    }
}
