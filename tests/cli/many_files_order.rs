//! Many-file runs (issue 39): what a run says about each file comes in the order the inputs
//! were given, however the work was spread (small files run side by side, large ones after
//! them); `--files-from` names keep their whole path below `--output-dir` (as `rsync
//! --files-from` does) and a name that could climb out of it is refused; two inputs that would
//! land on one output are refused before anything is written, also through `..` or a link; a
//! per-file warning (an ignored stanza slot) comes in its file's place too.

use std::process::Output;

use crate::common::{assert_success, assert_usage_error, seeded_bytes, stderr, Scratch};

/// A scratch directory with a key file `k`.
fn with_key() -> Scratch {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    s
}

/// Runs `paraes COMMAND -q -k k --files-from list --output-dir DIR` in the scratch directory.
trait ListedRun {
    fn run_listed(&self, command: &str, dir: &str) -> Output;
}

impl ListedRun for Scratch {
    fn run_listed(&self, command: &str, dir: &str) -> Output {
        self.run(&[
            command,
            "-q",
            "-k",
            "k",
            "--files-from",
            "list",
            "--output-dir",
            dir,
        ])
    }
}

/// Files of very different sizes (empty to 3 MiB: some run side by side, some through the
/// pipeline after them), named so that neither name nor size order is the input order.
const FILES: [(&str, usize); 10] = [
    ("m-big", 3 << 20),
    ("c-tiny", 1),
    ("x-mid", 900 << 10),
    ("a-empty", 0),
    ("q-large", (2 << 20) + 5),
    ("b-small", 3000),
    ("z-medium", 500 << 10),
    ("d-edge", 1 << 20),
    ("k-few", 17),
    ("e-over", (1 << 20) + 1),
];

/// The lines of standard output.
fn stdout_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn verify_reports_in_the_order_the_files_were_given() {
    let s = with_key();
    for (i, (name, size)) in FILES.iter().enumerate() {
        s.write(name, &seeded_bytes(i as u64, *size));
    }
    let mut enc = vec!["enc", "-q", "-k", "k"];
    enc.extend(FILES.iter().map(|(name, _)| *name));
    assert_success(&s.run(&enc), "enc");
    let containers: Vec<String> = FILES.iter().map(|(n, _)| format!("{n}.paraes")).collect();
    let expected: Vec<String> = containers.iter().map(|c| format!("{c}: OK")).collect();
    let mut verify = vec!["verify", "-k", "k"];
    verify.extend(containers.iter().map(String::as_str));
    for run in 0..4 {
        let out = s.run(&verify);
        assert_success(&out, "verify");
        assert_eq!(stdout_lines(&out), expected, "run {run}");
    }
    // The same order from a list, and reversed when the list is.
    s.write("list", containers.join("\n").as_bytes());
    let out = s.run(&["verify", "-k", "k", "--files-from", "list"]);
    assert_eq!(stdout_lines(&out), expected);
    let reversed: Vec<String> = containers.iter().rev().cloned().collect();
    s.write("list", reversed.join("\n").as_bytes());
    let out = s.run(&["verify", "-k", "k", "--files-from", "list"]);
    let expected: Vec<String> = expected.into_iter().rev().collect();
    assert_eq!(stdout_lines(&out), expected);
}

