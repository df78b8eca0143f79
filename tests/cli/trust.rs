//! The findings of issue 25's hostile review of format v2, end to end through the binary, on
//! format v3 files (what paraes writes; the v2 cases that still matter for old files are in
//! tests/cli/v2_compat.rs): a planted idle slot (generation 2^64-1 or 2^64-2, or a valid slot for
//! the victim's public recipient) never lets a rekey destroy the file, and is ignored and named
//! (issue 35: the key commitment decides, so it no longer blocks the file); two slots that wrap
//! different file keys (one file, two authenticated plaintexts) show nobody other content: the
//! key commitment refuses the planted file key even with `--allow-unverified-slot`; `--show-data-key` never prints a v1 user key; a rekey through a
//! link rekeys the link's target and refuses hard-linked files on the rewrite path; `info`
//! trusts no slot and reports temporaries a killed rekey left.

use paraes_core::container::{parse_recipients, Recipient};
use paraes_core::fuzzing::plant_slot;

use crate::common::{
    assert_error, assert_success, seeded_bytes, Scratch, HEADER_LEN, MESSAGE_PREFIX_LEN,
    V1_FIXTURES,
};

/// Offset of slot 1 in a container with one key-file stanza (a 4 KiB header).
const SLOT_1: usize = 64 + 2016;

/// A scratch directory with `plain.bin` sealed as `victim.paraes` for `old.key`.
fn victim() -> (Scratch, Vec<u8>) {
    let s = Scratch::new();
    let plain = seeded_bytes(25, 50_000);
    s.write("plain.bin", &plain);
    for (name, seed) in [("old.key", 1), ("new.key", 2), ("newer.key", 3)] {
        s.key_file(name, 256, seed, true);
    }
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "old.key",
        "plain.bin",
        "-o",
        "victim.paraes",
    ]);
    assert_success(&out, "enc");
    assert_eq!(s.read("victim.paraes")[8], 3, "enc did not write format v3");
    (s, plain)
}

/// Plants the 13 bytes of issue 25's P0 (a slot of `generation` holding one empty stanza of an
/// unknown kind) in slot 1 of `name`, as anyone with write access and no key can.
fn plant_generation(s: &Scratch, name: &str, generation: u64) {
    let mut file = s.read(name);
    let mut slot = generation.to_be_bytes().to_vec();
    slot.extend_from_slice(&[0, 1, 9, 0, 0]);
    file[SLOT_1..SLOT_1 + slot.len()].copy_from_slice(&slot);
    s.write(name, &file);
}

/// The plaintext `paraes dec -q NAME -o - UNLOCK...` writes, if it succeeds.
fn opens(s: &Scratch, name: &str, unlock: &[&str]) -> Option<Vec<u8>> {
    let out = s.run(&[&["dec", "-q", name, "-o", "-"][..], unlock].concat());
    out.status.success().then_some(out.stdout)
}

fn rekey(s: &Scratch, args: &[&str]) -> std::process::Output {
    s.run(&[&["rekey", "-q", "--force"][..], args].concat())
}

/// `rekey -k FROM [EXTRA...] --new-key-file TO victim.paraes` succeeds, and TO opens the file.
fn rekey_to(s: &Scratch, from: &str, extra: &[&str], to: &str, plain: &[u8]) {
    let args = [
        &["-k", from][..],
        extra,
        &["--new-key-file", to, "victim.paraes"],
    ]
    .concat();
    assert_success(&rekey(s, &args), &format!("rekey {from} -> {to}"));
    assert_eq!(
        opens(s, "victim.paraes", &["-k", to]).as_deref(),
        Some(plain),
        "{to} does not open the rekeyed file"
    );
}

