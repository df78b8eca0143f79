//! Issue 39's rekey verbs, end to end: `--add-*` adds a way in and keeps every stanza the file
//! has byte for byte; `--remove NAME` removes the stanza `info` names so; `--new-*` replaces
//! them all, says which it dropped, and keeps the one that opened the file unless `--force`;
//! refusals are one line and leave the file byte-identical.

use crate::common::{assert_error, assert_success, assert_usage_error, seeded_bytes, Scratch};
use crate::stanzas::{identity, opens};

/// The stanza records (kind, length, body: as stored) of the one slot of `container` that
/// parses (docs/FORMAT.md, "Byte layout": a 64-byte preamble, then two slots of S bytes).
fn stanza_records(container: &[u8]) -> Vec<Vec<u8>> {
    let slot_len = u32::from_be_bytes(container[32..36].try_into().unwrap()) as usize;
    let live: Vec<&[u8]> = [64, 64 + slot_len]
        .into_iter()
        .map(|at| &container[at..at + slot_len])
        .filter(|slot| slot[..8] != [0; 8])
        .collect();
    assert_eq!(live.len(), 1, "one slot parses after a finished rekey");
    let slot = live[0];
    let count = u16::from_be_bytes([slot[8], slot[9]]) as usize;
    let mut at = 10;
    (0..count)
        .map(|_| {
            let len = u16::from_be_bytes([slot[at + 1], slot[at + 2]]) as usize;
            let record = slot[at..at + 3 + len].to_vec();
            at += 3 + len;
            record
        })
        .collect()
}

/// Asserts that each of `unlocks` opens `file` to `plain`.
fn assert_each_opens(s: &Scratch, file: &str, plain: &[u8], unlocks: &[&[&str]]) {
    for unlock in unlocks {
        assert_eq!(opens(s, file, unlock).as_deref(), Some(plain), "{unlock:?}");
    }
}

/// Encrypts `f` to `f.paraes` for `my.key` and `extra` ways in; its bytes.
fn sealed(s: &Scratch, extra: &[&str]) -> Vec<u8> {
    let out = s.run(&[&["enc", "-q", "-k", "my.key"][..], extra, &["f"]].concat());
    assert_success(&out, "enc");
    s.read("f.paraes")
}

/// A scratch directory with `f` (its plaintext returned), `my.key`, `alice.id` and `bob.id`.
fn setup() -> (Scratch, Vec<u8>, String, String) {
    let s = Scratch::new();
    let plain = seeded_bytes(39, 40_000);
    s.write("f", &plain);
    s.key_file("my.key", 256, 39, true);
    let alice = identity(&s, "alice.id", false);
    let bob = identity(&s, "bob.id", false);
    (s, plain, alice, bob)
}

/// The issue's case: adding a recipient keeps the key that opened the file, and every stanza
/// the file had stays as it was, byte for byte.
#[test]
fn adding_a_recipient_keeps_every_stanza_byte_for_byte_and_both_keys_open() {
    let (s, plain, alice, bob) = setup();
    let before = sealed(&s, &["-r", &bob]);
    let out = s.run(&[
        "rekey",
        "-k",
        "my.key",
        "--add-recipient",
        &alice,
        "f.paraes",
    ]);
    let err = assert_success(&out, "rekey --add-recipient");
    assert!(err.contains("added 1 stanza"), "{err}");
    let after = s.read("f.paraes");
    assert_eq!(after[4096..], before[4096..], "body untouched");
    let (old, new) = (stanza_records(&before), stanza_records(&after));
    assert_eq!(new.len(), 3, "two kept, one added");
    assert_eq!(new[..2], old[..], "the old stanzas, byte for byte");
    assert_each_opens(
        &s,
        "f.paraes",
        &plain,
        &[&["-k", "my.key"], &["-i", "alice.id"], &["-i", "bob.id"]],
    );
    // And a key file and a passphrase, added together.
    s.key_file("more.key", 128, 40, true);
    s.secret("pass", b"a long enough passphrase\n");
    let out = s.run(&[
        "rekey",
        "-i",
        "alice.id",
        "--add-key-file",
        "more.key",
        "--add-passphrase-file",
        "pass",
        "f.paraes",
    ]);
    assert_success(&out, "rekey --add-key-file --add-passphrase-file");
    let added = stanza_records(&s.read("f.paraes"));
    assert_eq!(added[..3], new[..]);
    assert_each_opens(
        &s,
        "f.paraes",
        &plain,
        &[
            &["-k", "more.key"],
            &["--passphrase-file", "pass"],
            &["-k", "my.key"],
        ],
    );
}

