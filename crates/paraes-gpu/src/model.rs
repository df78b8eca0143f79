//! A CPU model of the base kernels of kernels/aes.cu with Stream counters, operation for
//! operation: the lane-interleaved shared tables, the T-table rounds with funnel-shift
//! rotations, the `__byte_perm` last rounds, the in-kernel CTR counters and the grid-stride
//! tile mapping. Tests run it against the core's AES, so the kernel's logic is checked on
//! machines without a GPU; keep it in step with the .cu file (same names where possible).
//! The kernel variants and the GCM chunk counters are not modelled: the kernel-source test
//! (tests/kernel_source_on_cpu.rs) runs those from aes.cu itself.

#![deny(unsafe_code)]

use paraes_core::gf256;

use crate::kernels::KernelKind;

/// Lanes in a warp, and copies of each table (one per lane, one per shared-memory bank).
pub const LANES: usize = 32;
/// Words of one lane-interleaved 256-entry table.
pub const TABLE_WORDS: usize = 256 * LANES;
/// Words of the lane-interleaved inverse S-box, packed four bytes to a word.
pub const INV_SBOX_WORDS: usize = 64 * LANES;

/// Multiplication by x in GF(2^8), on a byte held in a `u32`.
fn xtime(b: u32) -> u32 {
    u32::from(gf256::xtime(b as u8))
}

/// The product `b * c` in GF(2^8), on bytes held in `u32`s.
fn gmul(b: u32, c: u32) -> u32 {
    u32::from(gf256::mul(b as u8, c as u8))
}

/// The AES S-box and its inverse from the workspace's one GF(2^8) reference
/// (`paraes_core::gf256`, derived from inversion and the affine map, not copied from the .cu
/// file, so a typo in either is caught).
pub fn sboxes() -> &'static ([u8; 256], [u8; 256]) {
    static BOXES: ([u8; 256], [u8; 256]) = (gf256::SBOX, gf256::INV_SBOX);
    &BOXES
}

/// `te0_entry`: Te0[e] = (2s, s, s, 3s), s = S[e], rows in bytes 0..3.
pub fn te0_entry(e: usize) -> u32 {
    let s = u32::from(sboxes().0[e]);
    let s2 = xtime(s);
    s2 | (s << 8) | (s << 16) | ((s2 ^ s) << 24)
}

/// `td0_entry`: Td0[e] = (14s, 9s, 13s, 11s), s = InvS[e].
pub fn td0_entry(e: usize) -> u32 {
    let s = u32::from(sboxes().1[e]);
    gmul(s, 14) | (gmul(s, 9) << 8) | (gmul(s, 13) << 16) | (gmul(s, 11) << 24)
}

/// `inv_sbox_word`: InvS[4w .. 4w + 4] little-endian.
pub fn inv_sbox_word(w: usize) -> u32 {
    let inv = &sboxes().1;
    u32::from_le_bytes([inv[4 * w], inv[4 * w + 1], inv[4 * w + 2], inv[4 * w + 3]])
}

/// A thread block's shared memory after the kernel's fill loop: word `i` of a table holds
/// entry `i / 32` (so entry e of lane l is word e * 32 + l, always in bank l).
pub struct Shared {
    /// Te0 or Td0, interleaved.
    pub table: Vec<u32>,
    /// The packed inverse S-box, interleaved (decryption only, else empty).
    pub inv_sbox: Vec<u32>,
}

impl Shared {
    /// The shared memory of a kernel of kind `kind`.
    pub fn new(kind: KernelKind) -> Self {
        let decrypt = kind == KernelKind::EcbDecrypt;
        let table = (0..TABLE_WORDS)
            .map(|i| {
                if decrypt {
                    td0_entry(i / LANES)
                } else {
                    te0_entry(i / LANES)
                }
            })
            .collect();
        let inv_sbox = if decrypt {
            (0..INV_SBOX_WORDS)
                .map(|i| inv_sbox_word(i / LANES))
                .collect()
        } else {
            Vec::new()
        };
        Shared { table, inv_sbox }
    }
}

/// CUDA's `__byte_perm(x, y, s)`: byte n of the result is byte `(s >> 4n) & 7` of the
/// eight bytes y:x (x is bytes 0..3).
pub fn byte_perm(x: u32, y: u32, s: u32) -> u32 {
    let bytes = (u64::from(y) << 32 | u64::from(x)).to_le_bytes();
    let mut out = 0u32;
    for n in 0..4 {
        out |= u32::from(bytes[((s >> (4 * n)) & 7) as usize]) << (8 * n);
    }
    out
}

