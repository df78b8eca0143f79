//! Every way to open a v2 container from the command line: key files, a passphrase, X25519 and
//! post-quantum recipients (from -r and -R), identity files from `keygen`, mixes; wrong
//! identities fail cleanly; `rekey` swaps who can open a file without touching its body.

use crate::common::{
    assert_error, assert_success, assert_usage_error, seeded_bytes, Scratch, HEADER_LEN,
};

/// An identity file `name` (X25519, or hybrid with `pq`) and its recipient.
pub(crate) fn identity(s: &Scratch, name: &str, pq: bool) -> String {
    let kind = if pq { "--pq" } else { "--x25519" };
    let out = s.run(&["keygen", kind, "-o", name]);
    let err = assert_success(&out, "keygen identity");
    assert_eq!(s.mode(name) & 0o777, 0o600, "identity files are private");
    let printed = err
        .lines()
        .find_map(|l| l.strip_prefix("recipient: "))
        .expect("keygen prints the recipient on stderr")
        .to_string();
    let out = s.run(&["keygen", "-y", name]);
    assert_success(&out, "keygen -y");
    let recipient = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(recipient, printed);
    assert!(recipient.starts_with(if pq { "paraespq1" } else { "paraes1" }));
    recipient
}

pub(crate) fn opens(s: &Scratch, file: &str, unlock: &[&str]) -> Option<Vec<u8>> {
    let out = s.run(&[&["dec", "-q", file, "-o", "-"][..], unlock].concat());
    out.status.success().then_some(out.stdout)
}

