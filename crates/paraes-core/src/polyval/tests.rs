//! Every POLYVAL path this CPU runs against the RustCrypto `polyval` crate fed whole buffers,
//! plain (POLYVAL) and byte-reflected (GHASH's order), at every length around the groups and
//! tails; a path the CPU lacks is skipped, and says so.

use polyval::universal_hash::{KeyInit, UniversalHash};

use super::*;

/// The crate's POLYVAL of `data` zero-padded, then `trailer`, in two calls.
fn oracle(h: &[u8; 16], data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
    let mut mac = polyval::Polyval::new(&(*h).into());
    mac.update_padded(data);
    mac.update(&[(*trailer).into()]);
    mac.finalize().into()
}

/// [`oracle`] of the byte-reversed blocks (zero-padded first) and trailer, byte-reversed: the
/// reflected hash built from whole buffers.
fn reflected_oracle(h: &[u8; 16], data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
    let mut blocks = data.to_vec();
    blocks.resize(data.len().div_ceil(16) * 16, 0);
    blocks.chunks_mut(16).for_each(<[u8]>::reverse);
    let mut trailer = *trailer;
    trailer.reverse();
    let mut out = oracle(h, &blocks, &trailer);
    out.reverse();
    out
}

/// The instances of every path this CPU runs under key `h`, each with its path; the others are
/// skipped loudly.
fn every_path(h: &[u8; 16]) -> Vec<(Path, Polyval)> {
    Path::ALL
        .into_iter()
        .filter_map(|path| {
            let polyval = Polyval::on_path(h, path);
            if polyval.is_none() {
                eprintln!("SKIPPED: POLYVAL's {path:?} path is not tested: this CPU lacks it");
            }
            Some((path, polyval?))
        })
        .collect()
}

/// Lengths 0 ..= 600 bytes (every tail of the 8- and 32-block groups, and the 64-block group's
/// first), around the longer groups' boundaries, one record, and long inputs.
fn lengths() -> impl Iterator<Item = usize> {
    let around = [1024, 2048, 3072, 16384]
        .into_iter()
        .flat_map(|n| n - 33..=n + 33);
    (0..=600).chain(around).chain([5000, (1 << 20) + 17])
}

fn data(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 ^ seed as u8)
        .collect()
}

/// RFC 8452 appendix A: POLYVAL of two blocks, on every path.
#[test]
fn rfc8452_vector() {
    let h: [u8; 16] = hex::decode("25629347589242761d31f826ba4b757b")
        .unwrap()
        .try_into()
        .unwrap();
    let x1 = hex::decode("4f4f95668c83dfb6401762bb2d01a262").unwrap();
    let x2: [u8; 16] = hex::decode("d1a24ddd2721d006bbe45f20d3c9f362")
        .unwrap()
        .try_into()
        .unwrap();
    for (path, polyval) in every_path(&h) {
        assert_eq!(
            hex::encode(polyval.hash(&x1, &x2)),
            "f7a3b47b846119fae5b7866cf5e5b77e",
            "{path:?}"
        );
    }
}

#[test]
fn every_path_matches_the_polyval_crate_at_every_length() {
    let h = [0x3cu8; 16];
    let trailer = [0xa5u8; 16];
    let data = data((1 << 20) + 17, 7);
    let paths = every_path(&h);
    for len in lengths() {
        let expected = oracle(&h, &data[..len], &trailer);
        for (path, polyval) in &paths {
            assert_eq!(
                polyval.hash(&data[..len], &trailer),
                expected,
                "{path:?}, len {len}"
            );
        }
    }
}

#[test]
fn every_path_matches_the_polyval_crate_reflected_at_every_length() {
    let h: [u8; 16] = core::array::from_fn(|i| (i * 37 + 5) as u8);
    let trailer: [u8; 16] = core::array::from_fn(|i| (i * 11) as u8);
    let data = data((1 << 20) + 17, 99);
    let paths = every_path(&h);
    for len in lengths() {
        let expected = reflected_oracle(&h, &data[..len], &trailer);
        for (path, polyval) in &paths {
            assert_eq!(
                polyval.hash_reflected(&data[..len], &trailer),
                expected,
                "{path:?}, len {len}"
            );
        }
    }
}

/// `Polyval::new` takes the fastest path this CPU has; the stitched kernel's powers exist only
/// on the AVX-512 path; forcing the portable paths forces POLYVAL's.
#[test]
fn new_picks_the_fastest_path_and_only_avx512_lends_its_powers() {
    let polyval = Polyval::new(&[1; 16]);
    let fastest = Path::ALL.into_iter().find(|p| p.on_this_cpu()).unwrap();
    let expected = if portable_forced() {
        Path::Portable
    } else {
        fastest
    };
    eprintln!("POLYVAL runs its {:?} path here", polyval.path);
    assert_eq!(polyval.path, expected);
    assert_eq!(polyval.powers().is_some(), expected == Path::Avx512);
    assert_eq!(
        polyval.powers().is_some(),
        crate::features::fast_polyval_available()
    );
    for (path, polyval) in every_path(&[1; 16]) {
        assert_eq!(polyval.powers().is_some(), path == Path::Avx512);
    }
}
