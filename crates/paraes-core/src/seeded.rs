//! Seeded, reproducible pseudo-random bytes (SplitMix64) for tests, benchmarks and examples, so
//! a failure names a case that can be replayed. Not for keys or nonces: those come from
//! [`crate::container::random_bytes`].

/// The SplitMix64 generator (Steele, Lea and Flood, 2014): fast, and every seed gives a
/// well-mixed stream.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fills `buf` with the next bytes of the stream (little-endian words).
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes()[..chunk.len()]);
        }
    }

    /// The next `len` bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        self.fill(&mut out);
        out
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        self.fill(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference values of SplitMix64 for seed 0 (as published with the algorithm), and
    /// `bytes` is the little-endian concatenation of the words.
    #[test]
    fn matches_the_reference_stream() {
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let bytes = SplitMix64::new(0).bytes(12);
        assert_eq!(bytes[..8], 0xe220_a839_7b1d_cdafu64.to_le_bytes());
        assert_eq!(bytes[8..], 0x6e78_9e6a_a1b9_65f4u64.to_le_bytes()[..4]);
    }
}
