//! Stitched AES-GCM of one C2SP chunk on VAES-512 and VPCLMULQDQ: CTR and GHASH in one pass.
//!
//! The unstitched path runs CTR over a chunk and then GHASH over the ciphertext, each a loop
//! that keeps one kind of unit busy. Here each loop step encrypts one batch of 32 counter
//! blocks ([`encrypt_rounds`], the round code CTR uses) and, after each of its first eight
//! middle rounds, hashes one register (4 blocks) of a batch of ciphertext with the precomputed
//! powers H^32 .. H^1, summed unreduced and reduced once per batch ([`Wide`], the aggregated
//! reduction of [`crate::polyval`]), as BoringSSL's and Linux's VAES GCM code interleave them:
//!
//! - sealing hashes the ciphertext it wrote [`SEAL_LAG`] batches earlier; the batches left
//!   unhashed at the end are hashed between the rounds of the tail's keystream and of E(J0);
//! - opening hashes the batch it is about to decrypt, loaded before it is overwritten.
//!
//! On Zen 4 VPCLMULQDQ and VAES share execution pipes, so stitching does not make GHASH free;
//! it keeps both busy at once instead of one after the other (measured with the `gcm`
//! criterion bench; docs/RESULTS.md). An empty `asm!` barrier ([`pin`]) keeps LLVM from
//! gathering the multiplies of a whole batch between two rounds.
//!
//! GHASH is computed as [`crate::ghash`] computes it: POLYVAL with the key mulX(ByteReverse(H))
//! over byte-reversed blocks. The chunk's last partial batch (fewer than 32 blocks, the last
//! block possibly partial) goes through zero-padded stack buffers, right-aligned for hashing
//! so that block `p` of 32 takes H^(32 - p); the keystream buffer is wiped after. The lengths
//! block is folded in last with one multiplication by H.
//!
//! Counter blocks are `nonce || be32(2 + j)`, kept byte-reversed (little-endian) per lane so
//! 64-bit adds step them; a chunk uses counters 2 ..= 1025 (the padded tail batch at most
//! 1057), so the adds never carry into the nonce ([`MAX_LEN`] bounds any input). Seven batches
//! in eight add to the counters' last byte in big-endian form instead ([`Counters::batch`]).
//! Nothing is indexed by secret data; the only branches are on lengths and counter values,
//! which are public.

use core::arch::x86_64::*;

use super::x86::{broadcast_keys, encrypt_rounds, AesVec, BatchBuffer, LANES};
use super::ChunkBytes;
use crate::key::ExpandedKey;
use crate::polyval::x86::{dot, Wide};
use crate::polyval::GROUP as POWERS;

/// The register: four AES blocks.
type V = __m512i;
/// Blocks per batch: [`LANES`] registers of four.
const BATCH_BLOCKS: usize = LANES * 4;
/// Bytes per batch.
const BATCH_BYTES: usize = BATCH_BLOCKS * 16;
/// How many batches sealing hashes behind the one it encrypts. With 2 the ciphertext hashed
/// was stored a whole batch before, so its loads never wait on the rounds that make it
/// (measured on Zen 4, 1 MiB in 16 KiB chunks: 2% faster than 1).
const SEAL_LAG: usize = 2;

/// The most bytes one call takes: counters of every block, padding included, stay below 2^32
/// (GCM's own limit is lower: 2^32 - 2 blocks).
pub(super) const MAX_LEN: usize = ((1 << 32) - 2 * BATCH_BLOCKS) * 16;

/// A batch-sized stack buffer for the tail's hash, aligned to a register.
#[repr(C, align(64))]
struct TailBlocks([u8; BATCH_BYTES]);

/// The key material of the kernel, broadcast or loaded once per chunk.
struct Keys {
    rounds: [V; 15],
    /// H^32 .. H^1 (dot-powers), four per register, for a whole batch.
    batch_powers: [V; LANES],
    /// H^1.
    h: __m128i,
}

/// Loads the four dot-powers from `powers[first]` on.
#[inline(always)]
unsafe fn powers_at(powers: &[[u8; 16]; POWERS], first: usize) -> V {
    // SAFETY: CPU features are the caller's contract; `load` bounds-checks the 64 bytes.
    unsafe { V::load(&powers.as_flattened()[16 * first..]) }
}