/// A new X25519 identity file `name`; returns its recipient.
fn identity(s: &Scratch, name: &str) -> String {
    assert_success(&s.run(&["keygen", "--x25519", "-o", name]), "keygen");
    let out = s.run(&["keygen", "-y", name]);
    assert_success(&out, "keygen -y");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn public(recipient: &str) -> Recipient {
    Recipient::Public(parse_recipients(recipient).unwrap().remove(0))
}

#[test]
fn a_planted_generation_of_2_pow_64_minus_1_never_lets_rekey_destroy_the_file() {
    let (s, plain) = victim();
    plant_generation(&s, "victim.paraes", u64::MAX);
    assert_success(
        &s.run(&["verify", "-k", "old.key", "victim.paraes"]),
        "verify",
    );
    let info = assert_success(&s.run(&["info", "victim.paraes"]), "info");
    let info = info + &String::from_utf8_lossy(&s.run(&["info", "victim.paraes"]).stdout);
    assert!(!info.contains("rekey"), "info advises a rekey: {info}");
    rekey_to(&s, "old.key", &[], "new.key", &plain);
    rekey_to(&s, "new.key", &[], "newer.key", &plain);
}

#[test]
fn a_planted_generation_of_2_pow_64_minus_2_is_ignored_with_a_warning_and_rekey_takes_the_real_generation(
) {
    let (s, plain) = victim();
    plant_generation(&s, "victim.paraes", u64::MAX - 1);
    // A v3 file: its key commitment already decided the file key, so the slot nobody
    // authenticates is ignored, and every command says which slot, without any override.
    let out = s.run(&["verify", "-k", "old.key", "victim.paraes"]);
    assert_success(&out, "verify");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("victim.paraes: OK, stanza slot 1 ignored"),
        "{said}"
    );
    let out = s.run(&["dec", "-k", "old.key", "victim.paraes", "-o", "out"]);
    let err = assert_success(&out, "dec");
    assert!(
        err.contains("stanza slot 1 (generation 18446744073709551614) is ignored"),
        "{err}"
    );
    assert!(!err.contains("--allow-unverified-slot"), "{err}");
    assert_eq!(s.read("out"), plain);
    // Twice in a row: the rekey takes its generation from the real slot and overwrites the
    // planted one; each file after it opens with no warning.
    rekey_to(&s, "old.key", &[], "new.key", &plain);
    let out = s.run(&["dec", "-k", "new.key", "victim.paraes", "-o", "-"]);
    assert!(
        !crate::common::stderr(&out).contains("ignored"),
        "{}",
        crate::common::stderr(&out)
    );
    rekey_to(&s, "new.key", &[], "newer.key", &plain);
    let info = String::from_utf8(s.run(&["info", "victim.paraes"]).stdout).unwrap();
    assert!(info.contains("generation 3"), "{info}");
}

#[test]
fn a_valid_slot_planted_for_the_victims_recipient_never_replaces_the_real_one() {
    let s = Scratch::new();
    let plain = seeded_bytes(26, 50_000);
    s.write("plain.bin", &plain);
    s.key_file("new.key", 256, 2, true);
    let me = identity(&s, "victim.id");
    let out = s.run(&["enc", "-q", "-r", &me, "plain.bin", "-o", "victim.paraes"]);
    assert_success(&out, "enc");
    // Made from the victim's public recipient alone.
    let planted = plant_slot(&s.read("victim.paraes"), 1, &[public(&me)], 7);
    s.write("victim.paraes", &planted);
    // The planted file key fails the body's key commitment, so the real slot opens the file
    // (no override: it was needed before issue 35, and the planted slot blocked the file) and
    // the planted one is named; the rekey overwrites it.
    let out = s.run(&["verify", "-i", "victim.id", "victim.paraes"]);
    assert_success(&out, "verify");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("OK, stanza slot 1 ignored"), "{said}");
    let out = rekey(
        &s,
        &[
            "-i",
            "victim.id",
            "--new-key-file",
            "new.key",
            "victim.paraes",
        ],
    );
    assert_success(&out, "rekey");
    assert_eq!(opens(&s, "victim.paraes", &["-k", "new.key"]), Some(plain));
    assert_eq!(opens(&s, "victim.paraes", &["-i", "victim.id"]), None);
}