#[test]
fn every_stanza_kind_and_mixes_open_from_the_cli() {
    let s = Scratch::new();
    let plain = seeded_bytes(5, 10_000);
    s.write("f", &plain);
    s.key_file("team.key", 256, 1, true);
    s.key_file("other.key", 128, 2, true);
    s.secret("pass", b"a long enough passphrase\n");
    s.set_mode("pass", 0o600);
    let alice = identity(&s, "alice.id", false);
    let bob = identity(&s, "bob.id", true);
    let carol = identity(&s, "carol.id", false);
    s.write("list", format!("# the team\n{bob}\n\n{carol}\n").as_bytes());
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "team.key",
        "-r",
        &alice,
        "-R",
        "list",
        "--passphrase-file",
        "pass",
        "f",
    ]);
    assert_success(&out, "enc to a mix");
    let info = String::from_utf8(s.run(&["info", "f.paraes"]).stdout).unwrap();
    assert!(info.contains("slot 0:       generation 1: key file, passphrase (Argon2id m=65536 KiB t=3 p=4), X25519 recipient, ML-KEM-768 + X25519 recipient, X25519 recipient"), "{info}");
    for unlock in [
        &["-k", "team.key"][..],
        &["-i", "alice.id"],
        &["-i", "bob.id"],
        &["-i", "carol.id"],
        &["--passphrase-file", "pass"],
        &["-i", "alice.id", "-i", "bob.id"],
    ] {
        assert_eq!(
            opens(&s, "f.paraes", unlock).as_deref(),
            Some(&plain[..]),
            "{unlock:?}"
        );
    }
    let _ = identity(&s, "mallory.id", false);
    for wrong in [&["-k", "other.key"][..], &["-i", "mallory.id"]] {
        let out = s.run(&[&["dec", "-q", "f.paraes", "-o", "-"][..], wrong].concat());
        let err = assert_error(&out, "wrong identity");
        assert!(err.contains("none of the given"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn bad_recipients_and_identities_are_refused_in_one_line() {
    let s = Scratch::new();
    s.write("f", b"data");
    let alice = identity(&s, "alice.id", false);
    let mut typo = alice.clone().into_bytes();
    typo[12] = if typo[12] == b'q' { b'p' } else { b'q' };
    let typo = String::from_utf8(typo).unwrap();
    for (args, needle, status) in [
        (
            vec!["enc", "-r", typo.as_str(), "f"],
            "not a paraes recipient",
            1,
        ),
        (vec!["enc", "-i", "alice.id", "f"], "recipients", 2),
        (vec!["enc", "-k", "alice.id", "f"], "identity, not a key", 1),
        (
            vec!["dec", "-r", alice.as_str(), "f.paraes"],
            "identities",
            2,
        ),
    ] {
        let out = s.run(&args);
        let err = match status {
            1 => assert_error(&out, &format!("{args:?}")),
            _ => assert_usage_error(&out, &format!("{args:?}")),
        };
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!s.exists("f.paraes"), "nothing written");
    }
}

/// The all-zero post-quantum recipient of issue 25: 1,216 zero bytes with a valid checksum. A
/// file sealed to it would open with no secret at all.
fn all_zero_pq_recipient() -> String {
    format!("paraespq1{}dmnwst", "q".repeat(1946))
}

#[test]
fn a_degenerate_recipient_is_refused_and_nothing_written() {
    let s = Scratch::new();
    s.write("f", b"data");
    let zero = all_zero_pq_recipient();
    s.write("list", format!("{zero}\n").as_bytes());
    let before = s.names();
    for args in [&["enc", "-r", &zero, "f"][..], &["enc", "-R", "list", "f"]] {
        let out = s.run(args);
        let err = s.assert_refused(&out, &before, "an all-zero pq recipient");
        assert!(err.contains("degenerate"), "{err}");
    }
}

#[test]
fn rekey_swaps_who_can_open_and_keeps_the_body() {
    let s = Scratch::new();
    let plain = seeded_bytes(6, 50_000);
    s.write("f", &plain);
    s.key_file("old.key", 256, 3, true);
    s.key_file("new.key", 256, 4, true);
    assert_success(&s.run(&["enc", "-q", "-k", "old.key", "f"]), "enc");
    let before = s.read("f.paraes");
    let bob = identity(&s, "bob.id", false);
    // Replacing every stanza drops the one that opened the file: --force says that is meant.
    let out = s.run(&[
        "rekey",
        "-k",
        "old.key",
        "--new-key-file",
        "new.key",
        "--new-recipient",
        &bob,
        "--force",
        "f.paraes",
    ]);
    let err = assert_success(&out, "rekey");
    assert!(err.contains("in place"), "{err}");
    assert!(
        err.contains("dropped key-file (it opened the file)"),
        "{err}"
    );
    let after = s.read("f.paraes");
    assert_eq!(after.len(), before.len());
    assert!(
        after[HEADER_LEN..] == before[HEADER_LEN..],
        "body bytes unchanged"
    );
    assert!(
        opens(&s, "f.paraes", &["-k", "old.key"]).is_none(),
        "the old key still opens"
    );
    assert_eq!(
        opens(&s, "f.paraes", &["-k", "new.key"]).as_deref(),
        Some(&plain[..])
    );
    assert_eq!(
        opens(&s, "f.paraes", &["-i", "bob.id"]).as_deref(),
        Some(&plain[..])
    );

    // A wrong current key changes nothing.
    let out = s.run(&[
        "rekey",
        "-k",
        "old.key",
        "--new-key-file",
        "old.key",
        "f.paraes",
    ]);
    assert_error(&out, "rekey with a wrong key");
    assert_eq!(s.read("f.paraes"), after);

    // New stanzas too large for the header: rewritten, body copied unchanged.
    let pq: Vec<String> = (0..3)
        .map(|i| identity(&s, &format!("pq{i}.id"), true))
        .collect();
    let mut args = vec!["rekey", "--force", "-i", "bob.id"];
    for r in &pq {
        args.extend(["--new-recipient", r.as_str()]);
    }
    args.push("f.paraes");
    let err = assert_success(&s.run(&args), "rekey to three pq recipients");
    assert!(err.contains("larger header"), "{err}");
    let grown = s.read("f.paraes");
    assert!(grown[grown.len() - (before.len() - HEADER_LEN)..] == before[HEADER_LEN..]);
    assert_eq!(
        opens(&s, "f.paraes", &["-i", "pq2.id"]).as_deref(),
        Some(&plain[..])
    );
    assert!(opens(&s, "f.paraes", &["-i", "bob.id"]).is_none());
    assert_eq!(s.mode("f.paraes") & 0o777, 0o600, "mode kept");
    assert!(
        s.names().iter().all(|n| !n.contains("rekey")),
        "no temporary left: {:?}",
        s.names()
    );
}

#[test]
fn raw_ctr_without_iv_draws_and_prints_one() {
    let s = Scratch::new();
    s.write("f", &seeded_bytes(8, 1000));
    s.key_file("k", 128, 8, true);
    let out = s.run(&["enc", "--raw", "ctr", "-k", "k", "f", "-o", "f.ctr"]);
    let err = assert_success(&out, "raw enc without --iv");
    let iv = err
        .lines()
        .find_map(|l| l.strip_prefix("iv: "))
        .expect("the IV on stderr")
        .to_string();
    assert_eq!(iv.len(), 32);
    let out = s.run(&[
        "dec", "--raw", "ctr", "-k", "k", "--iv", &iv, "f.ctr", "-o", "-",
    ]);
    assert_success(&out, "raw dec");
    assert_eq!(out.stdout, s.read("f"));
    let out = s.run(&[
        "enc",
        "--raw",
        "ctr",
        "-k",
        "k",
        "--iv",
        "00000000000000000000000000000000",
        "f",
        "-o",
        "g.ctr",
    ]);
    let err = assert_success(&out, "raw enc with a zero IV");
    assert!(err.contains("hand-picked"), "{err}");
}

/// The post-quantum mixing warning comes from the core's seal as a value, and the CLI says it
/// once per run: a run of several files sealed for the same mixed recipients says it once,
/// `-q` silences it, and post-quantum recipients alone get none.
#[test]
fn mixing_post_quantum_and_classical_recipients_warns_once_per_run() {
    let s = Scratch::new();
    let pq = identity(&s, "pq.id", true);
    let classical = identity(&s, "x.id", false);
    for name in ["a", "b", "c"] {
        s.write(name, &seeded_bytes(7, 1000));
    }
    let warning = "only as safe as those";
    let out = s.run(&["enc", "-r", &pq, "-r", &classical, "a", "b", "c"]);
    let err = assert_success(&out, "enc to mixed recipients");
    assert_eq!(err.matches(warning).count(), 1, "{err}");
    let out = s.run(&[
        "rekey",
        "a.paraes",
        "-i",
        "pq.id",
        "--new-recipient",
        &pq,
        "--new-recipient",
        &classical,
    ]);
    let err = assert_success(&out, "rekey to mixed recipients");
    assert_eq!(err.matches(warning).count(), 1, "{err}");
    let out = s.run(&[
        "enc", "-q", "-r", &pq, "-r", &classical, "a", "-o", "q.paraes",
    ]);
    assert!(!assert_success(&out, "enc -q").contains(warning));
    let out = s.run(&["enc", "-r", &pq, "a", "-o", "pq.paraes"]);
    assert!(!assert_success(&out, "enc to pq alone").contains(warning));
}
