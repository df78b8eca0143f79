//! The device-memory API (`paraes_gpu::device_memory`): Cobblestone-128/-256 chunk records
//! sealed and opened in device memory, out of place and in place, byte-identical to the C2SP
//! reference (`cobblestone::seal`) and the CPU engine at the edge sizes of a chunk, from chunk
//! indices past 2^32; tampering refused with the buffer left as it was; a caller's memory and
//! stream borrowed by address; bad layouts refused. On the CUDA stand-in where there is no
//! driver; it never skips.

#[path = "support/standin.rs"]
mod standin;

use paraes_core::cobblestone::{self, ChunkCipher, MessageKeys, Variant, CHUNK_LEN, PREFIX_LEN};
use paraes_core::cpu::CpuEngine;
use paraes_core::engine::RecordsJob;
use paraes_core::seeded::SplitMix64;
use paraes_core::{Direction, Engine};
use paraes_gpu::{ChunkSpan, DeviceMemory, DeviceMemoryError, GpuEngine, GpuStream};

/// The engine on this machine's driver (the stand-in where there is none), with pieces of 2
/// records, so that the in-place calls run several pieces even for small buffers.
fn gpu() -> GpuEngine {
    standin::engine_with_record_pieces(2)
}

fn cipher(rng: &mut SplitMix64, variant: Variant) -> (Vec<u8>, [u8; 24], ChunkCipher) {
    let ik = rng.bytes(variant.key_size().bytes());
    let salt: [u8; 24] = rng.array();
    let cipher = MessageKeys::derive(variant, &ik, &salt, b"device memory")
        .unwrap()
        .chunks();
    (ik, salt, cipher)
}

/// `bytes` in new device memory of `len` bytes (at least `bytes.len()`).
fn upload(stream: &GpuStream, bytes: &[u8], len: usize) -> DeviceMemory {
    let mut memory = DeviceMemory::zeroed(stream, len).unwrap();
    memory.write_from_host(stream, 0, bytes).unwrap();
    memory
}

fn download(stream: &GpuStream, memory: &DeviceMemory) -> Vec<u8> {
    stream.synchronize().unwrap();
    let mut out = vec![0u8; memory.len()];
    memory.read_to_host(stream, 0, &mut out).unwrap();
    out
}

/// The records of `plaintext` sealed from chunk `first` by the CPU engine (chunks as `last`
/// says).
fn cpu_records(cipher: &ChunkCipher, first: u64, last: bool, plaintext: &[u8]) -> Vec<u8> {
    let cpu = CpuEngine::new(Some(1)).unwrap();
    let chunks = plaintext.len() / CHUNK_LEN + usize::from(last);
    let mut records = vec![0u8; RecordsJob::records_len(plaintext.len(), chunks).unwrap()];
    let job = cipher.records_job(Direction::Encrypt, first);
    cpu.process_records(&job, plaintext, &mut records).unwrap();
    records
}

