//! Many files in one run (issue 14): several inputs, `--files-from` (newline or NUL, odd
//! names, standard input), `--recursive` with `--output-dir`, and mixed failures: the other
//! files still succeed, nothing partial is left, the exit status is 1 with a count; the rules
//! that keep a run from writing over its own inputs, and (issue 25) from writing through links
//! below --output-dir, blocking on a FIFO among its inputs, or reading an endless file list.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use crate::common::{
    assert_success, assert_usage_error, bin, give_to_unprivileged, seeded_bytes, stderr,
    unprivileged, Scratch,
};

/// A scratch directory with a key file `k`.
fn with_key() -> Scratch {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    s
}

#[test]
fn several_inputs_each_get_their_own_container_and_come_back() {
    let s = with_key();
    let names = ["a", "b c", "empty", "big"];
    let sizes = [1, 5000, 0, 3 << 20];
    for (i, (name, size)) in names.iter().zip(sizes).enumerate() {
        s.write(name, &seeded_bytes(i as u64, size));
    }
    let mut enc = vec!["enc", "-q", "-k", "k"];
    enc.extend(names);
    assert_success(&s.run(&enc), "enc of four files");
    for name in names {
        s.remove(name);
    }
    let mut dec = vec!["dec", "-q", "-k", "k"];
    let containers: Vec<String> = names.iter().map(|n| format!("{n}.paraes")).collect();
    dec.extend(containers.iter().map(String::as_str));
    assert_success(&s.run(&dec), "dec of four files");
    for (i, (name, size)) in names.iter().zip(sizes).enumerate() {
        assert_eq!(s.read(name), seeded_bytes(i as u64, size), "{name}");
    }
}