impl Keys {
    #[inline(always)]
    unsafe fn new<const NR: usize>(key: &ExpandedKey, powers: &[[u8; 16]; POWERS]) -> Self {
        // SAFETY: CPU features are the caller's contract; the 16-byte load reads `powers[63]`.
        unsafe {
            Keys {
                rounds: broadcast_keys::<V, NR>(key.enc_round_keys()),
                batch_powers: core::array::from_fn(|r| {
                    powers_at(powers, POWERS - BATCH_BLOCKS + 4 * r)
                }),
                h: _mm_loadu_si128(powers[POWERS - 1].as_ptr().cast()),
            }
        }
    }
}

/// The counter block `nonce || be32(0)` byte-reversed (little-endian), built in a register:
/// adding `c` to its low 64 bits gives block `nonce || be32(c)` reversed, for any `c` < 2^32.
#[inline(always)]
unsafe fn reversed_nonce(nonce: &[u8; 12]) -> __m128i {
    let word = |i: usize| {
        let bytes = nonce[4 * i..4 * i + 4].try_into().expect("4 bytes");
        u32::from_be_bytes(bytes) as i32
    };
    // SAFETY: register arithmetic; the caller runs with sse2 enabled.
    unsafe { _mm_set_epi32(word(0), word(1), word(2), 0) }
}

/// Reverses the 16 bytes of a block.
#[inline(always)]
unsafe fn reverse(x: __m128i) -> __m128i {
    // SAFETY: register arithmetic; the caller runs with ssse3 enabled.
    unsafe {
        _mm_shuffle_epi8(
            x,
            _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        )
    }
}

/// The counter blocks of the batches, little-endian per lane; each batch's are byte-reversed
/// into the big-endian blocks AES takes.
struct Counters {
    /// The counters of the next batch's first register, little-endian.
    next: V,
    /// The low byte of the next batch's first counter.
    low: u8,
}

impl Counters {
    /// Counters from `nonce || be32(2)`; `nonce` from [`reversed_nonce`].
    #[inline(always)]
    unsafe fn new(nonce: __m128i) -> Self {
        // SAFETY: CPU features are the caller's contract.
        unsafe {
            let lanes = _mm512_set_epi64(0, 5, 0, 4, 0, 3, 0, 2);
            Counters {
                next: _mm512_add_epi64(_mm512_broadcast_i32x4(nonce), lanes),
                low: 2,
            }
        }
    }

    /// The big-endian counter blocks of the next batch. When no counter of the batch carries
    /// out of its last byte (7 batches in 8), they are the first register's blocks plus 4, 8,
    /// ... added to that byte directly: one shuffle a batch instead of eight.
    #[inline(always)]
    unsafe fn batch(&mut self) -> [V; LANES] {
        // SAFETY: CPU features are the caller's contract.
        unsafe {
            let first = self.next.reverse_lanes();
            let mut out = [first; LANES];
            if usize::from(self.low) + BATCH_BLOCKS <= 256 {
                for (i, o) in out.iter_mut().enumerate().skip(1) {
                    // The last byte of each block is the top byte of its last 32-bit word.
                    let last = (4 * i as i64) << 56;
                    *o = _mm512_add_epi32(
                        first,
                        _mm512_set_epi64(last, 0, last, 0, last, 0, last, 0),
                    );
                }
            } else {
                let step = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
                let mut next = self.next;
                for o in out.iter_mut().skip(1) {
                    next = next.add64(step);
                    *o = next.reverse_lanes();
                }
            }
            self.next = self
                .next
                .add64(_mm512_set_epi64(0, 32, 0, 32, 0, 32, 0, 32));
            self.low = self.low.wrapping_add(BATCH_BLOCKS as u8);
            out
        }
    }
}

/// Adds the hash of register `r` of a batch (`x`, as loaded) to `sum`, with the running hash
/// `acc` folded into register 0.
#[inline(always)]
unsafe fn hash_register(keys: &Keys, sum: &mut Wide, acc: __m128i, x: V, r: usize) {
    // SAFETY: CPU features are the caller's contract.
    unsafe {
        let mut x = x.reverse_lanes();
        if r == 0 {
            x = _mm512_xor_si512(x, _mm512_zextsi128_si512(acc));
        }
        sum.mul_add(x, keys.batch_powers[r]);
    }
}

