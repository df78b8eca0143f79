//! The format v3 testkit (tests/testkit/, written by scripts/make-testkit.py, described in its
//! README.md): fixed containers and bare messages, each with the secrets that open it and what
//! opening it must give, in the manner of age's testkit. For every manifest entry `paraes dec`
//! runs on each engine (`cpu`, `sunway-sim`, and `gpu` on the NVIDIA driver or the CUDA
//! stand-in, else a loud SKIPPED), three ways: from the file into `-o FILE`, from the file to
//! standard output, and from a pipe to standard output. A good file gives exactly the expected
//! plaintext; a bad one exits 1 with an error of its class, leaves no file behind, and releases
//! nothing on standard output, except, from a pipe and for a chunk failure, whole authenticated
//! chunks of the plaintext (every kit plaintext is a prefix of one known byte stream, so the test
//! can tell). `paraes verify` runs on every container entry too. The SSH sub-kit
//! (tests/testkit/ssh/, its own manifest of the same shape) runs the same way, its OpenSSH and
//! PEM private keys given with `-i`.

#[path = "../../crates/paraes-gpu/tests/support/standin.rs"]
mod standin;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use sha2::{Digest, Sha256};

use crate::common::{skip, stderr, Scratch};

/// The kit's folder.
const KIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/testkit");
/// The SSH sub-kit's folder (issue 29), inside the kit's.
const SSH_KIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/testkit/ssh");
/// Plaintext bytes per chunk of a v3 body or message.
const CHUNK: usize = 16384;

/// How a file is expected to fail (the manifest's `failure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Failure {
    /// No given identity opens any stanza.
    NoMatch,
    /// A key opens, but the key commitment does not match.
    Commitment,
    /// A chunk fails authentication, or the chunks are framed wrong (cut, extended).
    Chunk,
    /// The header is malformed, or its slot tag does not verify.
    Header,
}

impl Failure {
    fn parse(name: &str) -> Failure {
        match name {
            "no_match" => Failure::NoMatch,
            "commitment" => Failure::Commitment,
            "chunk" => Failure::Chunk,
            "header" => Failure::Header,
            other => panic!("manifest: unknown failure class {other:?}"),
        }
    }

    /// Whether paraes can tell before it decrypts any chunk (so nothing may come out even
    /// from a pipe).
    fn before_any_chunk(self) -> bool {
        self != Failure::Chunk
    }
}

/// The class of a paraes error message (the text after `paraes: error: `), or None when it
/// names none of them.
fn classify(message: &str) -> Option<Failure> {
    const NO_MATCH: &[&str] = &["none of the given keys, passphrases or identities opens"];
    const COMMITMENT: &[&str] = &[
        "key commitment does not match",
        "its key commitment differs",
    ];
    const CHUNK_ERRORS: &[&str] = &[
        "failed authentication",
        "truncated or has a malformed last chunk",
        "of the message was changed",
        "the message is truncated",
        "the body was cut or extended",
        "a Cobblestone message ends in a chunk shorter than 16 KiB",
        "it ends before its 24-byte salt and 32-byte key commitment",
    ];
    const HEADER: &[&str] = &[
        "damaged or hostile container header",
        "the container header was changed",
        "truncated inside its header",
        "second stanza slot",
        "not a paraes container",
        "is not supported by this paraes",
    ];
    // Commitment and chunk messages mention headers too ("its header came from another
    // file"): they are matched first.
    for (class, phrases) in [
        (Failure::NoMatch, NO_MATCH),
        (Failure::Commitment, COMMITMENT),
        (Failure::Chunk, CHUNK_ERRORS),
        (Failure::Header, HEADER),
    ] {
        if phrases.iter().any(|p| message.contains(p)) {
            return Some(class);
        }
    }
    None
}

/// What opening a kit file must give.
#[derive(Clone, Debug)]
enum Expect {
    Ok { len: usize, sha256: String },
    Fail(Failure),
}

