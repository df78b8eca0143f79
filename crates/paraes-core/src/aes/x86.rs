//! x86-64 hardware AES: one batch kernel, generic over the register width, instantiated for
//! AES-NI (128-bit), VAES on AVX2 (256-bit) and VAES on AVX-512 (512-bit).
//!
//! `aesenc` has a latency of about 4 cycles and modern cores (Zen 3/4, Ice Lake and later) issue
//! two per cycle, so 4 x 2 = 8 independent registers must be in flight to keep both AES units
//! busy (OpenSSL's reasoning). Every kernel therefore works on batches of [`LANES`] registers,
//! i.e. 8, 16 or 32 blocks at a time. The round count is a const generic so each key size gets
//! a fully unrolled kernel. Partial batches go through a stack buffer that is wiped after.
//!
//! The kernels are `unsafe fn` because the intrinsics need CPU features, and that is their only
//! contract: memory moves through bounds-checked byte slices, never raw pointers. The entry
//! points are only reached through `AesImpl`, which checks the features first.

use core::arch::x86_64::*;

use crate::key::ExpandedKey;

/// Independent registers kept in flight (AES latency x AES units).
pub(super) const LANES: usize = 8;
/// Largest register in bytes (512 bits).
const MAX_REGISTER_BYTES: usize = 64;
/// Largest batch in bytes (8 registers of 512 bits).
const MAX_BATCH_BYTES: usize = LANES * 64;

/// A SIMD register holding [`AesVec::BLOCKS`] AES blocks, one per 128-bit lane.
///
/// All methods, the generic kernels and the closures they pass around are `#[inline(always)]` so
/// that they are compiled inside the `#[target_feature]` entry point that uses them, where the
/// needed features are enabled. Anything left out of line would be compiled without the features
/// and call every intrinsic as a function: measured 50x slower.
///
/// Memory goes in and out through byte slices (bounds-checked; the checks fold away, since every
/// offset is a constant once the kernels are unrolled), so the one contract left to callers is
/// the CPU's.
///
/// # Safety
///
/// Every method may only run on a CPU with the features of the register width (those of the
/// `backend!` module using it), which `AesImpl` checks before any entry point runs.
pub(super) trait AesVec: Copy {
    /// AES blocks per register.
    const BLOCKS: usize;
    /// Bytes per register.
    const BYTES: usize = Self::BLOCKS * 16;

    /// The first [`AesVec::BYTES`] bytes of `src` (panics if it is shorter).
    unsafe fn load(src: &[u8]) -> Self;
    /// Writes the register to the first [`AesVec::BYTES`] bytes of `dst` (panics if shorter).
    unsafe fn store(self, dst: &mut [u8]);
    /// The 16-byte `block` in every lane.
    unsafe fn broadcast(block: &[u8; 16]) -> Self;
    unsafe fn xor(self, other: Self) -> Self;
    unsafe fn enc(self, round_key: Self) -> Self;
    unsafe fn enc_last(self, round_key: Self) -> Self;
    unsafe fn dec(self, round_key: Self) -> Self;
    unsafe fn dec_last(self, round_key: Self) -> Self;
    /// Adds the 64-bit integers lane-wise.
    unsafe fn add64(self, other: Self) -> Self;
    /// Reverses the 16 bytes of every 128-bit lane.
    unsafe fn reverse_lanes(self) -> Self;
}

/// The `pshufb` control that reverses 16 bytes.
const REVERSE_BYTES: [u8; 16] = [15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0];

/// A 128-bit register as it is (the broadcast of the 128-bit width).
#[inline(always)]
fn same(x: __m128i) -> __m128i {
    x
}

