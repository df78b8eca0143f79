//! How the simulated SW26010 runs SW-AES: the rung of the optimisation ladder ([`Variant`]), DMA
//! buffering ([`Buffering`]), core groups and cost parameters ([`SimConfig`]).

use std::fmt;
use std::str::FromStr;

use crate::error::SimError;
use crate::params::Params;

/// The rungs of the paper's optimisation ladder (Fig. 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// "Original parallel": no vectorisation, one state in scalar registers, byte lookups.
    Original,
    /// SIMD-friendly layout, but SubBytes by extracting lanes to scalars and inserting back.
    Simd,
    /// SIMD layout + semi-SIMD lookup with `selldw` on the ExtS-Box.
    Selldw,
    /// SIMD + selldw + Pipelined Step Execution (two batches interleaved).
    Pipelined,
}

impl Variant {
    /// Every variant, in the order of the ladder.
    pub const ALL: [Variant; 4] = [
        Variant::Original,
        Variant::Simd,
        Variant::Selldw,
        Variant::Pipelined,
    ];

    /// The name used on the command line (`--sw-variant`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Original => "original",
            Variant::Simd => "simd",
            Variant::Selldw => "selldw",
            Variant::Pipelined => "pipelined",
        }
    }
}

/// Single or double buffering of the DMA transfers in LDM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buffering {
    /// One LDM buffer: get, compute, put, in turn.
    Single,
    /// Two LDM buffers: the next get runs while the current buffer is computed.
    Double,
}

impl Buffering {
    /// Both modes.
    pub const ALL: [Buffering; 2] = [Buffering::Single, Buffering::Double];

    /// The name used on the command line (`--sw-buffering`).
    pub fn name(self) -> &'static str {
        match self {
            Buffering::Single => "single",
            Buffering::Double => "double",
        }
    }
}

/// Implements Display and FromStr from `ALL` and `name()`.
macro_rules! named_enum {
    ($type:ident, $what:literal) => {
        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $type {
            type Err = SimError;
            fn from_str(text: &str) -> Result<Self, SimError> {
                $type::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == text)
                    .ok_or_else(|| {
                        let names: Vec<&str> = $type::ALL.iter().map(|v| v.name()).collect();
                        SimError::Config(format!(
                            "unknown {} '{text}': choose one of {}",
                            $what,
                            names.join(", ")
                        ))
                    })
            }
        }
    };
}
named_enum!(Variant, "Sunway variant");
named_enum!(Buffering, "Sunway buffering");

/// How the simulated SW26010 runs SW-AES.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// The optimisation rung.
    pub variant: Variant,
    /// Single or double buffering.
    pub buffering: Buffering,
    /// Core groups used, 1 to 4.
    pub cgs: usize,
    /// The cost parameters (defaults: [`Params::DEFAULT`]).
    pub params: Params,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            variant: Variant::Pipelined,
            buffering: Buffering::Double,
            cgs: 4,
            params: Params::DEFAULT,
        }
    }
}

impl SimConfig {
    /// A configuration with the default parameters.
    pub fn new(variant: Variant, buffering: Buffering, cgs: usize) -> Self {
        SimConfig {
            variant,
            buffering,
            cgs,
            ..SimConfig::default()
        }
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.cgs == 0 || self.cgs > self.params.cgs_per_chip {
            return Err(SimError::Config(format!(
                "an SW26010 has core groups 1 to {}; {} core groups is out of range",
                self.params.cgs_per_chip, self.cgs
            )));
        }
        if self.params.original_unroll == 0 {
            return Err(SimError::Config(
                "original_unroll is how many loop iterations one compiled body holds: give 1 or more"
                    .into(),
            ));
        }
        Ok(())
    }
}