/// A secret that may open a file.
#[derive(Clone, Debug)]
enum Identity {
    /// A key file's content (hex); a message's key.
    Key(String),
    /// A passphrase.
    Passphrase(String),
    /// An X25519 identity file's text.
    X25519(String),
    /// An X-Wing (ML-KEM-768 + X25519) identity file's text.
    XWing(String),
    /// An SSH private key file's text (OpenSSH's format, or PEM).
    Ssh(String),
}

/// One manifest entry.
#[derive(Clone, Debug)]
struct Entry {
    /// The folder of its manifest.
    dir: &'static str,
    file: String,
    message: bool,
    identities: Vec<Identity>,
    context_hex: String,
    expect: Expect,
}

impl Entry {
    fn path(&self) -> PathBuf {
        Path::new(self.dir).join(&self.file)
    }
}

fn string(value: &serde_json::Value, field: &str, file: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("manifest: {file}: no string {field:?}"))
        .to_owned()
}

/// Both manifests' entries: the kit's, then the SSH sub-kit's.
fn manifest() -> Vec<Entry> {
    let mut entries = manifest_in(KIT);
    entries.extend(manifest_in(SSH_KIT));
    entries
}

/// The manifest in `dir`, parsed strictly (an entry this test does not understand fails it).
fn manifest_in(dir: &'static str) -> Vec<Entry> {
    let text = std::fs::read_to_string(Path::new(dir).join("manifest.json"))
        .unwrap_or_else(|e| panic!("{dir}/manifest.json: {e}"));
    let list: Vec<serde_json::Value> = serde_json::from_str(&text).expect("manifest is JSON");
    list.iter()
        .map(|v| {
            let file = string(v, "file", "?");
            let message = match string(v, "kind", &file).as_str() {
                "container" => false,
                "message" => true,
                other => panic!("manifest: {file}: unknown kind {other:?}"),
            };
            let identities = v["identities"]
                .as_array()
                .unwrap_or_else(|| panic!("manifest: {file}: no identities"))
                .iter()
                .map(|i| match string(i, "type", &file).as_str() {
                    "key" => Identity::Key(string(i, "hex", &file)),
                    "passphrase" => Identity::Passphrase(string(i, "text", &file)),
                    "x25519" => Identity::X25519(string(i, "identity", &file)),
                    "xwing" => Identity::XWing(string(i, "identity", &file)),
                    "ssh" => Identity::Ssh(string(i, "key", &file)),
                    other => panic!("manifest: {file}: unknown identity type {other:?}"),
                })
                .collect::<Vec<_>>();
            assert!(!identities.is_empty(), "manifest: {file}: no identity");
            let context_hex = if message {
                string(v, "context_hex", &file)
            } else {
                assert!(
                    v.get("context_hex").is_none(),
                    "manifest: {file}: a container with a context"
                );
                String::new()
            };
            let expect = match string(v, "expect", &file).as_str() {
                "ok" => Expect::Ok {
                    len: v["plaintext_len"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("manifest: {file}: no plaintext_len"))
                        as usize,
                    sha256: string(v, "plaintext_sha256", &file),
                },
                "fail" => Expect::Fail(Failure::parse(&string(v, "failure", &file))),
                other => panic!("manifest: {file}: unknown expectation {other:?}"),
            };
            assert!(
                !string(v, "note", &file).is_empty(),
                "manifest: {file}: empty note"
            );
            Entry {
                dir,
                file,
                message,
                identities,
                context_hex,
                expect,
            }
        })
        .collect()
}

