//! Faults while `paraes` works: a full output device (/dev/full) and a full file system (a
//! 1 MiB tmpfs), read errors in the middle of the input (an LD_PRELOAD shim), and SIGINT,
//! SIGTERM and SIGKILL in the middle of encrypting a large file.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{
    assert_error, assert_silent_success, container_len, seeded_bytes, send_signal, skip, stderr,
    unfinished_output, wait_until, Scratch, HEADER_LEN, TAG_LEN,
};
use crate::fault_shim::{build_read_fault_shim, run_with_read_fault};

const IV: &str = "000102030405060708090a0b0c0d0e0f";

#[test]
fn a_full_output_device_is_one_clear_error() {
    let s = Scratch::new();
    s.key_file("key", 256, 20, true);
    let plain = seeded_bytes(20, 1 << 20);
    s.write("x", &plain);
    assert_silent_success(&s.run(&["enc", "-k", "key", "x"]), "enc x");
    let cases: [(&str, &[&str]); 5] = [
        (
            "enc (the header fails)",
            &["enc", "-k", "key", "x", "-o", "/dev/full"],
        ),
        (
            "dec (a chunk fails)",
            &["dec", "-k", "key", "x.paraes", "-o", "/dev/full"],
        ),
        (
            "raw enc",
            &[
                "enc",
                "-k",
                "key",
                "--raw",
                "ctr",
                "--iv",
                IV,
                "x",
                "-o",
                "/dev/full",
            ],
        ),
        (
            "enc --force",
            &["enc", "-k", "key", "x", "-o", "/dev/full", "--force"],
        ),
        ("enc from stdin", &["enc", "-k", "key", "-o", "/dev/full"]),
    ];
    for (what, args) in cases {
        let before = s.names();
        let out = s.run_with_stdin(args, &plain);
        let message = s.assert_refused(&out, &before, what);
        assert!(
            message.contains("writing /dev/full failed") && message.contains("No space left"),
            "{what}: {message}"
        );
    }
    assert!(
        fs::metadata("/dev/full")
            .expect("/dev/full")
            .file_type()
            .is_char_device(),
        "/dev/full was replaced"
    );
    assert_eq!(s.read("x"), plain, "the input changed");
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct SmallFileSystem {
    mount_point: PathBuf,
}

impl SmallFileSystem {
    /// Mounts a tmpfs of `size` (e.g. "1m") at `mount_point`; `None` when this is not allowed
    /// here (not root, no mount namespace rights).
    fn mount(mount_point: &Path, size: &str) -> Option<Self> {
        fs::create_dir_all(mount_point).expect("mkdir");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(mount_point)
            .stderr(Stdio::null())
            .status();
        status.is_ok_and(|s| s.success()).then(|| SmallFileSystem {
            mount_point: mount_point.to_path_buf(),
        })
    }

    fn names(&self) -> BTreeSet<String> {
        fs::read_dir(&self.mount_point)
            .expect("readable mount")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for SmallFileSystem {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.mount_point)
            .status();
    }
}

#[test]
fn a_full_file_system_leaves_no_output_and_no_temporary() {
    const TEST: &str = "a_full_file_system_leaves_no_output_and_no_temporary";
    let s = Scratch::new();
    let Some(small) = SmallFileSystem::mount(&s.path("small"), "1m") else {
        skip(
            TEST,
            "cannot mount a 1 MiB tmpfs (`mount -t tmpfs -o size=1m` needs root): the full \
             file system case is untested here (/dev/full is tested)",
        );
        return;
    };
    s.key_file("key", 256, 21, true);
    let plain = seeded_bytes(21, 4 << 20);
    s.write("x", &plain);
    assert_silent_success(&s.run(&["enc", "-k", "key", "x"]), "enc x");
    // An input on the small file system whose container cannot fit beside it.
    fs::write(s.path("small/half"), &plain[..600 << 10]).expect("write small/half");

    let cases: [(&str, &[&str], &[u8]); 5] = [
        (
            "enc",
            &["enc", "-k", "key", "x", "-o", "small/x.paraes"],
            b"",
        ),
        (
            "dec",
            &["dec", "-k", "key", "x.paraes", "-o", "small/x"],
            b"",
        ),
        (
            "raw enc",
            &[
                "enc",
                "-k",
                "key",
                "--raw",
                "ctr",
                "--iv",
                IV,
                "x",
                "-o",
                "small/x.ctr",
            ],
            b"",
        ),
        (
            "enc from stdin",
            &["enc", "-k", "key", "-o", "small/in.paraes"],
            &plain,
        ),
        (
            "enc, derived name",
            &["enc", "-k", "key", "small/half"],
            b"",
        ),
    ];
    for (what, args, stdin) in cases {
        let before = s.names();
        let before_small = small.names();
        let out = s.run_with_stdin(args, stdin);
        let message = assert_error(&out, what);
        assert!(
            message.contains("writing small/") && message.contains("No space left"),
            "{what}: {message}"
        );
        assert_eq!(s.names(), before, "{what}: the directory changed");
        assert_eq!(
            small.names(),
            before_small,
            "{what}: output or temporary left"
        );
    }
    // Nothing hidden holds the space either: a small file still fits.
    fs::remove_file(s.path("small/half")).expect("rm");
    let out = s.run_with_stdin(
        &["enc", "-k", "key", "-o", "small/tiny.paraes"],
        &plain[..900 << 10],
    );
    assert_silent_success(&out, "enc of 900 KiB into the emptied 1 MiB file system");
    assert_eq!(small.names(), ["tiny.paraes"].map(String::from).into());
}

#[test]
fn read_errors_mid_file_are_one_clear_error() {
    const TEST: &str = "read_errors_mid_file_are_one_clear_error";
    let s = Scratch::new();
    let Some(shim) = build_read_fault_shim(&s, TEST) else {
        return;
    };
    s.key_file("key", 256, 22, true);
    let plain = seeded_bytes(22, 3 << 20);
    s.write("x", &plain);
    let out = s.run(&["enc", "-k", "key", "--chunk-size", "64KiB", "x"]);
    assert_silent_success(&out, "enc x");
    let sealed_len = s.read("x.paraes").len() as u64;

    // The shim is in place and harmless when the fault lies past the end.
    let out = run_with_read_fault(
        &s,
        &shim,
        "x",
        1 << 40,
        &["enc", "-k", "key", "x", "-o", "ok"],
    );
    assert_silent_success(&out, "enc with the fault past the end");
    s.remove("ok");

    let mut tried = 0;
    for after in [0, 1, 4096, 65_536 * 5 + 7, 1 << 20, (3 << 20) - 1] {
        for (what, args, faulty) in [
            (
                "enc",
                &["enc", "-k", "key", "x", "-o", "out.paraes"][..],
                "x",
            ),
            ("enc to stdout", &["enc", "-k", "key", "x", "-o", "-"], "x"),
            (
                "raw enc",
                &[
                    "enc", "-k", "key", "--raw", "ctr", "--iv", IV, "x", "-o", "out.ctr",
                ],
                "x",
            ),
            (
                "dec",
                &["dec", "-k", "key", "x.paraes", "-o", "out"],
                "x.paraes",
            ),
        ] {
            if faulty == "x.paraes" && after >= sealed_len {
                continue;
            }
            let what = format!("{what}, read error after {after} bytes");
            let before = s.names();
            let out = run_with_read_fault(&s, &shim, faulty, after, args);
            let message = s.assert_refused(&out, &before, &what);
            assert!(
                message.contains(faulty) && message.contains("Input/output error"),
                "{what}: {message}"
            );
            if args.contains(&"-") {
                // What reached standard output before the error is the start of a container,
                // never more than was read.
                assert!(out.stdout.len() as u64 <= HEADER_LEN as u64 + after + TAG_LEN as u64 * 64);
            }
            tried += 1;
        }
    }
    assert!(tried >= 20, "only {tried} cases ran");
    assert_eq!(s.read("x"), plain, "the input changed");
}

/// A failed write at offsets (ENOSPC, EIO), at each of a file's writes in turn, is one clear
/// error and leaves nothing: no output, no temporary, in the output's directory.
#[test]
fn write_errors_at_every_offset_leave_nothing() {
    const TEST: &str = "write_errors_at_every_offset_leave_nothing";
    let s = Scratch::new();
    let Some(shim) = build_read_fault_shim(&s, TEST) else {
        return;
    };
    s.key_file("key", 256, 24, true);
    // Windows of at most 4 MiB (less for a file this short, so that every worker has a few):
    // every write fails in turn until the first past the last, which leaves the output whole.
    let plain = seeded_bytes(24, (12 << 20) + 5);
    s.write("x", &plain);
    assert_silent_success(&s.run(&["enc", "-k", "key", "x"]), "enc x");
    fs::create_dir(s.path("out")).expect("mkdir out");
    let dir = fs::canonicalize(s.path("out")).expect("canonical path");
    let in_out = || fs::read_dir(&dir).expect("ls out").count();
    for (errno, words) in [(28, "No space left"), (5, "Input/output error")] {
        for (what, args) in [
            ("enc", ["enc", "-k", "key", "x", "-o", "out/x.paraes"]),
            ("dec", ["dec", "-k", "key", "x.paraes", "-o", "out/x"]),
        ] {
            let mut nth = 0;
            loop {
                let what = format!("{what}, write {nth} failing with errno {errno}");
                let out = s
                    .command(&args)
                    .env("LD_PRELOAD", &shim)
                    .env("FAULT_WRITE_DIR", &dir)
                    .env("FAULT_WRITE_NTH", nth.to_string())
                    .env("FAULT_WRITE_ERRNO", errno.to_string())
                    .stdin(Stdio::null())
                    .output()
                    .expect("paraes runs");
                if out.status.success() {
                    // Past the last write: the shim is harmless, the output whole. A file of
                    // 12 MiB is written in three windows at least.
                    assert!(nth >= 4, "{what}: only {nth} writes");
                    assert_silent_success(&out, &what);
                    let made = s.read(args[5]);
                    match args[0] {
                        "enc" => assert_eq!(made.len(), s.read("x.paraes").len(), "{what}"),
                        _ => assert!(made == plain, "{what}"),
                    }
                    fs::remove_file(s.path(args[5])).expect("rm");
                    break;
                }
                let message = assert_error(&out, &what);
                assert!(
                    message.contains(&format!("writing {} failed", args[5]))
                        && message.contains(words),
                    "{what}: {message}"
                );
                assert_eq!(in_out(), 0, "{what}: output or temporary left");
                assert!(nth < 1000, "{what}: no run got past the last write");
                nth += 1;
            }
        }
    }
    assert_eq!(s.read("x"), plain, "the input changed");
}

/// Size of the large input of the signal tests (sparse, with a few marked places).
const LARGE: u64 = 768 << 20;

/// A sparse `LARGE`-byte file `big` with seeded bytes at a few offsets, and a key; returns the
/// input's fingerprint.
fn large_input() -> (Scratch, Fingerprint) {
    // The input is sparse; an output grows to the input's size.
    let s = Scratch::for_large_files(LARGE);
    s.key_file("key", 256, 23, true);
    let file = fs::File::create(s.path("big")).expect("create big");
    file.set_len(LARGE).expect("sparse big");
    for (i, offset) in [0, LARGE / 3, LARGE / 2, LARGE - 4096]
        .into_iter()
        .enumerate()
    {
        std::os::unix::fs::FileExt::write_all_at(&file, &seeded_bytes(i as u64, 4096), offset)
            .expect("mark big");
    }
    drop(file);
    let print = Fingerprint::of(&s.path("big"));
    (s, print)
}

/// What shows that a file is untouched: its length, modification time and BLAKE3 hash.
#[derive(Debug, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    modified: std::time::SystemTime,
    hash: blake3::Hash,
}