/// `rotl`: `__funnelshift_l(x, x, n)`.
pub fn rotl(x: u32, n: u32) -> u32 {
    x.rotate_left(n & 31)
}

/// `byte_of`: byte `k` of `x` alone in the low byte, `__byte_perm(x, 0, 0x4440 + k)`.
pub fn byte_of(x: u32, k: u32) -> u32 {
    byte_perm(x, 0, 0x4440 + k)
}

/// The shared-memory word index the kernel's `lookup` reads for lane `lane`, byte `k` of
/// `x` (its byte address `entry_offset` is four times this): the bank (index mod 32) is
/// the lane whatever the data.
pub fn lookup_index(lane: usize, x: u32, k: u32) -> usize {
    byte_of(x, k) as usize * LANES + lane
}

/// A lane's view of the tables, recording every shared-memory word index it reads when
/// `trace` is set (tests check that each index is in the lane's own bank).
pub struct Lane<'a> {
    shared: &'a Shared,
    lane: usize,
    trace: Option<&'a std::cell::RefCell<Vec<(usize, usize)>>>,
}

impl<'a> Lane<'a> {
    /// Lane `lane` (0..32) of a thread block with shared memory `shared`.
    pub fn new(
        shared: &'a Shared,
        lane: usize,
        trace: Option<&'a std::cell::RefCell<Vec<(usize, usize)>>>,
    ) -> Self {
        Lane {
            shared,
            lane,
            trace,
        }
    }

    fn record(&self, index: usize) {
        if let Some(trace) = self.trace {
            trace.borrow_mut().push((self.lane, index));
        }
    }

    /// `lookup(table, lane4, x, k)`.
    pub fn lookup(&self, x: u32, k: u32) -> u32 {
        let index = lookup_index(self.lane, x, k);
        self.record(index);
        self.shared.table[index]
    }

    /// `inv_sub(inv, lane4, x, k)`.
    pub fn inv_sub(&self, x: u32, k: u32) -> u32 {
        let e = byte_of(x, k);
        let index = (e >> 2) as usize * LANES + self.lane;
        self.record(index);
        byte_perm(self.shared.inv_sbox[index], 0, e & 3)
    }

    /// `encrypt<NR>` on one block (the kernel interleaves several; each is independent).
    pub fn encrypt(&self, s: &mut [u32; 4], rk: &[u32], nr: usize) {
        for c in 0..4 {
            s[c] ^= rk[c];
        }
        for r in 1..nr {
            let mut t = [0u32; 4];
            for (c, out) in t.iter_mut().enumerate() {
                *out = self.lookup(s[c], 0)
                    ^ rotl(self.lookup(s[(c + 1) & 3], 1), 8)
                    ^ rotl(self.lookup(s[(c + 2) & 3], 2), 16)
                    ^ rotl(self.lookup(s[(c + 3) & 3], 3), 24)
                    ^ rk[4 * r + c];
            }
            *s = t;
        }
        let mut t = [0u32; 4];
        for (c, out) in t.iter_mut().enumerate() {
            let lo = byte_perm(self.lookup(s[c], 0), self.lookup(s[(c + 1) & 3], 1), 0x0051);
            let hi = byte_perm(
                self.lookup(s[(c + 2) & 3], 2),
                self.lookup(s[(c + 3) & 3], 3),
                0x0051,
            );
            *out = byte_perm(lo, hi, 0x5410) ^ rk[4 * nr + c];
        }
        *s = t;
    }

    /// `decrypt<NR>` on one block, with equivalent-inverse-cipher round keys.
    pub fn decrypt(&self, s: &mut [u32; 4], rk: &[u32], nr: usize) {
        for c in 0..4 {
            s[c] ^= rk[c];
        }
        for r in 1..nr {
            let mut t = [0u32; 4];
            for (c, out) in t.iter_mut().enumerate() {
                *out = self.lookup(s[c], 0)
                    ^ rotl(self.lookup(s[(c + 3) & 3], 1), 8)
                    ^ rotl(self.lookup(s[(c + 2) & 3], 2), 16)
                    ^ rotl(self.lookup(s[(c + 1) & 3], 3), 24)
                    ^ rk[4 * r + c];
            }
            *s = t;
        }
        let mut t = [0u32; 4];
        for (c, out) in t.iter_mut().enumerate() {
            let lo = byte_perm(
                self.inv_sub(s[c], 0),
                self.inv_sub(s[(c + 3) & 3], 1),
                0x0040,
            );
            let hi = byte_perm(
                self.inv_sub(s[(c + 2) & 3], 2),
                self.inv_sub(s[(c + 1) & 3], 3),
                0x0040,
            );
            *out = byte_perm(lo, hi, 0x5410) ^ rk[4 * nr + c];
        }
        *s = t;
    }
}