/// A scheduling barrier that emits nothing: `x` passes through an empty `asm!`, so what
/// computes it stays before and what uses it stays after, and such statements keep their
/// order. [`rounds_hashing`] passes the AES state, the hash sums and the next data register
/// through it after each hashing round: without it LLVM gathers a batch's GHASH into one run
/// of multiplies between two AES rounds, which the out-of-order core then cannot overlap with
/// the rounds (measured on Zen 4: the stitched seal 25% slower).
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn pin(x: &mut V) {
    // SAFETY: the assembly is empty: it names one register, left unchanged, and touches no
    // memory, stack or flags.
    unsafe {
        core::arch::asm!(
            "/* {0} */",
            inout(zmm_reg) * x,
            options(nomem, nostack, preserves_flags)
        );
    }
}

/// Encrypts `state` (its AES rounds) while hashing the whole batch `batch` into `acc`, one
/// register after each of the first [`LANES`] middle rounds, pinned in that order ([`pin`]).
#[inline(always)]
unsafe fn rounds_hashing<const NR: usize, const N: usize>(
    keys: &Keys,
    state: &mut [V; N],
    batch: &[u8],
    acc: &mut __m128i,
) {
    // SAFETY: CPU features are the caller's contract, and so the closure's; `load`
    // bounds-checks.
    unsafe {
        let mut sum = Wide::new();
        let mut next = V::load(batch);
        encrypt_rounds::<V, NR, N>(
            &keys.rounds,
            state,
            #[inline(always)]
            |i, state| {
                if i < LANES {
                    hash_register(keys, &mut sum, *acc, next, i);
                    if i + 1 < LANES {
                        next = V::load(&batch[64 * (i + 1)..]);
                    }
                    for s in state.iter_mut() {
                        pin(s);
                    }
                    for part in sum.parts() {
                        pin(part);
                    }
                    pin(&mut next);
                }
            },
        );
        *acc = sum.reduce();
    }
}

/// The keystream of the next batch; between its rounds, when `hashed` holds a batch of
/// ciphertext, that batch is hashed into `acc`.
#[inline(always)]
unsafe fn keystream<const NR: usize>(
    keys: &Keys,
    counters: &mut Counters,
    hashed: Option<&[u8]>,
    acc: &mut __m128i,
) -> [V; LANES] {
    // SAFETY: CPU features are the caller's contract.
    unsafe {
        let mut stream = counters.batch();
        match hashed {
            Some(batch) => rounds_hashing::<NR, LANES>(keys, &mut stream, batch, acc),
            None => encrypt_rounds::<V, NR, LANES>(&keys.rounds, &mut stream, |_, _| {}),
        }
        stream
    }
}

/// XORs the keystream into the first [`BATCH_BYTES`] bytes of `data`.
#[inline(always)]
unsafe fn xor_batch(stream: &[V; LANES], data: &mut [u8]) {
    for (i, ks) in stream.iter().enumerate() {
        let register = &mut data[i * 64..];
        // SAFETY: CPU features are the caller's contract; load and store bounds-check.
        unsafe { V::load(register).xor(*ks).store(register) };
    }
}

/// The bytes of one call: a chunk in place, or its input and output apart. The kernel reads
/// the input and writes the output through these, so one body of code serves both; a trait
/// (not [`ChunkBytes`], which the entry points take) so that each form gets its own copy of
/// the batch loop, with no branch on the form per batch.
trait Sides {
    /// Bytes of the chunk.
    fn len(&self) -> usize;
    /// The input (plaintext to seal, ciphertext to open).
    fn input(&self) -> &[u8];
    /// The output as written so far.
    fn output(&self) -> &[u8];
    /// Writes the input XOR `stream` over the output's [`BATCH_BYTES`] bytes from `at`.
    ///
    /// # Safety
    /// The CPU features of the kernel.
    unsafe fn xor_batch(&mut self, at: usize, stream: &[V; LANES]);
    /// The output before `at` (whole batches, written) and the rest, the tail.
    fn split_tail(&mut self, at: usize) -> (&[u8], ChunkBytes<'_>);
}

impl Sides for &mut [u8] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    #[inline(always)]
    fn input(&self) -> &[u8] {
        self
    }
    #[inline(always)]
    fn output(&self) -> &[u8] {
        self
    }
    #[inline(always)]
    unsafe fn xor_batch(&mut self, at: usize, stream: &[V; LANES]) {
        // SAFETY: the caller's contract.
        unsafe { xor_batch(stream, &mut self[at..at + BATCH_BYTES]) }
    }
    #[inline(always)]
    fn split_tail(&mut self, at: usize) -> (&[u8], ChunkBytes<'_>) {
        let (done, tail) = self.split_at_mut(at);
        (done, ChunkBytes::InPlace(tail))
    }
}