#[test]
fn enc_and_dec_report_failures_in_the_order_the_files_were_given() {
    let s = with_key();
    for (i, (name, size)) in FILES.iter().enumerate() {
        s.write(name, &seeded_bytes(i as u64, *size));
        // Every other file already has its output (no --force): it fails, the others run.
        if i % 2 == 0 {
            s.write(&format!("{name}.paraes"), b"keep me");
        }
    }
    let failing: Vec<&str> = FILES.iter().step_by(2).map(|(n, _)| *n).collect();
    let expected: Vec<String> = failing
        .iter()
        .map(|n| format!("paraes: error: {n}: output {n}.paraes already exists"))
        .collect();
    let mut enc = vec!["enc", "-q", "-k", "k"];
    enc.extend(FILES.iter().map(|(name, _)| *name));
    for run in 0..3 {
        let out = s.run(&enc);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let said: Vec<&str> = err.lines().collect();
        assert_eq!(said.len(), failing.len() + 1, "{err}");
        for (line, want) in said.iter().zip(&expected) {
            assert!(line.starts_with(want.as_str()), "run {run}: {err}");
        }
        assert!(
            said[failing.len()].contains("5 of 10 files failed"),
            "{err}"
        );
        for (name, _) in FILES.iter().skip(1).step_by(2) {
            s.remove(&format!("{name}.paraes"));
        }
    }
    // dec: the same files with the key of another, in input order too.
    s.key_file("other", 256, 2, true);
    let mut dec = vec!["dec", "-q", "-k", "other", "-f", "--output-dir", "back"];
    let containers: Vec<String> = FILES
        .iter()
        .skip(1)
        .step_by(2)
        .map(|(n, _)| format!("{n}.paraes"))
        .collect();
    let mut enc = vec!["enc", "-q", "-k", "k"];
    enc.extend(FILES.iter().skip(1).step_by(2).map(|(n, _)| *n));
    assert_success(&s.run(&enc), "enc");
    dec.extend(containers.iter().map(String::as_str));
    let out = s.run(&dec);
    let err = stderr(&out);
    let named: Vec<&str> = err
        .lines()
        .filter_map(|line| line.strip_prefix("paraes: error: "))
        .filter_map(|rest| rest.split(": ").next())
        .filter(|name| name.ends_with(".paraes"))
        .collect();
    assert_eq!(named, containers, "{err}");
}

#[test]
fn files_from_names_are_mirrored_below_the_output_dir() {
    let s = with_key();
    std::fs::create_dir_all(s.path("data/x")).unwrap();
    std::fs::create_dir_all(s.path("data/y")).unwrap();
    s.write("data/x/c.txt", b"x's c");
    s.write("data/y/c.txt", b"y's c");
    // `./` is dropped, as find(1) writes it.
    s.write("list", b"data/x/c.txt\n./data/y/c.txt\n");
    let out = s.run_listed("enc", "out");
    assert_success(&out, "enc --files-from --output-dir");
    assert!(s.exists("out/data/x/c.txt.paraes") && s.exists("out/data/y/c.txt.paraes"));
    s.write(
        "list",
        b"out/data/x/c.txt.paraes\nout/data/y/c.txt.paraes\n",
    );
    let out = s.run_listed("dec", "back");
    assert_success(&out, "dec --files-from --output-dir");
    assert_eq!(s.read("back/out/data/x/c.txt"), b"x's c");
    assert_eq!(s.read("back/out/data/y/c.txt"), b"y's c");
    // An absolute name lands below the output directory without its leading /.
    let absolute = s.path("data/x/c.txt");
    s.write("list", absolute.as_os_str().as_encoded_bytes());
    let out = s.run_listed("enc", "abs");
    assert_success(&out, "an absolute name");
    let below = absolute.strip_prefix("/").unwrap().to_str().unwrap();
    assert!(s.exists(&format!("abs/{below}.paraes")), "{below}");
    // Command-line inputs keep their file name (as cp does).
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "k",
        "data/x/c.txt",
        "--output-dir",
        "flat",
    ]);
    assert_success(&out, "a command-line input");
    assert!(s.exists("flat/c.txt.paraes"));
}