impl Fingerprint {
    fn of(path: &Path) -> Self {
        let meta = fs::metadata(path).expect("metadata");
        let mut hasher = blake3::Hasher::new();
        hasher
            .update_reader(fs::File::open(path).expect("open"))
            .expect("hash");
        Fingerprint {
            len: meta.len(),
            modified: meta.modified().expect("mtime"),
            hash: hasher.finalize(),
        }
    }
}

/// Starts `paraes enc -k key --chunk-size 1MiB big -o big.paraes` and waits until its
/// unfinished output holds more than `bytes`.
fn encrypt_large_until(s: &Scratch, bytes: u64) -> std::process::Child {
    let child = s
        .command(&[
            "enc",
            "-k",
            "key",
            "--chunk-size",
            "1MiB",
            "big",
            "-o",
            "big.paraes",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paraes runs");
    let pid = child.id();
    let written = || {
        let names = s.names();
        unfinished_output(pid, &s.path(""))
            .unwrap_or(0)
            // Finished already: count it as everything.
            .max(if names.contains("big.paraes") {
                u64::MAX
            } else {
                0
            })
    };
    wait_until(60, &format!("{bytes} bytes of output"), || {
        written() > bytes
    });
    child
}

#[test]
fn sigint_and_sigterm_mid_encryption_leave_nothing() {
    let (s, print) = large_input();
    let before = s.names();
    for (signal, status, said) in [("INT", 130, "interrupted"), ("TERM", 143, "terminated")] {
        for at in [4 << 20, 64 << 20, 256 << 20] {
            let what = format!("SIG{signal} after {} MiB", at >> 20);
            let child = encrypt_large_until(&s, at);
            send_signal(child.id(), signal);
            let out = child.wait_with_output().expect("paraes ends");
            assert_eq!(out.status.code(), Some(status), "{what}: {}", stderr(&out));
            assert_eq!(
                stderr(&out).trim(),
                format!("paraes: {said}: no output file was left behind"),
                "{what}"
            );
            assert_eq!(s.names(), before, "{what}: output or temporary left");
        }
    }
    assert_eq!(Fingerprint::of(&s.path("big")), print, "the input changed");
}

/// SIGKILL cannot be caught, yet it leaves nothing: the output is an unnamed (`O_TMPFILE`)
/// file until it is complete.
#[test]
fn sigkill_leaves_nothing_behind() {
    let (s, print) = large_input();
    let before = s.names();
    let complete_len = container_len(LARGE as usize, HEADER_LEN) as u64;
    let mut killed_mid_way = 0;
    for at in [1 << 20, 16 << 20, 128 << 20, 512 << 20, LARGE - (1 << 20)] {
        let what = format!("SIGKILL after {} MiB", at >> 20);
        let mut child = encrypt_large_until(&s, at);
        child.kill().expect("SIGKILL");
        child.wait().expect("paraes ends");
        let after = s.names();
        let new: Vec<&String> = after.difference(&before).collect();
        if after.contains("big.paraes") {
            // It finished before the kill: then the file is whole.
            assert_eq!(
                fs::metadata(s.path("big.paraes")).expect("meta").len(),
                complete_len,
                "{what}: a truncated file under the final name"
            );
            s.remove("big.paraes");
        } else {
            killed_mid_way += 1;
        }
        assert!(
            new.iter().all(|name| name.as_str() == "big.paraes"),
            "{what}: left {new:?}"
        );
        assert_eq!(s.names(), before, "{what}");
    }
    assert!(
        killed_mid_way >= 3,
        "only {killed_mid_way} kills landed mid-way"
    );
    assert_eq!(Fingerprint::of(&s.path("big")), print, "the input changed");
}

#[test]
fn interrupting_a_stream_says_that_its_output_is_incomplete() {
    let s = Scratch::new();
    s.key_file("key", 256, 24, true);
    for (signal, status, said) in [("INT", 130, "interrupted"), ("TERM", 143, "terminated")] {
        let mut child = s
            .command(&["enc", "-k", "key", "/dev/zero", "-o", "-"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("paraes runs");
        let mut stdout = child.stdout.take().expect("piped stdout");
        let mut first = vec![0u8; 1 << 20];
        std::io::Read::read_exact(&mut stdout, &mut first).expect("the first MiB");
        assert_eq!(&first[..8], b"\x89PARAES\n", "SIG{signal}: not a container");
        send_signal(child.id(), signal);
        // Keep draining, so that paraes is never stuck on a full pipe.
        std::io::copy(&mut stdout, &mut std::io::sink()).expect("drain");
        let out = child.wait_with_output().expect("paraes ends");
        assert_eq!(
            out.status.code(),
            Some(status),
            "SIG{signal}: {}",
            stderr(&out)
        );
        assert_eq!(
            stderr(&out).trim(),
            format!("paraes: {said}: anything already written to the output stream is incomplete"),
            "SIG{signal}"
        );
        assert_eq!(s.names(), ["key"].map(String::from).into(), "SIG{signal}");
    }
}