impl Sides for (&[u8], &mut [u8]) {
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn input(&self) -> &[u8] {
        self.0
    }
    #[inline(always)]
    fn output(&self) -> &[u8] {
        self.1
    }
    #[inline(always)]
    unsafe fn xor_batch(&mut self, at: usize, stream: &[V; LANES]) {
        for (i, ks) in stream.iter().enumerate() {
            let at = at + i * 64;
            // SAFETY: CPU features are the caller's contract; load and store bounds-check.
            unsafe { V::load(&self.0[at..]).xor(*ks).store(&mut self.1[at..]) };
        }
    }
    #[inline(always)]
    fn split_tail(&mut self, at: usize) -> (&[u8], ChunkBytes<'_>) {
        let (done, tail) = self.1.split_at_mut(at);
        (done, ChunkBytes::Apart(&self.0[at..], tail))
    }
}

/// Hashes a whole batch of ciphertext into `acc` with no AES beside it.
#[inline(always)]
unsafe fn hash_batch(keys: &Keys, batch: &[u8], acc: &mut __m128i) {
    // SAFETY: CPU features are the caller's contract; `load` bounds-checks the 64 bytes.
    unsafe {
        let mut sum = Wide::new();
        for r in 0..LANES {
            hash_register(keys, &mut sum, *acc, V::load(&batch[64 * r..]), r);
        }
        *acc = sum.reduce();
    }
}

/// XORs the keystream of the chunk's last partial batch into `tail` (fewer than
/// [`BATCH_BYTES`] bytes; its input to its output) through a wiped stack buffer, hashing
/// `hashed` between the rounds.
#[inline(always)]
unsafe fn crypt_tail<const NR: usize>(
    keys: &Keys,
    counters: &mut Counters,
    hashed: Option<&[u8]>,
    acc: &mut __m128i,
    mut tail: ChunkBytes<'_>,
) {
    let len = tail.input().len();
    let mut buf = BatchBuffer([0u8; BATCH_BYTES]);
    buf.0[..len].copy_from_slice(tail.input());
    // SAFETY: CPU features are the caller's contract.
    unsafe {
        let stream = keystream::<NR>(keys, counters, hashed, acc);
        xor_batch(&stream, &mut buf.0);
    }
    tail.output_mut().copy_from_slice(&buf.0[..len]);
    // The padding now holds keystream of counters no other chunk uses, but wipe it anyway.
    buf.wipe(BATCH_BYTES);
}

/// The end of the hash: after the running hash `acc` of the whole batches, `tail` (the
/// ciphertext of the last partial batch, zero-padded) and then the lengths block of a chunk of
/// `len` bytes. Returns the POLYVAL value (byte-reversed GHASH).
#[inline(always)]
unsafe fn finish_hash(
    keys: &Keys,
    powers: &[[u8; 16]; POWERS],
    mut acc: __m128i,
    tail: &[u8],
    len: usize,
) -> __m128i {
    // SAFETY: CPU features are the caller's contract; loads are bounds-checked.
    unsafe {
        if !tail.is_empty() {
            // The t blocks right-aligned, so block p takes H^(32 - p) as in a whole batch,
            // and acc, the value before the first of them, H^t.
            let t = tail.len().div_ceil(16);
            let mut buf = TailBlocks([0u8; BATCH_BYTES]);
            let at = (BATCH_BLOCKS - t) * 16;
            buf.0[at..at + tail.len()].copy_from_slice(tail);
            let mut sum = Wide::new();
            let power = _mm_loadu_si128(powers[POWERS - t].as_ptr().cast());
            sum.mul_add(_mm512_zextsi128_si512(acc), _mm512_zextsi128_si512(power));
            for r in (BATCH_BLOCKS - t) / 4..LANES {
                let x = V::load(&buf.0[64 * r..]).reverse_lanes();
                sum.mul_add(x, keys.batch_powers[r]);
            }
            acc = sum.reduce();
        }
        // The lengths block be64(0) || be64(8 len), byte-reversed.
        let lengths = _mm_set_epi64x(0, (8 * len as u64) as i64);
        dot(_mm_xor_si128(acc, lengths), keys.h)
    }
}