#[test]
fn a_listed_name_that_climbs_out_of_the_output_dir_is_refused() {
    let s = with_key();
    std::fs::create_dir_all(s.path("data/x")).unwrap();
    s.write("data/x/c.txt", b"c");
    s.write("data/d.txt", b"d");
    for name in ["data/x/../d.txt", "../outside/c.txt"] {
        s.write("list", format!("data/x/c.txt\n{name}\n").as_bytes());
        let before = s.names();
        let out = s.run_listed("enc", "out");
        let message = assert_usage_error(&out, name);
        assert!(
            message.contains("'..'") && message.contains(name),
            "{message}"
        );
        assert_eq!(s.names(), before, "{name}: something was written");
        assert!(!s.exists("out"));
    }
    // Without --output-dir the outputs go beside the inputs: `..` is fine.
    s.write("list", b"data/x/../d.txt\n");
    assert_success(
        &s.run(&["enc", "-q", "-k", "k", "--files-from", "list"]),
        "no dir",
    );
    assert!(s.exists("data/d.txt.paraes"));
}

#[test]
fn two_inputs_that_land_on_one_output_refuse_the_run_before_any_write() {
    let s = with_key();
    s.write("a", b"a");
    std::fs::create_dir_all(s.path("sub")).unwrap();
    std::fs::create_dir_all(s.path("data/x")).unwrap();
    s.write("data/x/c.txt", b"c");
    std::os::unix::fs::symlink(".", s.path("here")).unwrap();
    s.write("list", b"data/x/c.txt\n");
    let runs: [&[&str]; 4] = [
        &["enc", "-f", "-k", "k", "a", "sub/../a"],
        &["enc", "-f", "-k", "k", "a", "here/a"],
        // --recursive and a listed name both reach out/data/x/c.txt.paraes.
        &[
            "enc",
            "-f",
            "-k",
            "k",
            "--recursive",
            "data",
            "--files-from",
            "list",
            "--output-dir",
            "out",
        ],
        &["enc", "-f", "-k", "k", "data/x/c.txt", "data/x/c.txt"],
    ];
    for args in runs {
        let before = s.names();
        let out = s.run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("would both be written to"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(s.names(), before, "{args:?} wrote something");
        assert!(!s.exists("a.paraes") && !s.exists("out"));
        assert!(!s.exists("data/x/c.txt.paraes"));
    }
    // dec too.
    assert_success(&s.run(&["enc", "-q", "-k", "k", "a"]), "enc a");
    let before = s.names();
    let out = s.run(&["dec", "-f", "-k", "k", "a.paraes", "sub/../a.paraes"]);
    assert!(
        stderr(&out).contains("would both be written to"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.names(), before);
}

#[test]
fn dec_says_each_files_warning_in_its_place() {
    // v2 files with a planted slot that --allow-unverified-slot lets through: each gets a
    // warning line, from whichever worker opened it.
    let s = crate::v2_compat::scratch();
    let me = String::from_utf8(s.read("x25519.recipient"))
        .unwrap()
        .trim()
        .to_owned();
    let planted = paraes_core::fuzzing::plant_slot(
        &s.read("ctr-multi.paraes"),
        1,
        &[crate::v2_compat::public(&me)],
        7,
    );
    for name in ["v1.paraes", "v3.paraes", "v5.paraes"] {
        s.write(name, &planted);
    }
    // A large file the identity does not open: it runs after the small ones, and fails.
    s.key_file("other", 256, 9, true);
    s.write("big", &seeded_bytes(9, 2 << 20));
    assert_success(&s.run(&["enc", "-q", "-k", "other", "big"]), "enc big");
    let given = [
        "big.paraes",
        "v1.paraes",
        "missing.paraes",
        "v3.paraes",
        "v5.paraes",
    ];
    let mut dec = vec![
        "dec",
        "-f",
        "-i",
        "x25519.identity",
        "--allow-unverified-slot",
        "--output-dir",
        "out",
    ];
    dec.extend(given);
    for run in 0..3 {
        let out = s.run(&dec);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let named: Vec<&str> = err
            .lines()
            .filter_map(|line| {
                line.strip_prefix("paraes: warning: ")
                    .or_else(|| line.strip_prefix("paraes: error: "))
            })
            .filter_map(|rest| rest.split(": ").next())
            .filter(|name| name.ends_with(".paraes"))
            .collect();
        assert_eq!(named, given, "run {run}: {err}");
    }
}