/// `bswap`: `__byte_perm(x, 0, 0x0123)`.
pub fn bswap(x: u32) -> u32 {
    byte_perm(x, 0, 0x0123)
}

/// The state words of the counter block of launch block `g`: (ctr_hi:ctr_lo) + g with the
/// kernel's carry, as big-endian bytes loaded into little-endian column words.
pub fn counter_words(ctr_hi: u64, ctr_lo: u64, g: u64) -> [u32; 4] {
    let lo = ctr_lo.wrapping_add(g);
    let hi = ctr_hi.wrapping_add(u64::from(lo < ctr_lo));
    [
        bswap((hi >> 32) as u32),
        bswap(hi as u32),
        bswap((lo >> 32) as u32),
        bswap(lo as u32),
    ]
}

/// Launch geometry of a modelled kernel run.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    /// Thread blocks in the grid.
    pub grid: u32,
    /// Threads per block.
    pub threads: u32,
    /// AES blocks per thread per tile (`BLOCKS_PER_THREAD`).
    pub blocks_per_thread: u32,
}

/// Runs kernel `kind` as the GPU would, thread by thread: `data` holds `nblocks` input
/// blocks and receives the output (in place, as the engine launches it). Returns how many
/// times each block was written (tests check: exactly once).
///
/// # Panics
///
/// For the GCM chunk kinds ([`KernelKind::is_gcm`]), which the model does not cover.
pub fn run(
    kind: KernelKind,
    launch: Launch,
    rk: &[u32],
    nr: usize,
    ctr: (u64, u64),
    data: &mut [u8],
) -> Vec<u32> {
    assert!(
        !kind.is_gcm(),
        "the model runs the Stream-counter kernels only, not {}",
        kind.name()
    );
    let nblocks = (data.len() / 16) as u64;
    let shared = Shared::new(kind);
    let mut writes = vec![0u32; nblocks as usize];
    let tile = u64::from(launch.blocks_per_thread) * u64::from(launch.threads);
    for block_idx in 0..u64::from(launch.grid) {
        let mut base = block_idx * tile;
        while base < nblocks {
            for tid in 0..launch.threads {
                let lane = Lane::new(&shared, tid as usize % LANES, None);
                for b in 0..u64::from(launch.blocks_per_thread) {
                    let g = base + b * u64::from(launch.threads) + u64::from(tid);
                    if g >= nblocks {
                        continue;
                    }
                    let at = g as usize * 16;
                    let mut input = [0u32; 4];
                    for (c, word) in input.iter_mut().enumerate() {
                        *word = u32::from_le_bytes(
                            data[at + 4 * c..at + 4 * c + 4].try_into().unwrap(),
                        );
                    }
                    let mut s = match kind {
                        KernelKind::CtrFused | KernelKind::CtrKeystream => {
                            counter_words(ctr.0, ctr.1, g)
                        }
                        _ => input,
                    };
                    if kind == KernelKind::EcbDecrypt {
                        lane.decrypt(&mut s, rk, nr);
                    } else {
                        lane.encrypt(&mut s, rk, nr);
                    }
                    if kind == KernelKind::CtrFused {
                        for c in 0..4 {
                            s[c] ^= input[c];
                        }
                    }
                    for (c, word) in s.iter().enumerate() {
                        data[at + 4 * c..at + 4 * c + 4].copy_from_slice(&word.to_le_bytes());
                    }
                    writes[g as usize] += 1;
                }
            }
            base += u64::from(launch.grid) * tile;
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{counter_halves, RoundKeyWords};
    use paraes_core::seeded::SplitMix64;
    use paraes_core::{modes, AesImpl, Direction, Job, Key, Mode};
    use std::cell::RefCell;

    #[test]
    fn sbox_known_values() {
        let (s, inv) = sboxes();
        assert_eq!(
            (s[0x00], s[0x01], s[0x53], s[0xff]),
            (0x63, 0x7c, 0xed, 0x16)
        );
        assert_eq!(inv[0x63], 0);
    }

    #[test]
    fn byte_perm_matches_cuda_semantics() {
        assert_eq!(byte_perm(0x4433_2211, 0x8877_6655, 0x3210), 0x4433_2211);
        assert_eq!(byte_perm(0x4433_2211, 0x8877_6655, 0x7654), 0x8877_6655);
        assert_eq!(byte_perm(0x4433_2211, 0x8877_6655, 0x0123), 0x1122_3344);
        assert_eq!(byte_perm(0x4433_2211, 0x8877_6655, 0x5410), 0x6655_2211);
    }

    /// The model kernels agree with the core's AES for every kind, key size, odd launch
    /// shapes, and counters that carry across 2^64 and wrap at 2^128.
    #[test]
    fn model_kernels_match_the_core() {
        let mut rng = SplitMix64::new(0x9e37_79b9_7f4a_7c15);
        let launches = [
            Launch {
                grid: 1,
                threads: 32,
                blocks_per_thread: 1,
            },
            Launch {
                grid: 3,
                threads: 64,
                blocks_per_thread: 4,
            },
            Launch {
                grid: 7,
                threads: 96,
                blocks_per_thread: 2,
            },
        ];
        let ivs = [
            [0u8; 16],
            {
                let mut iv = [0u8; 16];
                iv[8..].copy_from_slice(&(u64::MAX - 40).to_be_bytes());
                iv
            },
            {
                let mut iv = [0xffu8; 16];
                iv[15] = 0xf0;
                iv
            },
        ];
        for bits in [16usize, 24, 32] {
            let key = Key::new(&rng.bytes(bits)).unwrap().expand();
            let nr = key.rounds();
            let enc = RoundKeyWords::new(key.enc_round_keys());
            let dec = RoundKeyWords::new(key.dec_round_keys());
            for (i, launch) in launches.iter().enumerate() {
                let nblocks = [1usize, 700, 1537][i];
                let data = rng.bytes(nblocks * 16);
                let iv = ivs[i];
                let start_block = rng.next_u64() % 1000;
                let ctr = counter_halves(&iv, start_block);
                for kind in [
                    KernelKind::EcbEncrypt,
                    KernelKind::EcbDecrypt,
                    KernelKind::CtrFused,
                    KernelKind::CtrKeystream,
                ] {
                    let (mode, direction) = match kind {
                        KernelKind::EcbEncrypt => (Mode::Ecb, Direction::Encrypt),
                        KernelKind::EcbDecrypt => (Mode::Ecb, Direction::Decrypt),
                        _ => (Mode::Ctr, Direction::Encrypt),
                    };
                    let job = Job::new(mode, direction, &key, iv, start_block * 16);
                    let mut expect = if kind == KernelKind::CtrKeystream {
                        vec![0; data.len()]
                    } else {
                        data.clone()
                    };
                    modes::apply(AesImpl::Portable, &job, &mut expect).unwrap();
                    let mut got = data.clone();
                    let rk = if kind == KernelKind::EcbDecrypt {
                        &dec.w
                    } else {
                        &enc.w
                    };
                    let writes = run(kind, *launch, rk, nr, ctr, &mut got);
                    assert!(
                        writes.iter().all(|&w| w == 1),
                        "{kind:?} {launch:?}: a block not written exactly once"
                    );
                    assert_eq!(got, expect, "{kind:?} AES-{} {launch:?}", bits * 8);
                }
            }
        }
    }

    /// Every shared-memory read of lane l is in bank l, for random data: the bank a lane
    /// touches never depends on the key or the data.
    #[test]
    fn every_lookup_hits_the_lanes_own_bank() {
        let mut rng = SplitMix64::new(42);
        let key = Key::new(&rng.bytes(32)).unwrap().expand();
        let enc = RoundKeyWords::new(key.enc_round_keys());
        let dec = RoundKeyWords::new(key.dec_round_keys());
        for kind in [KernelKind::EcbEncrypt, KernelKind::EcbDecrypt] {
            let shared = Shared::new(kind);
            let trace = RefCell::new(Vec::new());
            for lane_id in 0..LANES {
                let lane = Lane::new(&shared, lane_id, Some(&trace));
                for _ in 0..8 {
                    let mut s = [
                        rng.next_u64() as u32,
                        rng.next_u64() as u32,
                        rng.next_u64() as u32,
                        rng.next_u64() as u32,
                    ];
                    if kind == KernelKind::EcbDecrypt {
                        lane.decrypt(&mut s, &dec.w, 14);
                    } else {
                        lane.encrypt(&mut s, &enc.w, 14);
                    }
                }
            }
            let trace = trace.into_inner();
            assert!(trace.len() > 10_000);
            assert!(trace.iter().all(|&(lane, index)| index % 32 == lane));
        }
    }

    #[test]
    fn interleaved_layout_puts_entry_e_of_lane_l_at_e_times_32_plus_l() {
        let shared = Shared::new(KernelKind::EcbEncrypt);
        for e in [0usize, 1, 77, 255] {
            for l in [0usize, 5, 31] {
                assert_eq!(shared.table[e * 32 + l], te0_entry(e));
            }
        }
        assert_eq!(shared.table.len() * 4, 32 * 1024, "32 KiB of shared memory");
    }
}
