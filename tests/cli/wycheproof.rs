//! `paraes dec --format cobblestone` on Wycheproof's C2SP chunked-encryption vectors
//! (tests/vectors/c2sp/, 70, read by `paraes_core::testing::wycheproof`, whose oracle gives each
//! vector's plaintext and valid prefix): every vector from a file and from a pipe, to standard
//! output and to a file, and with `--range` (the whole range; `..0`, which only authenticates
//! the length from the final chunk; the final chunk alone). A valid vector gives its plaintext
//! on every path. An invalid one exits 1 with one error line, never lets out a byte past its
//! valid prefix (from a regular file, nothing at all unless its final chunk verifies: the
//! `ValidFinalChunk` vectors, whose length check the spec lets succeed, and paraes does), and
//! leaves no output file. Also: scripts/sparse-vectors.py still makes the committed
//! tests/vectors/c2sp-sparse.json; and, with the `mpi` feature, the vectors that span several
//! of dec's batches under `--backend mpi` (`wycheproof::mpi::`, which scripts/test.sh runs).

use std::collections::BTreeSet;
use std::process::{Command, Output};

use paraes_core::testing::wycheproof::{self, Oracle, Vector};

use crate::common::{stderr, Scratch};

/// Bytes of a chunk's plaintext.
const CHUNK: usize = 16384;

/// One vector laid out in a scratch directory: its key as the hex key file `k` (mode 0600),
/// its ciphertext as `m`.
struct Case<'a> {
    v: &'a Vector,
    oracle: Oracle,
    /// `--format cobblestone -k k`, and `--context-hex` when the context is not empty.
    args: Vec<String>,
    /// The directory's entries with `k` and `m` written.
    before: BTreeSet<String>,
}

impl<'a> Case<'a> {
    fn new(s: &Scratch, v: &'a Vector) -> Self {
        s.write("k", format!("{}\n", hex::encode(&v.key)).as_bytes());
        s.set_mode("k", 0o600);
        s.write("m", &v.message);
        let mut args: Vec<String> = ["--format", "cobblestone", "-k", "k"]
            .map(String::from)
            .to_vec();
        if !v.context.is_empty() {
            args.extend(["--context-hex".into(), hex::encode(&v.context)]);
        }
        Case {
            v,
            oracle: v.oracle(),
            args,
            before: s.names(),
        }
    }

    /// `dec -q ARGS EXTRA...` (the case's key and context before EXTRA).
    fn dec(&self, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = vec!["dec".into(), "-q".into()];
        args.extend(self.args.iter().cloned());
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    }

    /// Asserts what a run on `path` gave: a valid vector's plaintext (`expected`, the whole
    /// plaintext unless given) on standard output or in `out`, which is then removed; for an
    /// invalid vector, exit status 1 with one `paraes: error:` line, standard output within
    /// the valid prefix (and empty when `nothing_unless_final`, a whole regular file read,
    /// holds and the final chunk does not verify), and the directory as it was.
    fn check(
        &self,
        s: &Scratch,
        out: &Output,
        path: &str,
        expected: Option<&[u8]>,
        nothing_unless_final: bool,
    ) {
        let what = format!("{}: {path}", self.v.name());
        let written = if s.exists("out") {
            Some(s.read("out"))
        } else {
            None
        };
        if self.v.valid {
            let err = stderr(out);
            assert!(out.status.success(), "{what}: failed: {err}");
            let got = written.as_deref().unwrap_or(&out.stdout);
            let expected = expected.unwrap_or(&self.oracle.prefix);
            assert!(
                got == expected,
                "{what}: {} bytes, not the plaintext",
                got.len()
            );
            if written.is_some() {
                s.remove("out");
            }
            return;
        }
        let err = stderr(out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: exit status, stderr: {err}"
        );
        assert!(
            err.lines().count() == 1 && err.starts_with("paraes: error: "),
            "{what}: one error line expected: {err}"
        );
        self.v
            .assert_within_prefix(&self.oracle, &out.stdout, &format!("{path} (stdout)"));
        if nothing_unless_final && !self.v.has("ValidFinalChunk") {
            assert!(
                out.stdout.is_empty(),
                "{what}: {} bytes out before the end check failed",
                out.stdout.len()
            );
        }
        assert_eq!(s.names(), self.before, "{what}: output left behind");
    }