/// The tag: ByteReverse(POLYVAL value) XOR E(J0) (lane 0 of `ej0`).
#[inline(always)]
unsafe fn tag(polyval: __m128i, ej0: V) -> [u8; 16] {
    // SAFETY: CPU features are the caller's contract; the store writes the 16 bytes of `out`.
    unsafe {
        let t = _mm_xor_si128(reverse(polyval), _mm512_castsi512_si128(ej0));
        let mut out = [0u8; 16];
        _mm_storeu_si128(out.as_mut_ptr().cast(), t);
        out
    }
}

/// E(J0), J0 = `nonce || be32(1)` (`nonce` from [`reversed_nonce`]), in every lane; between
/// its rounds, `hashed` (a whole batch of ciphertext), if any, is hashed into `acc`.
#[inline(always)]
unsafe fn encrypt_j0<const NR: usize>(
    keys: &Keys,
    nonce: __m128i,
    hashed: Option<&[u8]>,
    acc: &mut __m128i,
) -> V {
    // SAFETY: CPU features are the caller's contract.
    unsafe {
        let j0 = reverse(_mm_add_epi64(nonce, _mm_set_epi64x(0, 1)));
        let mut state = [_mm512_broadcast_i32x4(j0)];
        match hashed {
            Some(batch) => rounds_hashing::<NR, 1>(keys, &mut state, batch, acc),
            None => encrypt_rounds::<V, NR, 1>(&keys.rounds, &mut state, |_, _| {}),
        }
        state[0]
    }
}

/// Asks for the cache lines of `bytes` in L1.
#[inline(always)]
unsafe fn prefetch(bytes: &[u8]) {
    for line in bytes.chunks(64) {
        // SAFETY: a prefetch never faults; the address is inside `bytes`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
    }
}

#[inline(always)]
unsafe fn seal_nr<const NR: usize>(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    nonce: &[u8; 12],
    mut data: impl Sides,
) -> [u8; 16] {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        let keys = Keys::new::<NR>(key, powers);
        let nonce = reversed_nonce(nonce);
        let mut counters = Counters::new(nonce);
        let mut acc = _mm_setzero_si128();
        let len = data.len();
        let whole = len / BATCH_BYTES;
        for b in 0..whole {
            // Batch b's keystream, with batch b - SEAL_LAG's ciphertext hashed between its
            // rounds; its plaintext is asked for early, as it is only read at the end.
            prefetch(&data.input()[b * BATCH_BYTES..][..BATCH_BYTES]);
            let hashed = b
                .checked_sub(SEAL_LAG)
                .map(|h| &data.output()[h * BATCH_BYTES..][..BATCH_BYTES]);
            let stream = keystream::<NR>(&keys, &mut counters, hashed, &mut acc);
            data.xor_batch(b * BATCH_BYTES, &stream);
        }
        // The whole batches not hashed yet, in order: between the rounds of the tail's
        // keystream and of E(J0), and any left after those on their own.
        let (done, mut tail) = data.split_tail(whole * BATCH_BYTES);
        let mut pending =
            done[whole.saturating_sub(SEAL_LAG) * BATCH_BYTES..].chunks_exact(BATCH_BYTES);
        if !tail.input().is_empty() {
            crypt_tail::<NR>(
                &keys,
                &mut counters,
                pending.next(),
                &mut acc,
                tail.reborrow(),
            );
        }
        let ej0 = encrypt_j0::<NR>(&keys, nonce, pending.next(), &mut acc);
        for batch in pending {
            hash_batch(&keys, batch, &mut acc);
        }
        tag(finish_hash(&keys, powers, acc, tail.output(), len), ej0)
    }
}

