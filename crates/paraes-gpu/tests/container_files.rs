//! v3 container files to and from device memory in Rust (`save_container`, `load_container`,
//! and `upload_body_only`, the loader with decryption turned off): a round trip through a file
//! whose pieces each take several of the loader's parallel 1 MiB reads, its plaintext equal to
//! what was saved and the file opening as the CPU's container API opens it; the baseline
//! uploading every record byte; a damaged body refused with the buffer zeroed. On the CUDA
//! stand-in where there is no driver; it never skips.

#[path = "support/standin.rs"]
mod standin;

use std::io::Read;

use paraes_core::container::{Identity, Recipient, Unlock, UnverifiedHeader};
use paraes_core::seeded::SplitMix64;
use paraes_core::{Key, KeySize};
use paraes_gpu::device_memory::{load_container, save_container, upload_body_only};
use paraes_gpu::{DeviceMemory, DeviceMemoryError};

#[test]
fn containers_round_trip_through_parallel_reads_and_the_baseline_uploads_every_record() {
    // Pieces of 150 records (2.3 MiB): three reads of up to 1 MiB each, the last shorter.
    let gpu = standin::engine_with_record_pieces(150);
    let stream = gpu.default_stream();
    let mut rng = SplitMix64::new(0xf11e);
    let dir = tempfile::tempdir().unwrap();
    let key_bytes = rng.bytes(32);
    let unlock = || Unlock {
        identities: vec![Identity::Key(Key::new(&key_bytes).unwrap())],
        max_kdf_mib: 64,
        allow_unverified_slot: false,
    };
    // Edges: empty, one byte, a piece and its parallel reads' edges, several pieces.
    for len in [
        0usize,
        1,
        150 * 16384,
        150 * 16384 + 1,
        2 * 1024 * 1024 + 5,
        5_000_000,
    ] {
        let plaintext = rng.bytes(len);
        let mut memory = DeviceMemory::zeroed(&stream, len.max(1)).unwrap();
        memory.write_from_host(&stream, 0, &plaintext).unwrap();
        let memory = if len == 0 {
            DeviceMemory::zeroed(&stream, 0).unwrap()
        } else {
            memory
        };
        let path = dir.path().join(format!("c{len}.paraes"));
        let recipients = [Recipient::Key(Key::new(&key_bytes).unwrap())];
        let saved = save_container(
            &gpu,
            &memory,
            &path,
            false,
            (KeySize::Aes256, &recipients),
            &stream,
        )
        .unwrap();
        assert_eq!(saved.container_len, std::fs::metadata(&path).unwrap().len());

        // The CPU's container API opens it to the same plaintext.
        let mut file = std::fs::File::open(&path).unwrap();
        let header = UnverifiedHeader::read(&mut file).unwrap();
        let opened = header
            .open(
                &unlock(),
                paraes_core::container::BodyAccess::File(&std::fs::File::open(&path).unwrap()),
            )
            .unwrap();
        let mut body = Vec::new();
        file.read_to_end(&mut body).unwrap();
        let cipher = opened.message_cipher().unwrap();
        let mut plain_cpu = Vec::new();
        for (k, record) in body.chunks(16400).enumerate() {
            let (data, tag) = record.split_at(record.len() - 16);
            let mut data = data.to_vec();
            cipher.open(k as u64, &mut data, tag).unwrap();
            plain_cpu.extend_from_slice(&data);
        }
        assert_eq!(plain_cpu, plaintext, "{len} bytes, opened on the CPU");

        let (loaded, report) = load_container(&gpu, &path, &unlock(), &stream).unwrap();
        assert_eq!(report.plaintext_len, len);
        stream.synchronize().unwrap();
        let mut back = vec![0u8; loaded.len()];
        loaded.read_to_host(&stream, 0, &mut back).unwrap();
        assert_eq!(back, plaintext, "{len} bytes, loaded on the device");

        let uploaded = upload_body_only(&gpu, &path, &unlock(), &stream).unwrap();
        assert_eq!(
            uploaded,
            body.len() as u64,
            "{len} bytes: the baseline's record bytes"
        );
    }

    // A byte changed in chunk 200 (the second piece's second parallel read; a change in the
    // last chunk is refused earlier, by the header's check of the body key): refused.
    let path = dir.path().join("c5000000.paraes");
    let mut bytes = std::fs::read(&path).unwrap();
    let records_len = 5_000_000 + 306 * 16;
    let at = bytes.len() - records_len + 200 * 16400 + 5;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    match load_container(&gpu, &path, &unlock(), &stream) {
        Err(DeviceMemoryError::Tampered { chunk, .. }) => assert_eq!(chunk, 200),
        other => panic!("a damaged body loaded: {:?}", other.map(|(_, l)| l)),
    }
}