/// Implements [`AesVec`] for one register type from its intrinsics.
macro_rules! aes_vec {
    ($vec:ty, $blocks:literal, $loadu:ident, $storeu:ident, $broadcast:ident, $xor:ident,
     $enc:ident, $enc_last:ident, $dec:ident, $dec_last:ident, $add64:ident, $shuffle:ident) => {
        impl AesVec for $vec {
            const BLOCKS: usize = $blocks;
            #[inline(always)]
            unsafe fn load(src: &[u8]) -> Self {
                let src = &src[..Self::BYTES];
                // SAFETY: `src` holds BYTES bytes and the load has no alignment requirement; the
                // CPU features are the caller's contract (see the trait).
                unsafe { $loadu(src.as_ptr().cast()) }
            }
            #[inline(always)]
            unsafe fn store(self, dst: &mut [u8]) {
                let dst = &mut dst[..Self::BYTES];
                // SAFETY: as in `load`, for a writable slice of BYTES bytes.
                unsafe { $storeu(dst.as_mut_ptr().cast(), self) }
            }
            #[inline(always)]
            unsafe fn broadcast(block: &[u8; 16]) -> Self {
                // SAFETY: `block` holds the 16 bytes loaded; CPU features as in `load`.
                unsafe { $broadcast(_mm_loadu_si128(block.as_ptr().cast())) }
            }
            #[inline(always)]
            unsafe fn xor(self, other: Self) -> Self {
                // SAFETY: register arithmetic; CPU features are the caller's contract.
                unsafe { $xor(self, other) }
            }
            #[inline(always)]
            unsafe fn enc(self, round_key: Self) -> Self {
                // SAFETY: register arithmetic; CPU features are the caller's contract.
                unsafe { $enc(self, round_key) }
            }
            #[inline(always)]
            unsafe fn enc_last(self, round_key: Self) -> Self {
                // SAFETY: register arithmetic; CPU features are the caller's contract.
                unsafe { $enc_last(self, round_key) }
            }
            #[inline(always)]
            unsafe fn dec(self, round_key: Self) -> Self {
                // SAFETY: register arithmetic; CPU features are the caller's contract.
                unsafe { $dec(self, round_key) }
            }
            #[inline(always)]
            unsafe fn dec_last(self, round_key: Self) -> Self {
                // SAFETY: register arithmetic; CPU features are the caller's contract.
                unsafe { $dec_last(self, round_key) }
            }
            #[inline(always)]
            unsafe fn add64(self, other: Self) -> Self {
                // SAFETY: register arithmetic; CPU features are the caller's contract.
                unsafe { $add64(self, other) }
            }
            #[inline(always)]
            unsafe fn reverse_lanes(self) -> Self {
                // SAFETY: register arithmetic; CPU features are the caller's contract.
                unsafe { $shuffle(self, Self::broadcast(&REVERSE_BYTES)) }
            }
        }
    };
}

aes_vec!(
    __m128i,
    1,
    _mm_loadu_si128,
    _mm_storeu_si128,
    same,
    _mm_xor_si128,
    _mm_aesenc_si128,
    _mm_aesenclast_si128,
    _mm_aesdec_si128,
    _mm_aesdeclast_si128,
    _mm_add_epi64,
    _mm_shuffle_epi8
);
aes_vec!(
    __m256i,
    2,
    _mm256_loadu_si256,
    _mm256_storeu_si256,
    _mm256_broadcastsi128_si256,
    _mm256_xor_si256,
    _mm256_aesenc_epi128,
    _mm256_aesenclast_epi128,
    _mm256_aesdec_epi128,
    _mm256_aesdeclast_epi128,
    _mm256_add_epi64,
    _mm256_shuffle_epi8
);
aes_vec!(
    __m512i,
    4,
    _mm512_loadu_si512,
    _mm512_storeu_si512,
    _mm512_broadcast_i32x4,
    _mm512_xor_si512,
    _mm512_aesenc_epi128,
    _mm512_aesenclast_epi128,
    _mm512_aesdec_epi128,
    _mm512_aesdeclast_epi128,
    _mm512_add_epi64,
    _mm512_shuffle_epi8
);