#[test]
fn one_failing_file_does_not_stop_the_others() {
    let s = with_key();
    for i in 0..6 {
        s.write(&format!("f{i}"), &seeded_bytes(i, 10_000 * i as usize));
    }
    // f2 already has an output (no --force), f4 does not exist, f5 cannot be read: by a user
    // without privileges who owns the files (root reads f5 whatever its mode).
    s.write("f2.paraes", b"keep me");
    s.remove("f4");
    s.set_mode("f5", 0o000);
    give_to_unprivileged(&s.path(""));
    let out = unprivileged(
        &s.path(""),
        &["enc", "-q", "-k", "k", "f0", "f1", "f2", "f3", "f4", "f5"],
    )
    .output()
    .expect("paraes runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("paraes: error: f2: output f2.paraes already exists"),
        "{err}"
    );
    assert!(err.contains("paraes: error: f4: cannot open f4"), "{err}");
    assert!(err.contains("paraes: error: f5: cannot open f5"), "{err}");
    assert!(err.contains("paraes: error: 3 of 6 files failed"), "{err}");
    assert_eq!(
        err.lines().count(),
        4,
        "one line per failure and a count: {err}"
    );
    assert_eq!(s.read("f2.paraes"), b"keep me");
    assert!(!s.exists("f4.paraes"));
    assert!(!s.exists("f5.paraes"));
    s.assert_no_temporary("mixed failures");
    s.set_mode("f5", 0o600);
    for i in [0, 1, 3] {
        let back = s.run(&["dec", "-q", "-k", "k", &format!("f{i}.paraes"), "-o", "-"]);
        assert_success(&back, "dec");
        assert_eq!(back.stdout, seeded_bytes(i, 10_000 * i as usize));
    }
    // dec: a container under another key, a non-container, and a good one.
    s.key_file("other", 256, 2, true);
    s.write("x", b"x");
    assert_success(&s.run(&["enc", "-q", "-k", "other", "x"]), "enc x");
    s.write("junk.paraes", b"not a container at all");
    s.remove("f0");
    let out = s.run(&[
        "dec",
        "-q",
        "-k",
        "k",
        "x.paraes",
        "junk.paraes",
        "f0.paraes",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("2 of 3 files failed"), "{err}");
    assert!(!s.exists("junk") && s.exists("f0"), "{err}");
    assert_eq!(s.read("x"), b"x", "the existing x is untouched");
}

#[test]
fn names_come_from_a_list_with_any_bytes() {
    let s = with_key();
    let odd: [&[u8]; 4] = [b"with space", b"new\nline", b"bad\xffutf8", b"-dash"];
    for (i, name) in odd.iter().enumerate() {
        std::fs::write(
            s.path("x").with_file_name(OsStr::from_bytes(name)),
            seeded_bytes(i as u64, 100),
        )
        .unwrap();
    }
    let mut list = Vec::new();
    for name in odd {
        list.extend_from_slice(name);
        list.push(0);
    }
    s.write("list0", &list);
    let out = s.run(&["enc", "-q", "-k", "k", "--files-from", "list0", "--null"]);
    assert_success(&out, "--files-from --null");
    for name in odd {
        let mut container = name.to_vec();
        container.extend_from_slice(b".paraes");
        assert!(
            s.path("x")
                .with_file_name(OsStr::from_bytes(&container))
                .exists(),
            "{}",
            String::from_utf8_lossy(name)
        );
    }
    // Newline-separated from standard input (without the newline name; empty lines ignored).
    let out = s.run_with_stdin(
        &[
            "dec",
            "-q",
            "-k",
            "k",
            "--output-dir",
            "back",
            "--files-from",
            "-",
        ],
        &[&b"with space.paraes\nbad\xffutf8.paraes\n\n-dash.paraes\n"[..]].concat(),
    );
    assert_success(&out, "--files-from -");
    assert_eq!(s.read("back/with space"), seeded_bytes(0, 100));
    assert_eq!(s.read("back/-dash"), seeded_bytes(3, 100));
    // The list on standard input cannot share it with the key.
    let out = s.run_with_stdin(&["enc", "-k", "-", "--files-from", "-"], b"");
    assert_usage_error(&out, "list and key on stdin");
}

#[test]
fn recursive_runs_mirror_the_tree_and_skip_links_and_special_files() {
    let s = with_key();
    std::fs::create_dir_all(s.path("tree/sub/deeper")).unwrap();
    s.write("tree/top", &seeded_bytes(1, 10));
    s.write("tree/sub/deeper/leaf", &seeded_bytes(2, 70_000));
    s.write("tree/sub/old.paraes", b"already a container");
    std::os::unix::fs::symlink("/etc/passwd", s.path("tree/link")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(s.path("tree/fifo"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let out = s.run(&[
        "enc",
        "-k",
        "k",
        "--recursive",
        "tree",
        "--output-dir",
        "enc",
    ]);
    let err = assert_success(&out, "enc --recursive");
    assert!(err.contains("skipped 1 symbolic link"), "{err}");
    assert!(err.contains("skipped 1 FIFO"), "{err}");
    assert!(
        err.contains("skipped 1 file(s) inside directories already ending in .paraes"),
        "{err}"
    );
    assert!(s.exists("enc/tree/top.paraes") && s.exists("enc/tree/sub/deeper/leaf.paraes"));
    assert!(!s.exists("enc/tree/link.paraes") && !s.exists("enc/tree/fifo.paraes"));
    let out = s.run(&[
        "dec",
        "-q",
        "-k",
        "k",
        "--recursive",
        "enc",
        "--output-dir",
        "dec",
    ]);
    assert_success(&out, "dec --recursive");
    assert_eq!(
        s.read("dec/enc/tree/sub/deeper/leaf"),
        seeded_bytes(2, 70_000)
    );
    // Without --recursive a directory is one failed input.
    let out = s.run(&["enc", "-q", "-k", "k", "tree", "tree/top", "--force"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("tree is a directory"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_run_never_writes_over_its_own_inputs() {
    let s = with_key();
    s.write("a", b"a");
    s.write("a.paraes", b"precious");
    std::fs::create_dir(s.path("d")).unwrap();
    s.write("d/a", b"other a");
    // a -> a.paraes, which is also an input.
    let out = s.run(&["enc", "-q", "-k", "k", "--force", "a", "a.paraes"]);
    let err = crate::common::assert_error(&out, "output is an input");
    assert!(err.contains("is the input a.paraes of this run"), "{err}");
    assert_eq!(s.read("a.paraes"), b"precious");
    // Two inputs, one output name.
    let out = s.run(&["enc", "-q", "-k", "k", "a", "d/a", "--output-dir", "o"]);
    let err = crate::common::assert_error(&out, "two inputs, one output");
    assert!(err.contains("would both be written to o/a.paraes"), "{err}");
    assert!(!s.exists("o"));
    for (args, what) in [
        (
            vec!["enc", "-k", "k", "a", "d/a", "-o", "x"],
            "-o with two inputs",
        ),
        (
            vec!["enc", "-k", "k", "--raw", "ctr", "a", "d/a"],
            "--raw with two inputs",
        ),
        (vec!["enc", "-k", "k", "a", "-"], "stdin among inputs"),
        (
            vec!["dec", "-k", "k", "a.paraes", "b.paraes", "--range", "0..1"],
            "--range with two inputs",
        ),
    ] {
        assert_usage_error(&s.run(&args), what);
    }
}

#[test]
fn hundreds_of_small_files_run_in_one_process() {
    let s = with_key();
    std::fs::create_dir(s.path("many")).unwrap();
    for i in 0..300 {
        s.write(
            &format!("many/{i:03}"),
            &seeded_bytes(i, (i as usize * 37) % 9000),
        );
    }
    let out = Command::new(bin())
        .args([
            "enc",
            "-k",
            "k",
            "--recursive",
            "many",
            "--output-dir",
            "c",
            "--stats",
            "json",
            "-q",
        ])
        .current_dir(s.path(""))
        .output()
        .unwrap();
    let err = assert_success(&out, "300 files");
    let stats: serde_json::Value = serde_json::from_str(err.trim()).expect(&err);
    assert_eq!(stats["files"], 300);
    assert_eq!(stats["files_failed"], 0);
    let out = s.run(&["verify", "-q", "-k", "k", "--recursive", "c"]);
    assert_success(&out, "verify 300");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_derived_output_name_is_never_written_through_a_link_or_into_a_fifo() {
    let s = with_key();
    std::fs::create_dir(s.path("t")).unwrap();
    s.write("t/report", b"top secret plaintext");
    s.write("t/other", b"other");
    assert_success(
        &s.run(&["enc", "-q", "-k", "k", "t/report", "t/other"]),
        "enc",
    );
    s.write("elsewhere", b"not to be overwritten");
    // Someone with write access to t/ plants links where dec's outputs will go.
    s.remove("t/report");
    std::os::unix::fs::symlink(s.path("elsewhere"), s.path("t/report")).unwrap();
    s.remove("t/other");
    let fifo = Command::new("mkfifo")
        .arg(s.path("t/other"))
        .status()
        .unwrap();
    assert!(fifo.success());
    for force in [false, true] {
        let mut args = vec!["dec", "-q", "-k", "k", "t/report.paraes", "t/other.paraes"];
        if force {
            args.push("--force");
        }
        let out = s.run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("t/report exists and is not a regular file"),
            "{err}"
        );
        assert!(
            err.contains("t/other exists and is not a regular file"),
            "{err}"
        );
        assert_eq!(s.read("elsewhere"), b"not to be overwritten");
    }
    // The same for one file: only a name the user typed is written through.
    let out = s.run(&["dec", "-q", "-k", "k", "t/report.paraes"]);
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
    assert_success(
        &s.run(&[
            "dec",
            "-q",
            "-k",
            "k",
            "t/report.paraes",
            "-o",
            "t/report",
            "--force",
        ]),
        "typed -o",
    );
    assert_eq!(s.read("elsewhere"), b"top secret plaintext");
}

#[test]
fn the_file_list_and_empty_trees_are_handled() {
    let s = with_key();
    std::fs::create_dir(s.path("d")).unwrap();
    s.write("d/list", b"d/list\n");
    // d/list -> d/list.paraes is fine; but a dec whose output would be the list is refused.
    s.write("d/x", b"x");
    assert_success(&s.run(&["enc", "-q", "-k", "k", "d/x"]), "enc");
    std::fs::copy(s.path("d/x.paraes"), s.path("d/list.paraes")).unwrap();
    s.write("names", b"d/list.paraes\n");
    std::fs::rename(s.path("names"), s.path("d/list")).unwrap();
    let out = s.run(&["dec", "-q", "-k", "k", "--force", "--files-from", "d/list"]);
    let err = crate::common::assert_error(&out, "list as output");
    assert!(err.contains("is the file list this run reads"), "{err}");
    assert_eq!(s.read("d/list"), b"d/list.paraes\n");
    // Nothing to verify is not a success.
    std::fs::create_dir(s.path("empty")).unwrap();
    let err = crate::common::assert_error(
        &s.run(&["verify", "-k", "k", "--recursive", "empty"]),
        "empty tree",
    );
    assert!(err.contains("no containers to check"), "{err}");
    // Options a container cannot take are refused once for the run, not once per file: a
    // container has no ECB (and --raw ecb, which has, takes one file at a time).
    for i in 0..5 {
        s.write(&format!("e{i}"), b"e");
    }
    let files = ["e0", "e1", "e2", "e3", "e4"];
    let before = s.names();
    let out = s.run(&[&["enc", "-k", "k", "--mode", "ecb"][..], &files].concat());
    let message = assert_usage_error(&out, "--mode ecb with five files");
    assert!(message.contains("no ECB"), "{message}");
    assert_eq!(s.names(), before, "--mode ecb: the directory changed");
    // A warning comes once per run, not once per file: a key file other users can read.
    s.set_mode("k", 0o644);
    let out = s.run(&[&["enc", "-k", "k"][..], &files].concat());
    s.set_mode("k", 0o600);
    let err = assert_success(&out, "a readable key file, five files");
    assert_eq!(err.matches("other users").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for name in files {
        let back = s.run(&["dec", "-q", "-k", "k", &format!("{name}.paraes"), "-o", "-"]);
        assert_success(&back, name);
        assert_eq!(back.stdout, b"e", "{name}");
    }
}

/// As a user without privileges who owns the tree (root lists every directory).
#[test]
fn an_unlistable_directory_is_one_failure_and_the_walk_goes_on() {
    let s = with_key();
    std::fs::create_dir_all(s.path("d/locked")).unwrap();
    s.write("d/a", b"a");
    s.write("d/locked/b", b"b");
    s.set_mode("d/locked", 0o000);
    give_to_unprivileged(&s.path(""));
    let out = unprivileged(&s.path(""), &["enc", "-q", "-k", "k", "--recursive", "d"])
        .output()
        .expect("paraes runs");
    s.set_mode("d/locked", 0o700);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("d/locked: cannot list this directory"),
        "{err}"
    );
    assert!(err.contains("1 of 2 files failed"), "{err}");
    assert!(s.exists("d/a.paraes"));
}

#[test]
fn a_refused_name_in_a_run_of_several_gives_advice_that_run_accepts() {
    let s = with_key();
    s.write("a", b"first");
    s.write("b", b"second");
    assert_success(&s.run(&["enc", "-q", "-k", "k", "a", "b"]), "enc");
    s.write(".paraes", &s.read("a.paraes"));
    s.write("plain.copy", &s.read("a.paraes"));
    s.remove("a");
    s.remove("b");
    std::fs::create_dir(s.path("b")).unwrap();
    s.write("x", b"to encrypt");
    // A device, a container without a stem, a name without .paraes, a derived name that is a
    // directory: each is refused, and its advice is not the -o that a run of several refuses.
    let cases: [(&[&str], &str); 4] = [
        (&["enc", "-q", "-k", "k", "/dev/null", "x"], "a device"),
        (
            &["dec", "-q", "-k", "k", ".paraes", "a.paraes"],
            "leaves no file name",
        ),
        (
            &["dec", "-q", "-k", "k", "plain.copy", "a.paraes"],
            "does not end in .paraes",
        ),
        (
            &["dec", "-q", "-k", "k", "b.paraes", "a.paraes"],
            "not a regular file",
        ),
    ];
    for (args, what) in cases {
        for done in ["a", "x.paraes"] {
            if s.exists(done) {
                s.remove(done);
            }
        }
        let out = s.run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        let line = err
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("{what}: {err}"));
        assert!(!line.contains("give -o"), "{line}");
        assert!(
            line.contains("on its own with -o PATH") || line.contains("--output-dir DIR"),
            "{line}"
        );
        assert!(err.contains("1 of 2 files failed"), "{what}: {err}");
    }
    // An --output-dir that is a file: said in those words, with what to do.
    s.write("not-a-dir", b"keep");
    let out = s.run(&["enc", "-q", "-k", "k", "x", "--output-dir", "not-a-dir"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not-a-dir is a file, not a directory; give --output-dir a directory"),
        "{err}"
    );
    assert_eq!(s.read("not-a-dir"), b"keep");
    // The advice works: the stemless container alone, with -o.
    s.remove("a");
    assert_success(
        &s.run(&["dec", "-q", "-k", "k", ".paraes", "-o", "a"]),
        "alone with -o",
    );
    assert_eq!(s.read("a"), b"first");
}

#[test]
fn output_dir_components_that_are_links_are_never_written_through() {
    let s = with_key();
    std::fs::create_dir_all(s.path("bk/sub")).unwrap();
    s.write("bk/x", b"x");
    s.write("bk/sub/y", b"y");
    s.write("bk/sub/z", b"z");
    assert_success(
        &s.run(&["enc", "-q", "-k", "k", "--recursive", "bk"]),
        "enc",
    );
    // Someone who can write into out/ plants out/bk -> ../victim before the run.
    std::fs::create_dir_all(s.path("out")).unwrap();
    std::fs::create_dir(s.path("victim")).unwrap();
    std::os::unix::fs::symlink("../victim", s.path("out/bk")).unwrap();
    let out = s.run(&[
        "dec",
        "-q",
        "-k",
        "k",
        "--recursive",
        "bk",
        "--output-dir",
        "out",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        std::fs::read_dir(s.path("victim"))
            .unwrap()
            .next()
            .is_none(),
        "written through the link: {err}"
    );
    assert!(
        err.contains("out/bk is a symbolic link: paraes does not write through links below --output-dir; remove it or choose another --output-dir"),
        "{err}"
    );
    assert!(err.contains("3 of 3 files failed"), "{err}");
    // A link deeper down fails only the files below it; the run goes on with the others.
    s.remove("out/bk");
    std::fs::create_dir(s.path("out/bk")).unwrap();
    std::os::unix::fs::symlink("../../victim", s.path("out/bk/sub")).unwrap();
    let out = s.run(&[
        "dec",
        "-q",
        "-k",
        "k",
        "--recursive",
        "bk",
        "--output-dir",
        "out",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("out/bk/sub is a symbolic link"), "{err}");
    assert!(err.contains("2 of 3 files failed"), "{err}");
    assert_eq!(s.read("out/bk/x"), b"x");
    assert!(std::fs::read_dir(s.path("victim"))
        .unwrap()
        .next()
        .is_none());
    // The --output-dir itself may be a link: the user named it.
    std::os::unix::fs::symlink("victim", s.path("named")).unwrap();
    let out = s.run(&[
        "dec",
        "-q",
        "-k",
        "k",
        "--recursive",
        "bk",
        "--output-dir",
        "named",
    ]);
    assert_success(&out, "--output-dir a link");
    assert_eq!(s.read("victim/bk/sub/z"), b"z");
}

#[test]
fn a_fifo_among_several_inputs_is_refused_without_blocking_the_run() {
    let s = with_key();
    s.write("a", b"first");
    s.write("b", b"second");
    let made = Command::new("mkfifo").arg(s.path("fifo")).status().unwrap();
    assert!(made.success());
    // No writer ever opens the FIFO: opening it for reading would wait forever.
    let out = s.bash(r#"timeout 20 "$PARAES" enc -q -k k a fifo b"#);
    let err = stderr(&out);
    assert_ne!(
        out.status.code(),
        Some(124),
        "the run blocked on the FIFO: {err}"
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("paraes: error: fifo: fifo is not a regular file (a FIFO): many-file runs take regular files only; give it alone to stream it"),
        "{err}"
    );
    assert!(err.contains("1 of 3 files failed"), "{err}");
    assert!(s.exists("a.paraes") && s.exists("b.paraes") && !s.exists("fifo.paraes"));
    // verify too.
    let out = s.bash(r#"timeout 20 "$PARAES" verify -k k a.paraes fifo b.paraes"#);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("paraes: error: fifo: fifo is not a regular file (a FIFO)"),
        "{err}"
    );
    assert!(err.contains("1 of 3 files failed"), "{err}");
    // Files are checked side by side: their lines come in any order.
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    assert_eq!(lines, ["a.paraes: OK", "b.paraes: OK"]);
    // With --output-dir, a device is refused the same way (never read without end).
    let out = s.bash(r#"timeout 20 "$PARAES" enc -q -k k a /dev/zero --output-dir o"#);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/dev/zero is not a regular file (a device)"),
        "{err}"
    );
    assert!(s.exists("o/a.paraes") && !s.exists("o/zero.paraes"));
    // One FIFO alone is still a stream.
    let out = s.bash(r#"(printf 'streamed' > fifo &); timeout 20 "$PARAES" enc -q -k k fifo"#);
    assert_success(&out, "one FIFO alone");
    let back = s.run(&["dec", "-q", "-k", "k", "fifo.paraes", "-o", "-"]);
    assert_success(&back, "dec");
    assert_eq!(back.stdout, b"streamed");
}

#[test]
fn an_endless_file_list_fails_fast_in_bounded_memory() {
    let s = with_key();
    // 2 GiB of address space: far more than 64 MiB of names needs, far less than /dev/zero.
    for (list, shell) in [
        (
            "/dev/zero",
            r#"ulimit -v 2097152; timeout 20 "$PARAES" enc -q -k k --files-from /dev/zero"#,
        ),
        (
            "-",
            r#"ulimit -v 2097152; timeout 20 "$PARAES" enc -q -k k --files-from - --null < /dev/zero"#,
        ),
    ] {
        let out = s.bash(shell);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{list}: {err}");
        assert!(
            err.contains(&format!(
                "--files-from {list}: more than 64 MiB of names: split the list"
            )),
            "{err}"
        );
    }
}
