//! Container files and device memory (`paraes_gpu::device_memory`) against the `paraes`
//! binary: a container made by `paraes enc` decrypts straight into device memory to the same
//! plaintext, with any body key size and across pieces; one that was tampered with is refused
//! and the device buffer zeroed; v2, armored and missing files are refused with what to do;
//! device memory saved as a container opens with `paraes dec`, and an existing file is not
//! replaced unless asked. On the CUDA stand-in
//! (crates/paraes-gpu/tests/support/standin.rs) where there is no driver; it never skips.

#[path = "../crates/paraes-gpu/tests/support/standin.rs"]
mod standin;

use std::path::Path;
use std::process::Command;

use paraes_core::container::{Identity, Recipient, Unlock};
use paraes_core::seeded::SplitMix64;
use paraes_core::{Key, KeySize};
use paraes_gpu::device_memory::{load_container, load_container_into, save_container};
use paraes_gpu::{DeviceMemory, DeviceMemoryError, GpuEngine, GpuStream};

/// The engine with pieces of 3 records, so a container of a few chunks goes up in several.
fn gpu() -> GpuEngine {
    standin::engine_with_record_pieces(3)
}

/// Runs `paraes ARGS` in `dir` on the CPU engine, asserting success.
fn paraes(dir: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_paraes"))
        .args(args)
        .args(["-q", "--backend", "cpu"])
        .current_dir(dir)
        .output()
        .expect("paraes runs");
    assert!(
        out.status.success(),
        "paraes {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A key file `name` in `dir` (hex text) and the key it holds.
fn key_file(dir: &Path, name: &str, rng: &mut SplitMix64) -> Key {
    let bytes = rng.bytes(32);
    std::fs::write(dir.join(name), format!("{}\n", hex::encode(&bytes))).unwrap();
    Key::new(&bytes).unwrap()
}

fn download(stream: &GpuStream, memory: &DeviceMemory) -> Vec<u8> {
    stream.synchronize().unwrap();
    let mut out = vec![0u8; memory.len()];
    memory.read_to_host(stream, 0, &mut out).unwrap();
    out
}

#[test]
fn a_container_made_by_the_cli_decrypts_into_device_memory() {
    let gpu = gpu();
    let stream = gpu.default_stream();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0x10ad);
    let key = key_file(dir.path(), "key", &mut rng);
    let unlock = Unlock::new(vec![Identity::Key(key)]);
    let mut cases = 0;
    for (len, bits) in [
        (0, "256"),
        (1, "128"),
        (16384, "256"),
        (7 * 16384 + 3, "128"),
    ] {
        let plaintext = rng.bytes(len);
        std::fs::write(dir.path().join("plain"), &plaintext).unwrap();
        let name = format!("c{len}.paraes");
        paraes(
            dir.path(),
            &["enc", "-k", "key", "--bits", bits, "-o", &name, "plain"],
        );
        let (memory, loaded) = load_container(&gpu, &dir.path().join(&name), &unlock, &stream)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((memory.len(), loaded.plaintext_len), (len, len), "{name}");
        assert_eq!(loaded.warning, None);
        assert!(download(&stream, &memory) == plaintext, "{name}: plaintext");
        cases += 1;
    }
    assert_eq!(cases, 4);
}

#[test]
fn a_tampered_container_is_refused_and_the_device_buffer_zeroed() {
    let gpu = gpu();
    let stream = gpu.new_stream().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0xbad);
    let key = key_file(dir.path(), "key", &mut rng);
    let unlock = Unlock::new(vec![Identity::Key(key)]);
    let len = 5 * 16384 + 5;
    std::fs::write(dir.path().join("plain"), rng.bytes(len)).unwrap();
    paraes(dir.path(), &["enc", "-k", "key", "-o", "c.paraes", "plain"]);
    let path = dir.path().join("c.paraes");
    let mut bytes = std::fs::read(&path).unwrap();
    // Chunk 4's ciphertext: neither the first nor the last chunk, which opening the header
    // already checks, so only the device's tags can see it.
    let at = bytes.len() - 21 - 100;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();

    let mut memory = DeviceMemory::zeroed(&stream, len).unwrap();
    memory
        .write_from_host(&stream, 0, &vec![0xa5; len])
        .unwrap();
    let error = load_container_into(&gpu, &path, &unlock, &mut memory, &stream).unwrap_err();
    assert!(
        matches!(error, DeviceMemoryError::Tampered { chunk: 4, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("zeroed"), "{error}");
    assert!(
        download(&stream, &memory).iter().all(|&b| b == 0),
        "the device buffer still holds bytes after a tag failed"
    );
    let error = load_container(&gpu, &path, &unlock, &stream).unwrap_err();
    assert!(error.to_string().contains("chunk 4 was changed"), "{error}");

    // A wrong key is refused by the header, with the file's name.
    let other = Unlock::new(vec![Identity::Key(Key::new(&[7; 32]).unwrap())]);
    let error = load_container(&gpu, &path, &other, &stream).unwrap_err();
    assert!(
        matches!(error, DeviceMemoryError::Container { .. })
            && error.to_string().contains("c.paraes"),
        "{error}"
    );
}

#[test]
fn device_memory_saved_as_a_container_opens_with_the_cli() {
    let gpu = gpu();
    let stream = gpu.default_stream();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0x5a7e);
    let key = key_file(dir.path(), "key", &mut rng);
    for (len, size) in [
        (0, KeySize::Aes256),
        (16383, KeySize::Aes128),
        (7 * 16384 + 1, KeySize::Aes256),
    ] {
        let plaintext = rng.bytes(len);
        let mut memory = DeviceMemory::zeroed(&stream, len).unwrap();
        memory.write_from_host(&stream, 0, &plaintext).unwrap();
        let name = format!("s{len}.paraes");
        let path = dir.path().join(&name);
        let recipients = [Recipient::Key(key.clone())];
        let saved = save_container(&gpu, &memory, &path, false, (size, &recipients), &stream)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(saved.container_len, std::fs::metadata(&path).unwrap().len());
        let out = format!("{name}.out");
        paraes(dir.path(), &["dec", "-k", "key", "-o", &out, &name]);
        let opened = std::fs::read(dir.path().join(&out)).unwrap();
        assert!(opened == plaintext, "{name}: paraes dec gave other bytes");

        // An existing file is kept unless replacing was asked for.
        let before = std::fs::read(&path).unwrap();
        let error =
            save_container(&gpu, &memory, &path, false, (size, &recipients), &stream).unwrap_err();
        assert!(matches!(error, DeviceMemoryError::File(_)), "{error}");
        assert!(std::fs::read(&path).unwrap() == before, "{name} changed");
        save_container(&gpu, &memory, &path, true, (size, &recipients), &stream).unwrap();
        assert!(
            std::fs::read(&path).unwrap() != before,
            "{name}: not replaced"
        );
    }
}

#[test]
fn containers_the_device_cannot_open_are_refused_with_what_to_do() {
    let gpu = gpu();
    let stream = gpu.default_stream();
    let refused = |path: &Path, unlock: &Unlock, says: &str| {
        let text = load_container(&gpu, path, unlock, &stream)
            .unwrap_err()
            .to_string();
        assert!(text.contains(says), "{text:?} should say {says:?}");
    };
    // A format v2 file (its body is not a C2SP message), opened with its own key.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2");
    let contents = std::fs::read(fixtures.join("k128.key")).unwrap();
    let key = paraes_files::keys::key_from_contents(&contents, "k128.key").unwrap();
    let unlock = Unlock::new(vec![Identity::Key(key)]);
    refused(
        &fixtures.join("ctr-128.paraes"),
        &unlock,
        "format v2 container: only v3 bodies",
    );

    // ASCII armor, and a file that is not there.
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0xa3);
    let key = key_file(dir.path(), "key", &mut rng);
    let unlock = Unlock::new(vec![Identity::Key(key)]);
    std::fs::write(dir.path().join("plain"), rng.bytes(100)).unwrap();
    paraes(
        dir.path(),
        &["enc", "-a", "-k", "key", "-o", "c.asc", "plain"],
    );
    refused(&dir.path().join("c.asc"), &unlock, "is ASCII armor");
    refused(&dir.path().join("missing"), &unlock, "missing");
}
