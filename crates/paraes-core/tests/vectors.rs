//! Known-answer tests: FIPS-197 appendix C and NIST SP 800-38A F.1 (ECB) and F.5 (CTR), for every
//! AES implementation this CPU has, through the engine and block by block.

use paraes_core::{AesImpl, CpuEngine, Direction, Engine, Job, Key, Mode};

/// One record of a vector file: `field = hex` lines, records separated by blank lines.
struct Record {
    name: String,
    key: Vec<u8>,
    iv: Option<[u8; 16]>,
    plaintext: Vec<u8>,
    ciphertext: Vec<u8>,
}

fn records(text: &str) -> Vec<Record> {
    let mut out = Vec::new();
    for chunk in text.split("\n\n") {
        let fields: Vec<(&str, &str)> = chunk
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split_once(" = ").expect("field = value"))
            .collect();
        if fields.is_empty() {
            continue;
        }
        let get = |name: &str| fields.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let hex = |name: &str| hex::decode(get(name).expect(name)).expect("hex");
        out.push(Record {
            name: get("name").expect("name").to_string(),
            key: hex("key"),
            iv: get("iv").map(|v| hex::decode(v).unwrap().try_into().unwrap()),
            plaintext: hex("plaintext"),
            ciphertext: hex("ciphertext"),
        });
    }
    out
}

fn load(file: &str, expected: usize) -> Vec<Record> {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let recs = records(&std::fs::read_to_string(&path).expect("vector file"));
    assert_eq!(recs.len(), expected, "{path}: record count");
    recs
}

/// Single-threaded engines for each implementation, plus a two-thread one that splits even
/// these short vectors into one-block slices.
fn engines() -> Vec<CpuEngine> {
    let mut engines = Vec::new();
    for imp in AesImpl::available() {
        engines.push(CpuEngine::with_aes_impl(imp, Some(1)).unwrap());
        engines.push(
            CpuEngine::with_aes_impl(imp, Some(2))
                .unwrap()
                .with_split(0, 16),
        );
    }
    engines
}

fn run(engine: &CpuEngine, mode: Mode, direction: Direction, rec: &Record, data: &[u8]) -> Vec<u8> {
    let key = Key::new(&rec.key).unwrap().expand();
    let job = Job::new(mode, direction, &key, rec.iv.unwrap_or_default(), 0);
    let mut buf = data.to_vec();
    engine.process(&job, &mut buf).unwrap();
    buf
}

fn check_both_directions(file: &str, mode: Mode, expected_records: usize) {
    for rec in load(file, expected_records) {
        for engine in engines() {
            let who = format!("{} on {}", rec.name, engine.name());
            let ct = run(&engine, mode, Direction::Encrypt, &rec, &rec.plaintext);
            assert_eq!(
                hex::encode(ct),
                hex::encode(&rec.ciphertext),
                "encrypt {who}"
            );
            let pt = run(&engine, mode, Direction::Decrypt, &rec, &rec.ciphertext);
            assert_eq!(
                hex::encode(pt),
                hex::encode(&rec.plaintext),
                "decrypt {who}"
            );
        }
    }
}

#[test]
fn fips197_appendix_c() {
    check_both_directions("fips197.txt", Mode::Ecb, 3);
}

#[test]
fn sp800_38a_f1_ecb() {
    check_both_directions("sp800_38a_ecb.txt", Mode::Ecb, 3);
}

#[test]
fn sp800_38a_f5_ctr() {
    check_both_directions("sp800_38a_ctr.txt", Mode::Ctr, 3);
}

/// Each block processed alone (at its own stream offset) equals the multi-block result.
#[test]
fn single_block_calls_match_multi_block_calls() {
    for (file, mode) in [
        ("sp800_38a_ecb.txt", Mode::Ecb),
        ("sp800_38a_ctr.txt", Mode::Ctr),
    ] {
        for rec in load(file, 3) {
            let key = Key::new(&rec.key).unwrap().expand();
            for imp in AesImpl::available() {
                let engine = CpuEngine::with_aes_impl(imp, Some(1)).unwrap();
                for (i, (pt, ct)) in rec
                    .plaintext
                    .chunks(16)
                    .zip(rec.ciphertext.chunks(16))
                    .enumerate()
                {
                    let job = Job::new(
                        mode,
                        Direction::Encrypt,
                        &key,
                        rec.iv.unwrap_or_default(),
                        16 * i as u64,
                    );
                    let mut block = pt.to_vec();
                    engine.process(&job, &mut block).unwrap();
                    assert_eq!(block, ct, "{} block {i} on {imp}", rec.name);
                }
            }
        }
    }
}