#[inline(always)]
unsafe fn open_nr<const NR: usize>(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    nonce: &[u8; 12],
    mut data: impl Sides,
) -> [u8; 16] {
    // SAFETY: CPU features are this function's contract.
    unsafe {
        let keys = Keys::new::<NR>(key, powers);
        let nonce = reversed_nonce(nonce);
        let ej0 = encrypt_j0::<NR>(&keys, nonce, None, &mut _mm_setzero_si128());
        let mut counters = Counters::new(nonce);
        let mut acc = _mm_setzero_si128();
        let len = data.len();
        let whole = len / BATCH_BYTES;
        for b in 0..whole {
            // The batch's ciphertext is hashed between the rounds of its own keystream.
            let batch = &data.input()[b * BATCH_BYTES..][..BATCH_BYTES];
            let stream = keystream::<NR>(&keys, &mut counters, Some(batch), &mut acc);
            data.xor_batch(b * BATCH_BYTES, &stream);
        }
        let (_, tail) = data.split_tail(whole * BATCH_BYTES);
        let polyval = finish_hash(&keys, powers, acc, tail.input(), len);
        if !tail.input().is_empty() {
            crypt_tail::<NR>(&keys, &mut counters, None, &mut acc, tail);
        }
        tag(polyval, ej0)
    }
}

/// Picks the unrolled kernel for the key's round count (the kernel takes any AES key; GCM
/// chunks here are AES-128 or AES-256).
macro_rules! by_rounds {
    ($kernel:ident, $key:expr, $($arg:expr),*) => {
        match $key.rounds() {
            10 => $kernel::<10>($key, $($arg),*),
            12 => $kernel::<12>($key, $($arg),*),
            _ => $kernel::<14>($key, $($arg),*),
        }
    };
}

/// Encrypts one chunk (in place, or from its input to its output) with CTR from
/// `nonce || be32(2)` and returns its GCM tag (no associated data). `powers` are
/// [`crate::ghash::Ghash::powers`] of `H = E(0^128)`.
///
/// # Safety
/// The CPU must have the features of the `target_feature` attribute (`super::StitchedGcm::detect`
/// checks them).
#[target_feature(enable = "aes,vaes,avx2,avx512f,avx512bw,pclmulqdq,vpclmulqdq")]
pub(super) unsafe fn seal(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    nonce: &[u8; 12],
    data: ChunkBytes<'_>,
) -> [u8; 16] {
    assert!(
        data.input().len() <= MAX_LEN,
        "a GCM chunk of at most 2^32 blocks"
    );
    // SAFETY: the features the kernel needs are enabled here, and the caller guarantees the CPU
    // has them.
    unsafe {
        match data {
            ChunkBytes::InPlace(d) => by_rounds!(seal_nr, key, powers, nonce, d),
            ChunkBytes::Apart(i, o) => by_rounds!(seal_nr, key, powers, nonce, (i, o)),
        }
    }
}

/// Decrypts one chunk (in place, or from its input to its output; CTR from `nonce ||
/// be32(2)`) and returns the GCM tag of the ciphertext it read, hashed in the same pass. The
/// caller compares the tags and, when they differ, clears what was decrypted.
///
/// # Safety
/// As for [`seal`].
#[target_feature(enable = "aes,vaes,avx2,avx512f,avx512bw,pclmulqdq,vpclmulqdq")]
pub(super) unsafe fn open(
    key: &ExpandedKey,
    powers: &[[u8; 16]; POWERS],
    nonce: &[u8; 12],
    data: ChunkBytes<'_>,
) -> [u8; 16] {
    assert!(
        data.input().len() <= MAX_LEN,
        "a GCM chunk of at most 2^32 blocks"
    );
    // SAFETY: as in `seal`.
    unsafe {
        match data {
            ChunkBytes::InPlace(d) => by_rounds!(open_nr, key, powers, nonce, d),
            ChunkBytes::Apart(i, o) => by_rounds!(open_nr, key, powers, nonce, (i, o)),
        }
    }
}

#[cfg(test)]
mod tests;