#[test]
fn seal_and_open_in_device_memory_match_the_cpu_in_place_and_out_of_place() {
    let gpu = gpu();
    let stream = gpu.default_stream();
    let mut rng = SplitMix64::new(0xd3e1);
    let sizes = [0usize, 1, 16383, 16384, 16385, 3 * 16384 + 5, 4 * 16384];
    let firsts = [0u64, (1 << 32) - 1, (1 << 32) + 7];
    let mut cases = 0;
    for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
        let (ik, salt, cipher) = cipher(&mut rng, variant);
        for (i, &len) in sizes.iter().enumerate() {
            let plaintext = rng.bytes(len);
            for last in [true, false] {
                if !last && len % CHUNK_LEN != 0 {
                    continue;
                }
                let first = firsts[(i + usize::from(last)) % firsts.len()];
                let what = format!("{variant:?}, {len} bytes, from chunk {first}, last {last}");
                let span = ChunkSpan {
                    cipher: &cipher,
                    first_index: first,
                    last,
                };
                let expect = cpu_records(&cipher, first, last, &plaintext);
                if first == 0 && last {
                    // The whole message, against the C2SP reference's records.
                    let message =
                        cobblestone::seal(variant, &ik, &salt, b"device memory", &plaintext)
                            .unwrap();
                    assert!(
                        message[PREFIX_LEN..] == expect[..],
                        "{what}: CPU vs reference"
                    );
                }
                let sealed_len = span.sealed_len(len).unwrap();
                assert_eq!(sealed_len, expect.len(), "{what}");

                let input = upload(&stream, &plaintext, len);
                let mut records = DeviceMemory::zeroed(&stream, sealed_len).unwrap();
                let n = gpu
                    .seal_device(&span, &input, &mut records, &stream)
                    .unwrap();
                assert_eq!(n, sealed_len, "{what}");
                assert!(
                    download(&stream, &records) == expect,
                    "{what}: sealed out of place"
                );

                let mut in_place = upload(&stream, &plaintext, sealed_len);
                gpu.seal_device_in_place(&span, &mut in_place, len, &stream)
                    .unwrap();
                assert!(
                    download(&stream, &in_place) == expect,
                    "{what}: sealed in place"
                );

                let mut opened = upload(&stream, &vec![0xa5; len], len);
                let n = gpu
                    .open_device(&span, &records, &mut opened, &stream)
                    .unwrap();
                assert_eq!(n, len, "{what}");
                assert!(
                    download(&stream, &opened) == plaintext,
                    "{what}: opened out of place"
                );

                let n = gpu
                    .open_device_in_place(&span, &mut in_place, sealed_len, &stream)
                    .unwrap();
                assert_eq!(n, len, "{what}");
                let back = download(&stream, &in_place);
                assert!(back[..len] == plaintext[..], "{what}: opened in place");
                assert!(
                    back[len..].iter().all(|&b| b == 0),
                    "{what}: the records' leftover bytes after the plaintext are not zeroed"
                );
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 2 * (sizes.len() + 3));
}

#[test]
fn a_tampered_chunk_is_refused_and_leaves_the_buffers_as_they_were() {
    let gpu = gpu();
    let stream = gpu.new_stream().unwrap();
    let mut rng = SplitMix64::new(0x7a3);
    let (_, _, cipher) = cipher(&mut rng, Variant::Cobblestone256);
    let first = (1u64 << 32) + 3;
    let span = ChunkSpan {
        cipher: &cipher,
        first_index: first,
        last: true,
    };
    let len = 3 * CHUNK_LEN + 5;
    let plaintext = rng.bytes(len);
    let records = cpu_records(&cipher, first, true, &plaintext);
    // A ciphertext byte of chunk 1, the last chunk's tag, chunk 2's first byte.
    for (at, chunk) in [(16400 + 100, 1), (records.len() - 1, 3), (2 * 16400, 2)] {
        let mut tampered = records.clone();
        tampered[at] ^= 0x20;
        let input = upload(&stream, &tampered, tampered.len());
        let pattern = rng.bytes(len);
        let mut output = upload(&stream, &pattern, len);
        match gpu.open_device(&span, &input, &mut output, &stream) {
            Err(DeviceMemoryError::Tampered { chunk: c, .. }) => assert_eq!(c, first + chunk),
            other => panic!("byte {at} flipped: {other:?}"),
        }
        assert!(
            download(&stream, &output) == pattern,
            "byte {at} flipped: the output was changed although a tag failed"
        );

        let mut in_place = upload(&stream, &tampered, tampered.len() + 7);
        let before = download(&stream, &in_place);
        let error = gpu
            .open_device_in_place(&span, &mut in_place, tampered.len(), &stream)
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains(&format!("chunk {}", first + chunk)) && text.contains("left as it was"),
            "{text}"
        );
        assert!(
            download(&stream, &in_place) == before,
            "byte {at} flipped: the buffer was changed although a tag failed"
        );
    }
}

#[test]
fn a_callers_memory_and_stream_are_borrowed_by_address() {
    let gpu = gpu();
    let stream = gpu.default_stream();
    let mut rng = SplitMix64::new(0xb0);
    let (_, _, cipher) = cipher(&mut rng, Variant::Cobblestone128);
    let span = ChunkSpan {
        cipher: &cipher,
        first_index: 5,
        last: true,
    };
    let len = 2 * CHUNK_LEN + 100;
    let plaintext = rng.bytes(len);
    let expect = cpu_records(&cipher, 5, true, &plaintext);
    // The caller's allocations (here the engine's own, standing in for a tensor's), with the
    // data 16 bytes in, and the caller's stream: the legacy default stream.
    let owner_in = upload(
        &stream,
        &[vec![0; 16], plaintext.clone()].concat(),
        expect.len() + 16,
    );
    let owner_out = DeviceMemory::zeroed(&stream, expect.len() + 16).unwrap();
    stream.synchronize().unwrap();
    // SAFETY: the default stream (0) of the engine's context, which lives as long as it does.
    let theirs = unsafe { gpu.borrow_stream(0) };
    assert_eq!(theirs.handle(), 0);
    {
        // SAFETY: both ranges lie inside the owners' allocations, which outlive the views, and
        // nothing else uses them meanwhile.
        let (input, mut output) = unsafe {
            (
                DeviceMemory::from_raw(&theirs, owner_in.address() + 16, len).unwrap(),
                DeviceMemory::from_raw(&theirs, owner_out.address() + 16, expect.len()).unwrap(),
            )
        };
        assert!(input.is_borrowed() && !owner_in.is_borrowed());
        gpu.seal_device(&span, &input, &mut output, &theirs)
            .unwrap();
        theirs.synchronize().unwrap();
        // Two views of overlapping memory are refused out of place.
        // SAFETY: as above.
        let mut overlapping =
            unsafe { DeviceMemory::from_raw(&theirs, owner_in.address(), expect.len()).unwrap() };
        let error = gpu
            .seal_device(&span, &input, &mut overlapping, &theirs)
            .unwrap_err();
        assert!(error.to_string().contains("overlap"), "{error}");
    }
    // Dropping the views neither zeroed nor freed the caller's memory.
    let back = download(&stream, &owner_out);
    assert!(
        back[16..] == expect[..],
        "the records in the caller's memory"
    );
    assert!(download(&stream, &owner_in)[16..16 + len] == plaintext[..]);

    // SAFETY: refused before any use.
    let misaligned = unsafe { DeviceMemory::from_raw(&stream, owner_in.address() + 8, 16) };
    let error = misaligned.unwrap_err().to_string();
    assert!(error.contains("16-byte boundary"), "{error}");
}