/// The byte stream every kit plaintext is a prefix of (scripts/make-testkit.py, `plaintext`):
/// SHA-256 of "paraes testkit plaintext" and a big-endian 64-bit counter, concatenated.
fn plaintext(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    let mut i = 0u64;
    while out.len() < len {
        let mut h = Sha256::new();
        h.update(b"paraes testkit plaintext");
        h.update(i.to_be_bytes());
        out.extend_from_slice(&h.finalize());
        i += 1;
    }
    out.truncate(len);
    out
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The engine a run uses: `--backend NAME`, with extra environment (the CUDA stand-in).
struct Backend {
    name: &'static str,
    env: Vec<(&'static str, OsString)>,
}

/// The kit, set up in a scratch directory: each entry's secrets as files (mode 0600).
struct Bench {
    scratch: Scratch,
    entries: Vec<Entry>,
    /// The secret-file arguments of each entry (`-k F`, `--passphrase-file F`, `-i F`).
    args: Vec<Vec<String>>,
}

impl Bench {
    fn new() -> Bench {
        let scratch = Scratch::new();
        let entries = manifest();
        let args = entries
            .iter()
            .enumerate()
            .map(|(n, e)| {
                let mut args = Vec::new();
                for (j, identity) in e.identities.iter().enumerate() {
                    let name = format!("secret-{n}-{j}");
                    let (flag, content) = match identity {
                        Identity::Key(hex) => ("-k", format!("{hex}\n")),
                        Identity::Passphrase(text) => ("--passphrase-file", format!("{text}\n")),
                        Identity::X25519(text) | Identity::XWing(text) | Identity::Ssh(text) => {
                            ("-i", text.clone())
                        }
                    };
                    scratch.secret(&name, content.as_bytes());
                    args.push(flag.to_owned());
                    args.push(scratch.path(&name).display().to_string());
                }
                args
            })
            .collect();
        Bench {
            scratch,
            entries,
            args,
        }
    }

    /// `paraes dec` of entry `n` on `backend`, with `extra` arguments (input and output)
    /// and `stdin`, if any, on standard input.
    fn dec(&self, n: usize, backend: &Backend, extra: &[&str], stdin: Option<&[u8]>) -> Output {
        let e = &self.entries[n];
        let mut args: Vec<String> = vec!["dec".into(), "--backend".into(), backend.name.into()];
        if e.message {
            args.extend(["--format".into(), "cobblestone".into()]);
            if !e.context_hex.is_empty() {
                args.extend(["--context-hex".into(), e.context_hex.clone()]);
            }
        }
        args.extend(self.args[n].iter().cloned());
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = self.scratch.command(&args);
        for (k, v) in &backend.env {
            command.env(k, v);
        }
        run(command, stdin)
    }

    /// Runs every entry through `check`, then fails with every problem found, one a line.
    fn each(&self, mut check: impl FnMut(usize, &Entry) -> Vec<String>) {
        let mut problems = Vec::new();
        for (n, e) in self.entries.iter().enumerate() {
            problems.extend(check(n, e).into_iter().map(|p| format!("{}: {p}", e.file)));
        }
        assert!(
            problems.is_empty(),
            "{} problems:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }

    /// Every check of `dec` for entry `n` on `backend`: file to file, file to standard output,
    /// pipe to standard output.
    fn check_dec(&self, n: usize, backend: &Backend) -> Vec<String> {
        let e = &self.entries[n];
        let input = e.path().display().to_string();
        let bytes = std::fs::read(e.path()).expect("a kit file");
        let mut problems = Vec::new();
        let mut note = |how: &str, problem: Option<String>| {
            if let Some(p) = problem {
                problems.push(format!("{} {how}: {p}", backend.name));
            }
        };

        // From the file into a file.
        let before = self.scratch.names();
        let out = self.dec(n, backend, &[&input, "-o", "out"], None);
        match &e.expect {
            Expect::Ok { .. } => {
                let got = if self.scratch.exists("out") {
                    let got = self.scratch.read("out");
                    self.scratch.remove("out");
                    got
                } else {
                    Vec::new()
                };
                note("to a file", expect_plaintext(&e.expect, &out, &got));
            }
            Expect::Fail(class) => {
                note("to a file", expect_failure(*class, &out));
                if self.scratch.names() != before {
                    note(
                        "to a file",
                        Some(format!(
                            "left {:?} behind",
                            self.scratch.names().difference(&before).collect::<Vec<_>>()
                        )),
                    );
                    if self.scratch.exists("out") {
                        self.scratch.remove("out");
                    }
                }
            }
        }

        // From the file to standard output: a regular file's length and last chunk are
        // checked before anything is written, and every kit body fits in one of dec's 1 MiB
        // batches, so a failure of any class releases nothing.
        let out = self.dec(n, backend, &[&input, "-o", "-"], None);
        note("file to stdout", self.check_stream(n, &out, false));

        // From a pipe to standard output.
        let out = self.dec(n, backend, &["-o", "-"], Some(&bytes));
        note("pipe to stdout", self.check_stream(n, &out, true));
        problems
    }

    /// Checks a run that wrote to standard output; `pipe`: the input came from a pipe, where a
    /// chunk failure may come after whole authenticated chunks were released.
    fn check_stream(&self, n: usize, out: &Output, pipe: bool) -> Option<String> {
        let e = &self.entries[n];
        match e.expect {
            Expect::Ok { .. } => expect_plaintext(&e.expect, out, &out.stdout),
            Expect::Fail(class) => {
                if let Some(p) = expect_failure(class, out) {
                    return Some(p);
                }
                let released = out.stdout.len();
                if released == 0 {
                    None
                } else if class.before_any_chunk() || !pipe {
                    Some(format!(
                        "released {released} bytes before failing ({class:?})"
                    ))
                } else if !released.is_multiple_of(CHUNK) {
                    Some(format!(
                        "released {released} bytes, not whole chunks, before failing"
                    ))
                } else if out.stdout != plaintext(released) {
                    Some(format!(
                        "released {released} bytes that are not the authentic plaintext"
                    ))
                } else {
                    None
                }
            }
        }
    }
}

/// Runs `command` with `stdin` (or nothing) on standard input and collects its output.
fn run(mut command: Command, stdin: Option<&[u8]>) -> Output {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("paraes runs");
    let mut pipe = child.stdin.take().expect("piped stdin");
    let data = stdin.unwrap_or_default().to_vec();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        // paraes may stop reading early (an error): that is its business.
        let _ = pipe.write_all(&data);
    });
    let output = child.wait_with_output().expect("paraes ends");
    writer.join().expect("stdin writer");
    output
}

/// None when `out` succeeded silently and `got` is the expected plaintext, else what is wrong.
fn expect_plaintext(expect: &Expect, out: &Output, got: &[u8]) -> Option<String> {
    let Expect::Ok { len, sha256 } = expect else {
        unreachable!("expect_plaintext of a failure")
    };
    if !out.status.success() {
        return Some(format!("failed ({}): {}", out.status, stderr(out).trim()));
    }
    if got.len() != *len || sha256_hex(got) != *sha256 {
        return Some(format!(
            "gave {} bytes (SHA-256 {}), expected {len} ({sha256})",
            got.len(),
            sha256_hex(got)
        ));
    }
    None
}

/// None when `out` is a clean refusal (exit status 1, one `paraes: error:` line) of class
/// `class`, else what is wrong.
fn expect_failure(class: Failure, out: &Output) -> Option<String> {
    let err = stderr(out);
    if out.status.code() != Some(1) {
        return Some(format!(
            "expected a {class:?} failure (exit status 1), got {}: {}",
            out.status,
            err.trim()
        ));
    }
    let errors: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("paraes: error: "))
        .collect();
    let [message] = errors[..] else {
        return Some(format!("expected one error line, got: {}", err.trim()));
    };
    match classify(message) {
        Some(got) if got == class => None,
        Some(got) => Some(format!(
            "expected a {class:?} failure, got {got:?}: {message}"
        )),
        None => Some(format!(
            "expected a {class:?} failure, got an unclassified error: {message}"
        )),
    }
}

/// The kit is what its manifest says: every file listed and present, nothing else, every good
/// plaintext a prefix of the kit's byte stream, every class and kind represented.
#[test]
fn manifest_describes_the_kit() {
    let entries = manifest();
    let mut listed = std::collections::BTreeSet::new();
    let mut counts: BTreeMap<(bool, Option<Failure>), usize> = BTreeMap::new();
    for e in &entries {
        assert!(listed.insert(e.file.clone()), "{} listed twice", e.file);
        assert!(e.path().is_file(), "{} is listed but missing", e.file);
        if e.message {
            assert!(
                matches!(&e.identities[..], [Identity::Key(_)]),
                "{}: a message opens with exactly one key",
                e.file
            );
            hex::decode(&e.context_hex).expect("context_hex is hex");
        }
        for identity in &e.identities {
            if let Identity::Key(k) = identity {
                let key = hex::decode(k).expect("a key is hex");
                assert!(
                    [16, 32].contains(&key.len()),
                    "{}: a key of {} bytes",
                    e.file,
                    key.len()
                );
            }
        }
        match &e.expect {
            Expect::Ok { len, sha256 } => {
                assert_eq!(
                    sha256_hex(&plaintext(*len)),
                    *sha256,
                    "{}: the plaintext is not the kit stream's first {len} bytes",
                    e.file
                );
                *counts.entry((e.message, None)).or_default() += 1;
            }
            Expect::Fail(class) => *counts.entry((e.message, Some(*class))).or_default() += 1,
        }
    }
    for (dir, sub) in [(KIT, "ssh"), (SSH_KIT, "")] {
        for entry in std::fs::read_dir(dir).expect("tests/testkit") {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                listed.contains(&name)
                    || name == "manifest.json"
                    || name == "README.md"
                    || name == sub,
                "{dir}/{name} is not in the manifest"
            );
        }
    }
    // The SSH sub-kit holds both SSH kinds, opened and refused.
    let ssh: Vec<&Entry> = entries.iter().filter(|e| e.dir == SSH_KIT).collect();
    for needle in [
        "ssh-ed25519",
        "ssh-rsa2048",
        "ssh-rsa8192",
        "py-ssh-rsa",
        "nomatch",
    ] {
        assert!(
            ssh.iter().any(|e| e.file.contains(needle)),
            "the SSH kit has no {needle} file"
        );
    }
    for (message, class) in [
        (false, None),
        (false, Some(Failure::NoMatch)),
        (false, Some(Failure::Commitment)),
        (false, Some(Failure::Chunk)),
        (false, Some(Failure::Header)),
        (true, None),
        (true, Some(Failure::Commitment)),
        (true, Some(Failure::Chunk)),
    ] {
        assert!(
            counts.get(&(message, class)).is_some_and(|&n| n > 0),
            "the kit has no {} {class:?} entry",
            if message { "message" } else { "container" }
        );
    }
}

