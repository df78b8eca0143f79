//! Where a kernel's tables and buffers live in a CPE's 64 KiB LDM: named regions laid out by an
//! explicit allocator that fails on overflow (never a silent success).

use crate::batch::BATCH_BYTES;
use crate::config::{Buffering, Variant};
use crate::error::SimError;

/// Alignment of every LDM allocation (a `vldd` needs 32-byte alignment).
pub const LDM_ALIGN: usize = 32;

/// One allocated LDM region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// What it holds.
    pub name: String,
    /// Its LDM byte address.
    pub byte: usize,
    /// Its size in bytes (rounded up to [`LDM_ALIGN`]).
    pub bytes: usize,
    /// The bytes its contents occupy (what a DMA of it moves).
    pub used: usize,
}

impl Region {
    /// Its LDM word address.
    #[inline(always)]
    pub fn word(&self) -> usize {
        self.byte / 4
    }
}

/// Lays out the LDM of a CPE region by region; fails when the regions do not fit.
#[derive(Clone, Debug)]
struct Allocator {
    capacity: usize,
    used: usize,
}

impl Allocator {
    fn alloc(&mut self, name: &str, bytes: usize) -> Result<Region, SimError> {
        let size = bytes.div_ceil(LDM_ALIGN) * LDM_ALIGN;
        if self.used + size > self.capacity {
            return Err(SimError::LdmOverflow {
                region: name.to_string(),
                requested: size,
                used: self.used,
                capacity: self.capacity,
            });
        }
        let region = Region {
            name: name.to_string(),
            byte: self.used,
            bytes: size,
            used: bytes,
        };
        self.used += size;
        Ok(region)
    }
}

/// The LDM layout of every CPE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LdmPlan {
    /// Kept back for the CPE thread's stack and spills.
    pub reserved: Region,
    /// The S-box: the 1 KiB ExtS-Box for selldw, the 256-byte S-Box otherwise (Table I).
    pub sbox: Region,
    /// The round keys: the 2 KiB ExtRoundKey for the SIMD variants, 240-byte Round Key for the
    /// original (Table I).
    pub round_keys: Region,
    /// The CTR counter batch (the keystream is computed in it).
    pub counters: Region,
    /// The data buffers: one, or two with double buffering.
    pub buffers: Vec<Region>,
    /// LDM bytes allocated in all.
    pub total_bytes: usize,
}

impl LdmPlan {
    /// Lays out the LDM of a CPE for `variant` and `buffering`; fails if it does not fit.
    pub fn new(
        variant: Variant,
        buffering: Buffering,
        ldm_bytes: usize,
        reserved_bytes: usize,
        buffer_bytes: usize,
    ) -> Result<Self, SimError> {
        if buffer_bytes == 0 || !buffer_bytes.is_multiple_of(BATCH_BYTES) {
            return Err(SimError::Config(format!(
                "the LDM buffer must be a positive multiple of {BATCH_BYTES} bytes, not {buffer_bytes}"
            )));
        }
        let mut ldm = Allocator {
            capacity: ldm_bytes,
            used: 0,
        };
        let reserved = ldm.alloc("reserved (stack, spills)", reserved_bytes)?;
        let (sbox, round_keys) = match variant {
            Variant::Original => (ldm.alloc("S-Box", 256)?, ldm.alloc("Round Key", 240)?),
            Variant::Simd => (ldm.alloc("S-Box", 256)?, ldm.alloc("ExtRoundKey", 2048)?),
            Variant::Selldw | Variant::Pipelined => (
                ldm.alloc("ExtS-Box", 1024)?,
                ldm.alloc("ExtRoundKey", 2048)?,
            ),
        };
        let counters = ldm.alloc("CTR counter batch", BATCH_BYTES)?;
        let count = match buffering {
            Buffering::Single => 1,
            Buffering::Double => 2,
        };
        let buffers = (0..count)
            .map(|i| ldm.alloc(&format!("data buffer {i}"), buffer_bytes))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LdmPlan {
            reserved,
            sbox,
            round_keys,
            counters,
            buffers,
            total_bytes: ldm.used,
        })
    }

    /// Bytes per data buffer.
    pub fn buffer_bytes(&self) -> usize {
        self.buffers[0].used
    }

    /// The tables every CPE fetches by DMA before its first batch, in order.
    pub fn tables(&self) -> [&Region; 2] {
        [&self.sbox, &self.round_keys]
    }

    /// The index (in [`Self::regions`]) of the region holding LDM byte `byte`, if any.
    pub fn region_of(&self, byte: usize) -> Option<usize> {
        self.each_region()
            .position(|r| (r.byte..r.byte + r.bytes).contains(&byte))
    }

    /// Every region in address order.
    pub fn regions(&self) -> Vec<&Region> {
        self.each_region().collect()
    }

    fn each_region(&self) -> impl Iterator<Item = &Region> {
        [&self.reserved, &self.sbox, &self.round_keys, &self.counters]
            .into_iter()
            .chain(&self.buffers)
    }
}
