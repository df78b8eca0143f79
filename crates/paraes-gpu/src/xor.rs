//! The host half of the keystream CTR variant: XOR a keystream into the data, wide and on
//! several threads (the GPU only writes keystream; the host never copies the data to it).

#![deny(unsafe_code)]

use rayon::prelude::*;

/// Bytes each rayon task XORs: big enough to amortise the task, small enough to spread
/// a 1 MiB call over a few cores.
pub const PAR_PIECE: usize = 256 * 1024;

/// `dst[i] ^= src[i]` for every byte, 64 bytes per step in eight u64 lanes (the compiler
/// turns the loop into SSE2/AVX2 vector XORs). `src` must be at least as long as `dst`.
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    assert!(src.len() >= dst.len(), "keystream shorter than data");
    let src = &src[..dst.len()];
    let mut d = dst.chunks_exact_mut(64);
    let mut s = src.chunks_exact(64);
    for (dc, sc) in (&mut d).zip(&mut s) {
        let mut words = [0u64; 8];
        for ((w, db), sb) in words
            .iter_mut()
            .zip(dc.chunks_exact(8))
            .zip(sc.chunks_exact(8))
        {
            *w = u64::from_ne_bytes(db.try_into().unwrap())
                ^ u64::from_ne_bytes(sb.try_into().unwrap());
        }
        for (db, w) in dc.chunks_exact_mut(8).zip(words) {
            db.copy_from_slice(&w.to_ne_bytes());
        }
    }
    for (db, sb) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *db ^= sb;
    }
}

/// [`xor_into`] spread over the threads of `pool` in [`PAR_PIECE`]-byte pieces.
pub fn par_xor_into(pool: &rayon::ThreadPool, dst: &mut [u8], src: &[u8]) {
    if dst.len() <= PAR_PIECE {
        return xor_into(dst, src);
    }
    let src = &src[..dst.len()];
    pool.install(|| {
        dst.par_chunks_mut(PAR_PIECE)
            .zip(src.par_chunks(PAR_PIECE))
            .for_each(|(d, s)| xor_into(d, s));
    });
}

/// `dst.copy_from_slice(src)` spread over the threads of `pool` (staging copies to and
/// from pinned memory run at memory speed only with several cores).
pub fn par_copy(pool: &rayon::ThreadPool, dst: &mut [u8], src: &[u8]) {
    if dst.len() <= PAR_PIECE {
        return dst.copy_from_slice(src);
    }
    assert_eq!(dst.len(), src.len());
    pool.install(|| {
        dst.par_chunks_mut(PAR_PIECE)
            .zip(src.par_chunks(PAR_PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn xor_matches_bytewise(data in proptest::collection::vec(any::<u8>(), 0..600), seed in any::<u8>()) {
            let ks: Vec<u8> = (0..data.len() + 7).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
            let mut fast = data.clone();
            xor_into(&mut fast, &ks);
            let slow: Vec<u8> = data.iter().zip(&ks).map(|(a, b)| a ^ b).collect();
            prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn parallel_versions_match() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let n = 3 * PAR_PIECE + 77;
        let data: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        let ks: Vec<u8> = (0..n).map(|i| (i * 13 + 5) as u8).collect();
        let mut a = data.clone();
        par_xor_into(&pool, &mut a, &ks);
        let mut b = data.clone();
        xor_into(&mut b, &ks);
        assert_eq!(a, b);
        let mut c = vec![0u8; n];
        par_copy(&pool, &mut c, &data);
        assert_eq!(c, data);
    }
}