#[test]
fn every_file_decrypts_as_expected_on_the_cpu_engine() {
    let bench = Bench::new();
    let cpu = Backend {
        name: "cpu",
        env: Vec::new(),
    };
    bench.each(|n, _| bench.check_dec(n, &cpu));
}

#[test]
fn every_file_decrypts_as_expected_on_the_sunway_simulator() {
    let bench = Bench::new();
    let sim = Backend {
        name: "sunway-sim",
        env: Vec::new(),
    };
    bench.each(|n, _| bench.check_dec(n, &sim));
}

/// The GPU engine: on the NVIDIA driver, or on the CUDA stand-in (named by
/// `PARAES_CUDA_STANDIN`, or built here as tests/engine_identity.rs builds it when a C++
/// compiler is at hand); otherwise SKIPPED, loudly.
#[test]
fn every_file_decrypts_as_expected_on_the_gpu_engine() {
    const TEST: &str = "testkit::every_file_decrypts_as_expected_on_the_gpu_engine";
    let Some(env) = gpu_environment(TEST) else {
        return;
    };
    let bench = Bench::new();
    let gpu = Backend { name: "gpu", env };
    bench.each(|n, _| bench.check_dec(n, &gpu));
}

/// The environment that makes `--backend gpu` work here, or None (said loudly).
fn gpu_environment(test: &str) -> Option<Vec<(&'static str, OsString)>> {
    let wanted = std::env::var("PARAES_GPU_TESTS").unwrap_or_default();
    let preset = std::env::var_os(paraes_gpu::STANDIN_ENV).is_some_and(|v| !v.is_empty());
    // The NVIDIA driver (refused as a target only by PARAES_GPU_TESTS=standin), or a stand-in
    // this process's environment already names: the child inherits either.
    if wanted == "nvidia" || preset || (wanted != "standin" && paraes_gpu::driver_installed()) {
        return Some(Vec::new());
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let compiler = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !compiler {
        skip(
            test,
            &format!(
                "no NVIDIA driver, {} is not set and there is no C++ compiler ({cxx}) to build \
                 the CUDA stand-in: --backend gpu was not checked on the testkit",
                paraes_gpu::STANDIN_ENV
            ),
        );
        return None;
    }
    // The same build as standin::driver() makes (same source, flags and name: one file, built
    // once for every test binary), named to the child processes only.
    let lib = standin::compile(
        "emulate/cuda-standin.cpp",
        &[
            "-shared",
            "-fPIC",
            "-pthread",
            "-Wextra",
            "-Wl,-soname,libcuda.so",
        ],
        "libcuda-standin.so",
    );
    eprintln!(
        "*** {test}: no NVIDIA driver: --backend gpu runs on the {} ({}) ***",
        paraes_gpu::STANDIN_NAME,
        lib.display()
    );
    Some(vec![(paraes_gpu::STANDIN_ENV, lib.into_os_string())])
}

/// `paraes verify` on every container entry: exit 0 for the good ones, a refusal of the
/// entry's class for the others, nothing written either way.
#[test]
fn verify_agrees_with_the_manifest() {
    let bench = Bench::new();
    bench.each(|n, e| {
        if e.message {
            return Vec::new();
        }
        let input = e.path().display().to_string();
        let mut args = vec!["verify"];
        args.extend(bench.args[n].iter().map(String::as_str));
        args.push(&input);
        let before = bench.scratch.names();
        let out = bench.scratch.run(&args);
        let mut problems = Vec::new();
        match &e.expect {
            Expect::Ok { .. } => {
                if !out.status.success() {
                    problems.push(format!(
                        "verify failed ({}): {}",
                        out.status,
                        stderr(&out).trim()
                    ));
                } else if !verify_says_ok(&String::from_utf8_lossy(&out.stdout), &input) {
                    problems.push(format!(
                        "verify printed {:?}",
                        String::from_utf8_lossy(&out.stdout)
                    ));
                }
            }
            Expect::Fail(class) => {
                if let Some(p) = expect_failure(*class, &out) {
                    problems.push(format!("verify: {p}"));
                }
                if !out.stdout.is_empty() {
                    problems.push(format!(
                        "verify printed {:?} for a bad file",
                        String::from_utf8_lossy(&out.stdout)
                    ));
                }
            }
        }
        if bench.scratch.names() != before {
            problems.push("verify changed the directory".into());
        }
        problems
    });
}

/// `verify`'s line for an authentic file: `FILE: OK`, or for a v3 file with a slot its file
/// key does not authenticate (FORMAT.md, "Opening a file", step 5) `FILE: OK, stanza slot N
/// ignored: ...`.
fn verify_says_ok(stdout: &str, input: &str) -> bool {
    let line = stdout.trim();
    line == format!("{input}: OK") || line.starts_with(&format!("{input}: OK, stanza slot "))
}