/// The engine's own memory carries its order across streams: records sealed on one stream
/// open on another with no synchronisation between (the stand-in runs each queue only when
/// something waits on it, so a missing order gives wrong bytes).
#[test]
fn the_engines_memory_is_ordered_across_its_streams() {
    let gpu = gpu();
    let (a, b) = (gpu.new_stream().unwrap(), gpu.new_stream().unwrap());
    let mut rng = SplitMix64::new(0x0d);
    let (_, _, cipher) = cipher(&mut rng, Variant::Cobblestone256);
    let span = ChunkSpan {
        cipher: &cipher,
        first_index: 9,
        last: true,
    };
    let len = 3 * CHUNK_LEN + 1;
    let plaintext = rng.bytes(len);
    let input = upload(&a, &plaintext, len);
    let mut records = DeviceMemory::zeroed(&a, span.sealed_len(len).unwrap()).unwrap();
    gpu.seal_device(&span, &input, &mut records, &a).unwrap();
    let mut opened = DeviceMemory::zeroed(&b, len).unwrap();
    gpu.open_device(&span, &records, &mut opened, &b).unwrap();
    assert!(download(&b, &opened) == plaintext);
}

/// A PyO3 class holds its Rust value across threads: the API's types must allow it.
#[test]
fn the_api_types_can_be_held_by_other_threads() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<GpuEngine>();
    send_and_sync::<DeviceMemory>();
    send_and_sync::<GpuStream>();
    send_and_sync::<DeviceMemoryError>();
}

#[test]
fn layouts_the_spec_does_not_allow_are_refused_before_any_work() {
    let gpu = gpu();
    let stream = gpu.default_stream();
    let mut rng = SplitMix64::new(0x1a);
    let (_, _, cipher) = cipher(&mut rng, Variant::Cobblestone128);
    let span = |first_index, last| ChunkSpan {
        cipher: &cipher,
        first_index,
        last,
    };
    let refused = |result: Result<usize, DeviceMemoryError>, says: &str| {
        let text = result.unwrap_err().to_string();
        assert!(text.contains(says), "{text:?} should say {says:?}");
    };
    let input = DeviceMemory::zeroed(&stream, CHUNK_LEN + 1).unwrap();
    let mut output = DeviceMemory::zeroed(&stream, 2 * CHUNK_LEN).unwrap();
    refused(
        gpu.seal_device(&span(0, false), &input, &mut output, &stream),
        "not whole 16 KiB chunks",
    );
    refused(
        gpu.seal_device(&span((1 << 38) - 1, true), &input, &mut output, &stream),
        "below 2^38",
    );
    let mut small = DeviceMemory::zeroed(&stream, CHUNK_LEN).unwrap();
    refused(
        gpu.seal_device(&span(0, true), &input, &mut small, &stream),
        "needs 16417",
    );
    // Records whose last is whole: cut at a chunk boundary, or not the last span.
    let whole = DeviceMemory::zeroed(&stream, 16400).unwrap();
    refused(
        gpu.open_device(&span(0, true), &whole, &mut output, &stream),
        "no final chunk shorter",
    );
    refused(
        span(0, false).opened_len(16401),
        "not whole 16400-byte records",
    );
    assert_eq!(span(0, false).opened_len(2 * 16400).unwrap(), 2 * CHUNK_LEN);
    assert_eq!(span(0, true).sealed_len(0).unwrap(), 16);
}