/// Round keys broadcast to every lane, `NR + 1` of them.
///
/// # Safety
/// The CPU features of `V` (see [`AesVec`]); so for every `unsafe fn` below.
#[inline(always)]
pub(super) unsafe fn broadcast_keys<V: AesVec, const NR: usize>(
    round_keys: &[[u8; 16]],
) -> [V; 15] {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        let mut keys = [V::broadcast(&round_keys[0]); 15];
        for (key, block) in keys.iter_mut().zip(&round_keys[..=NR]) {
            *key = V::broadcast(block);
        }
        keys
    }
}

/// The forward cipher on a batch of registers.
#[inline(always)]
unsafe fn encrypt_batch<V: AesVec, const NR: usize>(keys: &[V; 15], state: &mut [V; LANES]) {
    // SAFETY: CPU features are this function's contract.
    unsafe { encrypt_rounds::<V, NR, LANES>(keys, state, |_, _| {}) }
}

/// The forward cipher on `N` registers, calling `between(i, state)` after the middle round
/// `i + 1` (`i` = 0 .. NR - 2): other work (the stitched GCM kernel's GHASH) placed there runs
/// while the AES units chew on the rounds, and may pin the state in place (`gcm_x86::pin`).
#[inline(always)]
pub(super) unsafe fn encrypt_rounds<V: AesVec, const NR: usize, const N: usize>(
    keys: &[V; 15],
    state: &mut [V; N],
    mut between: impl FnMut(usize, &mut [V; N]),
) {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        for s in state.iter_mut() {
            *s = s.xor(keys[0]);
        }
        // Unrolled by hand, so that `between` sees each `i` as a constant (LLVM keeps a loop
        // around a large closure body, which then branches on `i` every round).
        macro_rules! middle_rounds {
            ($($i:literal)*) => {$(
                if $i + 1 < NR {
                    for s in state.iter_mut() {
                        *s = s.enc(keys[$i + 1]);
                    }
                    between($i, state);
                }
            )*};
        }
        middle_rounds!(0 1 2 3 4 5 6 7 8 9 10 11 12);
        for s in state.iter_mut() {
            *s = s.enc_last(keys[NR]);
        }
    }
}

/// The equivalent inverse cipher on a batch of registers (keys from `dec_round_keys`).
#[inline(always)]
unsafe fn decrypt_batch<V: AesVec, const NR: usize>(keys: &[V; 15], state: &mut [V; LANES]) {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        for s in state.iter_mut() {
            *s = s.xor(keys[0]);
        }
        for key in &keys[1..NR] {
            for s in state.iter_mut() {
                *s = s.dec(*key);
            }
        }
        for s in state.iter_mut() {
            *s = s.dec_last(keys[NR]);
        }
    }
}

/// Calls `batch` on every full batch of `blocks` (a slice of `LANES * V::BYTES` bytes) and once
/// on the zero-padded remainder, with the index of the batch's first block. `blocks.len()` is
/// a multiple of 16. Safe: it only moves bytes; `batch` carries its own contract.
#[inline(always)]
fn for_each_batch<V: AesVec>(blocks: &mut [u8], mut batch: impl FnMut(&mut [u8], u64)) {
    let batch_bytes = LANES * V::BYTES;
    let mut first_block = 0u64;
    let mut chunks = blocks.chunks_exact_mut(batch_bytes);
    for chunk in &mut chunks {
        batch(chunk, first_block);
        first_block += (batch_bytes / 16) as u64;
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut buf = BatchBuffer([0u8; MAX_BATCH_BYTES]);
        buf.0[..rest.len()].copy_from_slice(rest);
        batch(&mut buf.0[..batch_bytes], first_block);
        rest.copy_from_slice(&buf.0[..rest.len()]);
        // The padding blocks now hold keystream of counters later calls will use: wipe it.
        buf.wipe(batch_bytes);
    }
}

/// Stack room for one partial batch, aligned so it can be wiped a register at a time.
#[repr(C, align(64))]
pub(super) struct BatchBuffer(pub(super) [u8; MAX_BATCH_BYTES]);