#[test]
fn a_file_with_slots_for_two_recipients_under_different_file_keys_shows_nobody_other_content() {
    let s = Scratch::new();
    s.write("order.txt", b"TRANSFER 100 EUR TO ALICE\n");
    let alice = identity(&s, "alice.id");
    let bob = identity(&s, "bob.id");
    let out = s.run(&["enc", "-q", "-r", &alice, "order.txt", "-o", "two.paraes"]);
    assert_success(&out, "enc");
    assert_eq!(s.read("two.paraes")[8], 3, "enc did not write format v3");
    // Slot 1 wraps another file key for Bob, with a valid slot tag under it: if a body could
    // verify under both keys, Bob would read other content than Alice. The body's key
    // commitment is Alice's file key: Alice reads her file (Bob's slot ignored and named), Bob
    // is refused before any plaintext, with or without the override.
    let two_faced = plant_slot(&s.read("two.paraes"), 1, &[public(&bob)], 1);
    s.write("two.paraes", &two_faced);
    let out = s.run(&["dec", "-i", "alice.id", "two.paraes", "-o", "-"]);
    let err = assert_success(&out, "alice");
    assert_eq!(out.stdout, b"TRANSFER 100 EUR TO ALICE\n");
    assert!(
        err.contains("stanza slot 1 (generation 1) is ignored"),
        "{err}"
    );
    for override_flag in [&[][..], &["--allow-unverified-slot"]] {
        for command in [
            &["dec", "-i", "bob.id", "two.paraes", "-o", "-"][..],
            &["verify", "-i", "bob.id", "two.paraes"],
        ] {
            let out = s.run(&[command, override_flag].concat());
            let err = assert_error(&out, &format!("{} bob {override_flag:?}", command[0]));
            assert!(out.stdout.is_empty(), "bob: {} wrote", command[0]);
            assert!(err.contains("key commitment does not match"), "bob: {err}");
        }
    }
}

#[test]
fn show_data_key_never_prints_a_v1_files_user_key() {
    let s = crate::common::v1_fixtures();
    let key_text = String::from_utf8(std::fs::read(format!("{V1_FIXTURES}/k128.key")).unwrap())
        .unwrap()
        .trim()
        .to_lowercase();
    let out = s.run(&["dec", "--show-data-key", "ctr-128.paraes", "-o", "out"]);
    let out = if out.status.success() {
        out
    } else {
        s.run(&[
            "dec",
            "-k",
            "k128.key",
            "--show-data-key",
            "ctr-128.paraes",
            "-o",
            "out",
        ])
    };
    let err = assert_error(&out, "--show-data-key on v1");
    assert!(err.contains("v1"), "{err}");
    assert!(
        !err.to_lowercase().contains(&key_text),
        "the user's key was printed"
    );
    assert!(!s.exists("out"));
}

#[test]
fn rekey_through_a_symbolic_link_rekeys_its_target_and_refuses_hard_links_on_rewrite() {
    let (s, plain) = victim();
    std::os::unix::fs::symlink("victim.paraes", s.path("link.paraes")).unwrap();
    // Three post-quantum recipients do not fit the 4 KiB header: the rewrite path.
    let mut args = vec!["-k".to_owned(), "old.key".to_owned()];
    for i in 0..3 {
        let out = s.run(&["keygen", "--pq", "-o", &format!("pq{i}.id")]);
        assert_success(&out, "keygen --pq");
        let r = s.run(&["keygen", "-y", &format!("pq{i}.id")]);
        args.extend([
            "--new-recipient".to_owned(),
            String::from_utf8(r.stdout).unwrap().trim().to_owned(),
        ]);
    }
    args.push("link.paraes".to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_success(&rekey(&s, &args), "rekey through a link");
    let link = std::fs::symlink_metadata(s.path("link.paraes")).unwrap();
    assert!(
        link.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert_eq!(
        opens(&s, "victim.paraes", &["-i", "pq0.id"]),
        Some(plain.clone())
    );
    assert_eq!(
        opens(&s, "victim.paraes", &["-k", "old.key"]),
        None,
        "the target kept its old stanzas"
    );
    // A file with another hard link is refused on the rewrite path, and left as it was.
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "old.key",
        "plain.bin",
        "-o",
        "linked.paraes",
    ]);
    assert_success(&out, "enc");
    std::fs::hard_link(s.path("linked.paraes"), s.path("other-name.paraes")).unwrap();
    let before = s.read("linked.paraes");
    let mut args = args;
    *args.last_mut().unwrap() = "linked.paraes";
    let err = assert_error(&rekey(&s, &args), "rekey of a hard-linked file");
    assert!(err.contains("hard links"), "{err}");
    assert_eq!(s.read("linked.paraes"), before);
    assert_eq!(s.read("other-name.paraes"), before);
}