    /// The final chunk's plaintext start, and its bytes, where the oracle opens it.
    fn final_chunk(&self) -> Option<(usize, &[u8])> {
        let last = self.oracle.chunks.len().checked_sub(1)?;
        Some((last * CHUNK, self.oracle.chunks[last].as_deref()?))
    }
}

fn run(s: &Scratch, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    s.run(&args)
}

fn run_with_stdin(s: &Scratch, args: &[String], stdin: &[u8]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    s.run_with_stdin(&args, stdin)
}

fn vectors() -> Vec<Vector> {
    let vectors = wycheproof::vectors();
    assert_eq!(vectors.len(), 2 * wycheproof::PER_FILE);
    vectors
}

#[test]
fn every_vector_from_a_file_to_standard_output_and_to_a_file() {
    let s = Scratch::new();
    for v in &vectors() {
        let case = Case::new(&s, v);
        let out = run(&s, &case.dec(&["m", "-o", "-"]));
        case.check(&s, &out, "file to stdout", None, true);
        let out = run(&s, &case.dec(&["m", "-o", "out"]));
        case.check(&s, &out, "file to a file", None, true);
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn every_vector_from_a_pipe_to_standard_output_and_to_a_file() {
    let s = Scratch::new();
    for v in &vectors() {
        let case = Case::new(&s, v);
        let out = run_with_stdin(&s, &case.dec(&["-o", "-"]), &v.message);
        case.check(&s, &out, "pipe to stdout", None, false);
        let out = run_with_stdin(&s, &case.dec(&["-o", "out"]), &v.message);
        case.check(&s, &out, "pipe to a file", None, false);
    }
}

/// `--range`: the whole range (to standard output and to a file) gives the plaintext or
/// fails; `..0` reads only the final chunk, to authenticate the length: it succeeds for valid
/// vectors and, as the spec allows, for `ValidFinalChunk` ones (their final chunk is sound),
/// and fails for every other invalid vector; the final chunk alone reads where it is sound.
#[test]
fn every_vector_by_range() {
    let s = Scratch::new();
    let mut final_alone = 0;
    for v in &vectors() {
        let case = Case::new(&s, v);
        let out = run(&s, &case.dec(&["--range", "0..", "m", "-o", "-"]));
        case.check(&s, &out, "--range 0..", None, true);
        let out = run(&s, &case.dec(&["--range", "0..", "m", "-o", "out"]));
        case.check(&s, &out, "--range 0.. to a file", None, true);
        let out = run(&s, &case.dec(&["--range", "..0", "m", "-o", "-"]));
        let what = format!("{}: --range ..0", v.name());
        if v.valid || v.has("ValidFinalChunk") {
            assert!(out.status.success(), "{what}: {}", stderr(&out));
            assert!(out.stdout.is_empty(), "{what}");
        } else {
            case.check(&s, &out, "--range ..0", None, true);
        }
        if let (true, Some((start, bytes))) = (!v.has("HeaderFailure"), case.final_chunk()) {
            if v.valid || v.has("ValidFinalChunk") {
                let range = format!("{start}..");
                let out = run(&s, &case.dec(&["--range", &range, "m", "-o", "-"]));
                let what = format!("{}: --range {range}", v.name());
                assert!(out.status.success(), "{what}: {}", stderr(&out));
                assert!(out.stdout == bytes, "{what}: not the final chunk");
                final_alone += 1;
            }
        }
    }
    // 20 valid vectors and 8 ValidFinalChunk ones.
    assert_eq!(final_alone, 28);
}

/// A Python with pyca/cryptography 50: $PARAES_PYCA, else target/pyca/python (both as
/// scripts/test.sh makes them); fails loudly without one.
fn pyca() -> String {
    let candidates = std::env::var("PARAES_PYCA")
        .ok()
        .into_iter()
        .chain([concat!(env!("CARGO_MANIFEST_DIR"), "/target/pyca/python").to_owned()]);
    for python in candidates {
        let ok = Command::new(&python)
            .args(["-c", "import cryptography.cobblestone"])
            .output()
            .is_ok_and(|out| out.status.success());
        if ok {
            return python;
        }
    }
    panic!(
        "no Python with pyca/cryptography >= 50 (PARAES_PYCA or target/pyca/python): run \
         scripts/test.sh, which installs it"
    );
}

/// The committed sparse vectors are what scripts/sparse-vectors.py makes with pyca (so the
/// file the core's tests read was computed outside paraes, and can be made again).
#[test]
fn the_sparse_vectors_are_what_the_script_makes_with_pyca() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(pyca())
        .arg(format!("{root}/scripts/sparse-vectors.py"))
        .output()
        .expect("python runs");
    assert!(out.status.success(), "the script failed: {}", stderr(&out));
    let committed = std::fs::read(format!("{root}/tests/vectors/c2sp-sparse.json"))
        .expect("tests/vectors/c2sp-sparse.json");
    // Everything but the line that names pyca's version, which a newer 50.x changes.
    let facts = |bytes: &[u8]| {
        let mut json: serde_json::Value = serde_json::from_slice(bytes).expect("JSON");
        json.as_object_mut().expect("an object").remove("generator");
        json
    };
    assert!(
        facts(&out.stdout) == facts(&committed),
        "tests/vectors/c2sp-sparse.json differs from what scripts/sparse-vectors.py makes now"
    );
}

/// Under `--backend mpi` (`mpiexec -n 1, 2, 3`, direct and scatter I/O): the vectors that span
/// several of dec's 1 MiB batches, so that the ranks share them (tcId 7 and 8 of both files:
/// 257 and 258 chunks, the CounterRollover ones), decrypt to their plaintext; copies of them
/// with a damaged tag deep in the body, or cut at a chunk boundary, are refused with one line
/// and no output. The smaller vectors fit one batch (one rank): the tests above run them.
#[cfg(feature = "mpi")]
mod mpi {
    use super::{vectors, Case, CHUNK};
    use crate::common::Scratch;
    use crate::mpi::with_mpi::{run_mpi, RANKS, STRATEGIES};

    /// The pipeline batch of `dec`, which the ranks share a body by.
    const DEC_BATCH: usize = paraes_core::pipeline::DEFAULT_CHUNK_SIZE;

    #[test]
    fn vectors_that_span_batches_decrypt_on_every_rank_count_and_strategy() {
        let s = Scratch::new();
        let all = vectors();
        let big: Vec<_> = all
            .iter()
            .filter(|v| v.message.len() > 2 * DEC_BATCH)
            .collect();
        assert_eq!(big.len(), 4, "the vectors of several batches");
        for v in big {
            assert!(v.valid && v.raw.is_some(), "{}", v.name());
            let case = Case::new(&s, v);
            for ranks in RANKS {
                for strategy in STRATEGIES {
                    let args = case.dec(&["--backend", "mpi", "--mpi-io", strategy]);
                    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
                    args.extend(["m", "-o", "out"]);
                    let out = run_mpi(&s, ranks, &args);
                    case.check(&s, &out, &format!("{ranks} ranks, {strategy}"), None, true);
                }
            }
            // Damaged copies: chunk 200's tag (in the fourth batch), and the body cut after
            // chunk 199 (a full chunk cannot end a message).
            let record = |index: usize| 56 + index * (CHUNK + 16);
            let mut tampered = v.message.clone();
            tampered[record(201) - 3] ^= 1;
            let cut = v.message[..record(200)].to_vec();
            for (what, bytes, says) in [
                ("chunk 200's tag changed", tampered, "chunk 200"),
                ("cut after chunk 199", cut, "truncated"),
            ] {
                s.write("m", &bytes);
                for ranks in [2, 3] {
                    for strategy in STRATEGIES {
                        let what = format!("{}: {what}, {ranks} ranks, {strategy}", v.name());
                        let args = case.dec(&["--backend", "mpi", "--mpi-io", strategy]);
                        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
                        args.extend(["m", "-o", "out"]);
                        let out = run_mpi(&s, ranks, &args);
                        let message = s.assert_refused(&out, &case.before, &what);
                        assert!(message.contains(says), "{what}: {message}");
                        assert!(out.stdout.is_empty(), "{what}: stdout");
                    }
                }
            }
        }
    }
}