impl BatchBuffer {
    /// Zeroes the first `len` bytes (rounded down to 16) with volatile 16-byte stores that the
    /// compiler cannot remove. (`zeroize` stores byte by byte: ~130 ns for 512 bytes, more than
    /// the AES work of a 16-byte call.)
    #[inline(always)]
    pub(super) fn wipe(&mut self, len: usize) {
        let (blocks, _) = self.0[..len].as_chunks_mut::<16>();
        for block in blocks {
            // SAFETY: `block` is a valid, writable 16-byte place, 16-byte aligned (the buffer is
            // 64-byte aligned and blocks start at multiples of 16), as `__m128i` needs; the
            // all-zero `__m128i` is built without any CPU feature beyond x86-64's SSE2.
            unsafe {
                core::ptr::write_volatile(
                    (block as *mut [u8; 16]).cast::<__m128i>(),
                    _mm_setzero_si128(),
                )
            };
        }
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }
}

/// A batch of registers from the first `LANES * V::BYTES` bytes of `src`.
#[inline(always)]
unsafe fn load_batch<V: AesVec>(src: &[u8]) -> [V; LANES] {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        let mut state = [V::load(src); LANES];
        for (i, s) in state.iter_mut().enumerate().skip(1) {
            *s = V::load(&src[i * V::BYTES..]);
        }
        state
    }
}

/// Writes a batch of registers to the first `LANES * V::BYTES` bytes of `dst`.
#[inline(always)]
unsafe fn store_batch<V: AesVec>(state: &[V; LANES], dst: &mut [u8]) {
    for (i, s) in state.iter().enumerate() {
        // SAFETY: CPU features are this function's contract.
        unsafe { s.store(&mut dst[i * V::BYTES..]) };
    }
}

/// The counter blocks `counter, counter + 1, ...` (big-endian) for one batch.
///
/// Fast path: when the low 64 bits do not wrap inside the batch, the counters are built in
/// little-endian lanes with 64-bit vector adds and byte-reversed. Otherwise (once every 2^64
/// blocks) they are computed one by one with 128-bit arithmetic.
#[inline(always)]
unsafe fn counter_batch<V: AesVec>(counter: u128) -> [V; LANES] {
    let batch_blocks = (LANES * V::BLOCKS) as u64;
    let low = counter as u64;
    let high = (counter >> 64) as u64;
    if low.checked_add(batch_blocks - 1).is_some() {
        let mut words = [0u8; MAX_REGISTER_BYTES];
        let mut step = [0u8; MAX_REGISTER_BYTES];
        for lane in 0..V::BLOCKS {
            words[16 * lane..16 * lane + 8].copy_from_slice(&(low + lane as u64).to_le_bytes());
            words[16 * lane + 8..16 * lane + 16].copy_from_slice(&high.to_le_bytes());
            step[16 * lane..16 * lane + 8].copy_from_slice(&(V::BLOCKS as u64).to_le_bytes());
        }
        // SAFETY: CPU features are this function's contract.
        unsafe {
            let step = V::load(&step);
            let mut next = V::load(&words);
            let mut state = [next; LANES];
            for s in state.iter_mut() {
                *s = next.reverse_lanes();
                next = next.add64(step);
            }
            state
        }
    } else {
        let mut bytes = [0u8; MAX_BATCH_BYTES];
        for (i, block) in bytes.chunks_exact_mut(16).enumerate() {
            block.copy_from_slice(&counter.wrapping_add(i as u128).to_be_bytes());
        }
        // SAFETY: CPU features are this function's contract.
        unsafe { load_batch(&bytes) }
    }
}

#[inline(always)]
unsafe fn ecb_encrypt<V: AesVec, const NR: usize>(key: &ExpandedKey, blocks: &mut [u8]) {
    // SAFETY: CPU features are this function's contract, and so the closure's.
    unsafe {
        let keys = broadcast_keys::<V, NR>(key.enc_round_keys());
        for_each_batch::<V>(
            blocks,
            #[inline(always)]
            |batch, _| {
                let mut state = load_batch::<V>(batch);
                encrypt_batch::<V, NR>(&keys, &mut state);
                store_batch(&state, batch);
            },
        );
    }
}