/// `info` names each stanza (`#N` where a kind repeats); `--remove` by that name, or by kind
/// alone where it names one, removes that stanza only and locks out its key.
#[test]
fn removing_by_the_name_info_shows_locks_out_that_key_only() {
    let (s, plain, alice, bob) = setup();
    s.secret("pass", b"a long enough passphrase\n");
    sealed(&s, &["--passphrase-file", "pass", "-r", &alice, "-r", &bob]);
    let info = String::from_utf8(s.run(&["info", "f.paraes"]).stdout).unwrap();
    assert!(
        info.contains("named: key-file, passphrase, x25519#3, x25519#4"),
        "{info}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&s.run(&["info", "--json", "f.paraes"]).stdout).unwrap();
    let names: Vec<&str> = json["slots"][0]["stanza_kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["key-file", "passphrase", "x25519#3", "x25519#4"]);
    let old = stanza_records(&s.read("f.paraes"));
    // Alice's stanza is the third (enc writes them in the order given).
    let out = s.run(&["rekey", "-k", "my.key", "--remove", "x25519#3", "f.paraes"]);
    let err = assert_success(&out, "rekey --remove x25519#3");
    assert!(err.contains("removed x25519#3"), "{err}");
    assert!(opens(&s, "f.paraes", &["-i", "alice.id"]).is_none());
    let new = stanza_records(&s.read("f.paraes"));
    assert_eq!(
        new,
        [&old[..2], &old[3..]].concat(),
        "the others as they were"
    );
    // By kind alone: the one passphrase.
    let out = s.run(&[
        "rekey",
        "-k",
        "my.key",
        "--remove",
        "passphrase",
        "f.paraes",
    ]);
    assert_success(&out, "rekey --remove passphrase");
    assert!(opens(&s, "f.paraes", &["--passphrase-file", "pass"]).is_none());
    assert_each_opens(
        &s,
        "f.paraes",
        &plain,
        &[&["-k", "my.key"], &["-i", "bob.id"]],
    );
    let info = String::from_utf8(s.run(&["info", "f.paraes"]).stdout).unwrap();
    assert!(info.contains("named: key-file, x25519\n"), "{info}");
}

/// Removing the stanza that opened the file needs `--force`; removing every way in is refused
/// even so. Each refusal is one line and leaves the file byte-identical.
#[test]
fn removing_the_opener_needs_force_and_the_last_way_in_is_never_removed() {
    let (s, plain, alice, _) = setup();
    let before = sealed(&s, &["-r", &alice]);
    let out = s.run(&["rekey", "-k", "my.key", "--remove", "key-file", "f.paraes"]);
    let err = assert_error(&out, "removing the opener without --force");
    assert!(
        err.contains("opened the file") && err.contains("--force") && err.contains("unchanged"),
        "{err}"
    );
    assert_eq!(s.read("f.paraes"), before, "byte-identical");
    let out = s.run(&[
        "rekey", "-k", "my.key", "--remove", "key-file", "--remove", "x25519", "--force",
        "f.paraes",
    ]);
    let err = assert_error(&out, "removing every stanza");
    assert!(err.contains("nothing could open the file"), "{err}");
    assert_eq!(s.read("f.paraes"), before, "byte-identical");
    let out = s.run(&[
        "rekey", "-k", "my.key", "--remove", "key-file", "--force", "f.paraes",
    ]);
    assert_success(&out, "rekey --remove key-file --force");
    assert!(opens(&s, "f.paraes", &["-k", "my.key"]).is_none());
    assert_each_opens(&s, "f.paraes", &plain, &[&["-i", "alice.id"]]);
}

/// `--new-*` replaces every stanza: it refuses to drop the one that opened the file unless that
/// key is among the new ones or `--force` is given, and says in one line what it dropped.
#[test]
fn replacing_says_what_it_drops_and_keeps_the_opener_unless_forced() {
    let (s, plain, alice, bob) = setup();
    let before = sealed(&s, &["-r", &alice]);
    let out = s.run(&["rekey", "-k", "my.key", "--new-recipient", &bob, "f.paraes"]);
    let err = assert_error(&out, "replace that drops the opener");
    assert!(
        err.contains("would drop key-file") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(s.read("f.paraes"), before, "byte-identical");
    // The opener's key among the new ones: allowed, and said.
    let out = s.run(&[
        "rekey",
        "-k",
        "my.key",
        "--new-key-file",
        "my.key",
        "--new-recipient",
        &bob,
        "f.paraes",
    ]);
    let err = assert_success(&out, "replace keeping the opener's key");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("dropped")).collect();
    assert_eq!(said.len(), 1, "one line: {err}");
    assert!(
        said[0].contains("dropped key-file (it opened the file; its key is among the new stanzas, so it still does), x25519"),
        "{err}"
    );
    assert!(opens(&s, "f.paraes", &["-i", "alice.id"]).is_none());
    assert_each_opens(
        &s,
        "f.paraes",
        &plain,
        &[&["-k", "my.key"], &["-i", "bob.id"]],
    );
    // --force drops it.
    let out = s.run(&[
        "rekey",
        "-i",
        "bob.id",
        "--new-recipient",
        &alice,
        "--force",
        "f.paraes",
    ]);
    let err = assert_success(&out, "replace --force");
    assert!(
        err.contains("dropped key-file, x25519 (it opened the file)"),
        "{err}"
    );
    assert!(opens(&s, "f.paraes", &["-i", "bob.id"]).is_none());
    assert!(opens(&s, "f.paraes", &["-k", "my.key"]).is_none());
    assert_each_opens(&s, "f.paraes", &plain, &[&["-i", "alice.id"]]);
}

/// A remove that names nothing, or more than one stanza, is one line and changes nothing;
/// malformed names and mixed verbs are usage errors (exit 2).
#[test]
fn a_remove_that_names_nothing_or_several_is_one_line_and_changes_nothing() {
    let (s, _, alice, bob) = setup();
    let before = sealed(&s, &["-r", &alice, "-r", &bob]);
    for (name, needle) in [
        ("passphrase", "no stanza of the file is \"passphrase\""),
        ("x25519#1", "no stanza of the file is \"x25519#1\""),
        ("x25519", "names 2 stanzas (x25519#2, x25519#3)"),
    ] {
        let out = s.run(&["rekey", "-k", "my.key", "--remove", name, "f.paraes"]);
        let err = assert_error(&out, name);
        assert!(err.contains(needle), "{name}: {err}");
        assert_eq!(s.read("f.paraes"), before, "{name}: byte-identical");
    }
    s.key_file("other.key", 256, 41, true);
    for (args, needle) in [
        (vec!["--remove", "frob"], "names no stanza kind"),
        (vec!["--remove", "x25519#0"], "from 1"),
        (
            vec!["--remove", "x25519#2", "--new-key-file", "other.key"],
            "one or the other",
        ),
        (vec!["--force"], "say what changes"),
    ] {
        let out = s.run(&[&["rekey", "-k", "my.key"][..], &args, &["f.paraes"]].concat());
        let err = assert_usage_error(&out, &format!("{args:?}"));
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(s.read("f.paraes"), before, "{args:?}: byte-identical");
    }
}

/// `--add-passphrase` asks on the terminal, twice, and the passphrase then opens the file
/// beside the key that opened it.
#[test]
fn add_passphrase_asks_twice_on_the_terminal_and_keeps_the_key() {
    let (s, plain, _, _) = setup();
    let before = sealed(&s, &[]);
    let out = s.bash(
        r#"rm -f typed.log status.txt
        ( n=0; for i in $(seq 1200); do
            [ -e status.txt ] && break
            c=$(grep -o 'Passphrase' typed.log 2>/dev/null | wc -l)
            if [ "$c" -gt "$n" ]; then n=$c; printf 'a long enough passphrase\n'; fi
            sleep 0.1
          done ) \
        | timeout 150 script -qfec '"$PARAES" rekey -k my.key --add-passphrase f.paraes; echo $? > status.txt' typed.log >/dev/null
        cat status.txt"#,
    );
    let log = String::from_utf8_lossy(&s.read("typed.log")).into_owned();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "{log}");
    assert!(log.contains("Passphrase again"), "asked twice: {log}");
    assert!(
        !log.contains("long enough"),
        "the passphrase was echoed: {log}"
    );
    assert_eq!(
        stanza_records(&s.read("f.paraes"))[0],
        stanza_records(&before)[0]
    );
    s.secret("pass", b"a long enough passphrase\n");
    assert_each_opens(
        &s,
        "f.paraes",
        &plain,
        &[&["-k", "my.key"], &["--passphrase-file", "pass"]],
    );
}