#[test]
fn info_and_rekey_report_temporaries_a_killed_rekey_left() {
    let (s, _) = victim();
    s.write(".victim.paraes.a1b2c3.paraes-tmp", b"left by SIGKILL");
    s.write(".paraes-rekey.XyZ123", b"left by an older paraes");
    let info = String::from_utf8(s.run(&["info", "victim.paraes"]).stdout).unwrap();
    assert!(info.contains(".victim.paraes.a1b2c3.paraes-tmp"), "{info}");
    assert!(info.contains(".paraes-rekey.XyZ123"), "{info}");
    let out = s.run(&[
        "rekey",
        "--force",
        "-k",
        "old.key",
        "--new-key-file",
        "new.key",
        "victim.paraes",
    ]);
    let err = assert_success(&out, "rekey");
    assert!(err.contains(".paraes-rekey.XyZ123"), "{err}");
}

#[test]
fn a_second_rekey_of_the_same_file_waits_for_none_and_writes_nothing() {
    let (s, plain) = victim();
    let before = s.read("victim.paraes");
    // Another rekey holds the file (flock(1) takes the same lock paraes takes, then runs its
    // command): the command says that it holds it (`held`) and keeps it until this rekey is
    // over (`done`).
    let out = s.bash(
        "flock victim.paraes sh -c ': > held; until [ -e done ]; do sleep 0.01; done' & \
         for i in $(seq 6000); do [ -e held ] && break; sleep 0.01; done; \
         [ -e held ] || echo 'flock never took the lock'; \
         \"$PARAES\" rekey --force -k old.key --new-key-file new.key victim.paraes; echo \"exit $?\"; \
         : > done; wait",
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("exit 1"), "{text}");
    assert!(text.contains("another paraes is rekeying"), "{text}");
    assert_eq!(s.read("victim.paraes"), before);
    assert_eq!(opens(&s, "victim.paraes", &["-k", "old.key"]), Some(plain));
}

#[test]
fn on_a_pipe_the_key_commitment_picks_the_real_slot_over_a_planted_one() {
    let s = Scratch::new();
    let plain = seeded_bytes(27, 3 * 1024 * 1024 + 5);
    s.write("plain.bin", &plain);
    let me = identity(&s, "victim.id");
    let out = s.run(&["enc", "-q", "-r", &me, "plain.bin", "-o", "victim.paraes"]);
    assert_success(&out, "enc");
    // The planted slot (the newer generation, tried first) opens with the victim's identity,
    // but its file key does not match the message's key commitment, read with the header: the
    // real slot opens the pipe, and the planted one is named.
    let planted = plant_slot(&s.read("victim.paraes"), 1, &[public(&me)], 7);
    let out = s.run_with_stdin(&["dec", "-i", "victim.id", "-o", "-"], &planted);
    let err = assert_success(&out, "dec of a pipe");
    assert!(out.stdout == plain, "wrong plaintext");
    assert!(
        err.contains("stanza slot 1 (generation 7) is ignored"),
        "{err}"
    );
}

#[test]
fn messages_never_present_an_unauthenticated_slot_as_fact() {
    let (s, _) = victim();
    let bob = identity(&s, "bob.id");
    let planted = plant_slot(&s.read("victim.paraes"), 1, &[public(&bob)], 9);
    s.write("victim.paraes", &planted);
    s.key_file("wrong.key", 256, 99, true);
    let err = assert_error(
        &s.run(&["dec", "-k", "wrong.key", "victim.paraes", "-o", "x"]),
        "wrong key",
    );
    assert!(err.contains("no key has authenticated"), "{err}");
    // Damage to the first chunk names the chunk, not a replaced header.
    let (s, _) = victim();
    let good = s.read("victim.paraes");
    let mut damaged = good.clone();
    damaged[HEADER_LEN + MESSAGE_PREFIX_LEN + 10] ^= 1;
    s.write("victim.paraes", &damaged);
    let err = assert_error(
        &s.run(&["verify", "-k", "old.key", "victim.paraes"]),
        "damaged chunk",
    );
    assert!(err.contains("chunk 0 failed authentication"), "{err}");
    assert!(!err.contains("stanza slot"), "{err}");
    // Damage to the message's salt names the body's key commitment, not a chunk or a slot.
    let mut damaged = good;
    damaged[HEADER_LEN + 10] ^= 1;
    s.write("victim.paraes", &damaged);
    let err = assert_error(
        &s.run(&["verify", "-k", "old.key", "victim.paraes"]),
        "damaged salt",
    );
    assert!(err.contains("key commitment does not match"), "{err}");
    assert!(!err.contains("stanza slot"), "{err}");
}