#[inline(always)]
unsafe fn ecb_decrypt<V: AesVec, const NR: usize>(key: &ExpandedKey, blocks: &mut [u8]) {
    // SAFETY: CPU features are this function's contract, and so the closure's.
    unsafe {
        let keys = broadcast_keys::<V, NR>(key.dec_round_keys());
        for_each_batch::<V>(
            blocks,
            #[inline(always)]
            |batch, _| {
                let mut state = load_batch::<V>(batch);
                decrypt_batch::<V, NR>(&keys, &mut state);
                store_batch(&state, batch);
            },
        );
    }
}

#[inline(always)]
unsafe fn ctr_xor<V: AesVec, const NR: usize>(key: &ExpandedKey, counter: u128, blocks: &mut [u8]) {
    // SAFETY: CPU features are this function's contract, and so the closure's.
    unsafe {
        let keys = broadcast_keys::<V, NR>(key.enc_round_keys());
        for_each_batch::<V>(
            blocks,
            #[inline(always)]
            |batch, first_block| {
                let mut stream = counter_batch::<V>(counter.wrapping_add(first_block as u128));
                encrypt_batch::<V, NR>(&keys, &mut stream);
                for (i, ks) in stream.iter().enumerate() {
                    let register = &mut batch[i * V::BYTES..];
                    V::load(register).xor(*ks).store(register);
                }
            },
        );
    }
}

/// Picks the unrolled kernel for the key's round count.
macro_rules! by_rounds {
    ($kernel:ident, $vec:ty, $key:expr, $($arg:expr),*) => {
        match $key.rounds() {
            10 => $kernel::<$vec, 10>($key, $($arg),*),
            12 => $kernel::<$vec, 12>($key, $($arg),*),
            _ => $kernel::<$vec, 14>($key, $($arg),*),
        }
    };
}

/// Defines a module of `#[target_feature]` entry points for one register width.
macro_rules! backend {
    ($name:ident, $vec:ty, $features:literal, $doc:literal) => {
        #[doc = $doc]
        pub(crate) mod $name {
            use super::*;

            /// ECB-encrypts whole blocks in place.
            ///
            /// # Safety
            /// The CPU must support the features named in the `target_feature` attribute.
            #[target_feature(enable = $features)]
            pub(crate) unsafe fn encrypt_blocks(key: &ExpandedKey, blocks: &mut [u8]) {
                // SAFETY: the features the kernel needs are enabled here, and the caller
                // guarantees the CPU has them.
                unsafe { by_rounds!(ecb_encrypt, $vec, key, blocks) }
            }

            /// ECB-decrypts whole blocks in place.
            ///
            /// # Safety
            /// The CPU must support the features named in the `target_feature` attribute.
            #[target_feature(enable = $features)]
            pub(crate) unsafe fn decrypt_blocks(key: &ExpandedKey, blocks: &mut [u8]) {
                // SAFETY: as in `encrypt_blocks`.
                unsafe { by_rounds!(ecb_decrypt, $vec, key, blocks) }
            }

            /// XORs the CTR keystream from `counter` on into whole blocks in place.
            ///
            /// # Safety
            /// The CPU must support the features named in the `target_feature` attribute.
            #[target_feature(enable = $features)]
            pub(crate) unsafe fn ctr_blocks(key: &ExpandedKey, counter: u128, blocks: &mut [u8]) {
                // SAFETY: as in `encrypt_blocks`.
                unsafe { by_rounds!(ctr_xor, $vec, key, counter, blocks) }
            }
        }
    };
}

backend!(
    aesni,
    __m128i,
    "aes,ssse3",
    "AES-NI on 128-bit registers, 8 blocks per batch."
);
backend!(
    vaes256,
    __m256i,
    "aes,vaes,avx2",
    "VAES on 256-bit AVX2 registers, 16 blocks per batch."
);
backend!(
    vaes512,
    __m512i,
    "aes,vaes,avx512f,avx512bw",
    "VAES on 512-bit AVX-512 registers, 32 blocks per batch."
);
