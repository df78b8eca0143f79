//! Issue 35's rekey race, end to end: a file rewritten in place (`cp other f`, same inode)
//! while rekey waits — for a new key from a FIFO, or for an SSH key's passphrase between its
//! read of the header and its first write — is never written over: the new keys are read
//! before the file is opened, the header is re-read right before the first write (and before
//! each write, under a write lease where the kernel grants one), and `kill -9` during a
//! rekey of a file with a planted slot always leaves a file the old or the new secret opens.

use std::io::Write;
use std::os::unix::fs::MetadataExt;

use paraes_core::container::{parse_recipients, Recipient};
use paraes_core::fuzzing::plant_slot;

use crate::common::{assert_error, assert_success, seeded_bytes, Scratch};

/// The plaintext `paraes dec -q NAME -o - UNLOCK...` writes, if it succeeds.
fn opens(s: &Scratch, name: &str, unlock: &[&str]) -> Option<Vec<u8>> {
    let out = s.run(&[&["dec", "-q", name, "-o", "-"][..], unlock].concat());
    out.status.success().then_some(out.stdout)
}

/// Overwrites `name` with `contents` in place (same inode), as `cp other name` does.
fn overwrite_in_place(s: &Scratch, name: &str, contents: &[u8]) {
    let inode = std::fs::metadata(s.path(name)).unwrap().ino();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(s.path(name))
        .unwrap();
    file.write_all(contents).unwrap();
    assert_eq!(std::fs::metadata(s.path(name)).unwrap().ino(), inode);
}

/// V (`a.key`, live slot 0) and W (made for `b.key`, rekeyed once to `c.key`: live slot 1,
/// the slot a rekey of V would write), with their plaintexts.
fn v_and_w(s: &Scratch) -> (Vec<u8>, Vec<u8>) {
    let (v, w) = (seeded_bytes(35, 70_000), seeded_bytes(36, 70_000));
    s.write("v.bin", &v);
    s.write("w.bin", &w);
    for (name, seed) in [("a.key", 1), ("b.key", 2), ("c.key", 3), ("d.key", 4)] {
        s.key_file(name, 256, seed, true);
    }
    for (key, input, output) in [
        ("a.key", "v.bin", "V.paraes"),
        ("b.key", "w.bin", "W.paraes"),
    ] {
        assert_success(
            &s.run(&["enc", "-q", "-k", key, input, "-o", output]),
            "enc",
        );
    }
    let out = s.run(&[
        "rekey",
        "--force",
        "-q",
        "-k",
        "b.key",
        "--new-key-file",
        "c.key",
        "W.paraes",
    ]);
    assert_success(&out, "rekey W");
    (v, w)
}

/// The issue's sequence: `rekey -k a.key --new-key-file FIFO V` waits on the FIFO; `cp W V`;
/// then the FIFO is fed. Before the fix rekey had opened V first, then wrote its new slot over
/// W's only live slot and said "the file is unchanged". Now the FIFO is read before V is
/// opened: rekey opens what V is by then (W, which a.key does not open) and writes nothing.
#[test]
fn a_file_replaced_in_place_while_rekey_reads_its_new_key_is_never_written() {
    let s = Scratch::new();
    let (_, w) = v_and_w(&s);
    let w_file = s.read("W.paraes");
    let fifo = s.path("new.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let rekey = s
        .command(&[
            "rekey",
            "--force",
            "-k",
            "a.key",
            "--new-key-file",
            "new.fifo",
            "V.paraes",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let rekey reach its read of the FIFO (after the fix, that comes before it opens V; the
    // assertions below hold whenever it got there).
    std::thread::sleep(std::time::Duration::from_millis(300));
    overwrite_in_place(&s, "V.paraes", &w_file);
    std::fs::write(&fifo, s.read("d.key")).unwrap();
    let out = rekey.wait_with_output().unwrap();
    let err = assert_error(&out, "rekey of a file replaced meanwhile");
    assert!(!err.contains("unchanged"), "{err}");
    assert_eq!(
        s.read("V.paraes"),
        w_file,
        "rekey wrote to the replaced file"
    );
    assert_eq!(opens(&s, "V.paraes", &["-k", "c.key"]), Some(w));
}

/// ssh-keygen makes a locked Ed25519 key `name` (passphrase "pass words"); returns its public
/// key line. Fails loudly where OpenSSH's client tools are missing.
fn locked_ssh_key(s: &Scratch, name: &str) -> String {
    let out = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "pass words", "-C", "", "-f"])
        .arg(s.path(name))
        .output()
        .expect("ssh-keygen (openssh-client; scripts/test.sh installs it)");
    assert!(out.status.success(), "ssh-keygen failed");
    String::from_utf8(s.read(&format!("{name}.pub")))
        .unwrap()
        .trim()
        .to_owned()
}

/// V for a locked SSH key and `team.key`; W is V rekeyed by `team.key` to `other.key` (same
/// body, same file key, live slot 1). `rekey -i locked ... V` reads V's header, then asks the
/// key's passphrase on a terminal (`script`): meanwhile `BEFORE_ANSWER` runs (here: W is
/// copied over V in place). Returns rekey's exit status and what it printed.
fn rekey_while_asked(s: &Scratch, hold_open: bool, before_answer: &str) -> (String, String) {
    let plain = seeded_bytes(37, 40_000);
    s.write("plain.bin", &plain);
    s.key_file("team.key", 256, 5, true);
    s.key_file("other.key", 256, 6, true);
    s.key_file("new.key", 256, 7, true);
    let line = locked_ssh_key(s, "locked");
    let out = s.run(&[
        "enc",
        "-q",
        "-r",
        &line,
        "-k",
        "team.key",
        "plain.bin",
        "-o",
        "V.paraes",
    ]);
    assert_success(&out, "enc");
    std::fs::copy(s.path("V.paraes"), s.path("W.paraes")).unwrap();
    let out = s.run(&[
        "rekey",
        "--force",
        "-q",
        "-k",
        "team.key",
        "--new-key-file",
        "other.key",
        "W.paraes",
    ]);
    assert_success(&out, "rekey W");
    let hold = if hold_open { "exec 4<V.paraes" } else { ":" };
    let out = s.bash(&format!(
        r#"{hold}
        rm -f typed.log status.txt
        ( for i in $(seq 600); do
            grep -q 'Passphrase for' typed.log 2>/dev/null && break
            sleep 0.05
          done
          {before_answer}
          printf 'pass words\n'
          for i in $(seq 600); do [ -e status.txt ] && break; sleep 0.05; done ) \
        | timeout 120 script -qfec '"$PARAES" rekey -v --force -i locked --new-key-file new.key V.paraes; echo $? > status.txt' typed.log >/dev/null
        wait
        cat status.txt"#
    ));
    let log = String::from_utf8_lossy(&s.read("typed.log")).into_owned();
    (String::from_utf8_lossy(&out.stdout).trim().to_owned(), log)
}

/// A copy over the file while rekey waits for a locked key's passphrase (between its read of
/// the header and its writes) is found by the re-read right before the first write: nothing is
/// written, the copy stays whole. The lease is taken after the prompt, for the writes alone
/// (so no reader of the file waits on a user typing), and is granted here.
#[test]
fn a_copy_over_the_file_while_rekey_waits_for_a_passphrase_is_found_before_any_write() {
    let s = Scratch::new();
    let (status, log) = rekey_while_asked(&s, false, "cp W.paraes V.paraes");
    assert!(status != "0" && !status.is_empty(), "{status}: {log}");
    assert!(log.contains("write lease held"), "{log}");
    assert!(log.contains("changed after paraes read it"), "{log}");
    assert_eq!(
        s.read("V.paraes"),
        s.read("W.paraes"),
        "rekey wrote to the copy"
    );
    assert!(opens(&s, "V.paraes", &["-k", "other.key"]).is_some());
}

/// Where no lease is granted (here: another process has the file open), rekey says so under
/// -v, and its re-read of the header right before the first write finds the copy: nothing
/// written, the copied file intact.
#[test]
fn without_a_lease_the_re_read_before_the_first_write_refuses_a_changed_file() {
    let s = Scratch::new();
    let (status, log) = rekey_while_asked(&s, true, "cp W.paraes V.paraes");
    assert!(
        log.contains("no write lease (another process has it open)"),
        "{log}"
    );
    assert!(status != "0" && !status.is_empty(), "{status}: {log}");
    assert!(log.contains("changed after paraes read it"), "{log}");
    assert_eq!(
        s.read("V.paraes"),
        s.read("W.paraes"),
        "rekey wrote to the copy"
    );
    assert!(opens(&s, "V.paraes", &["-k", "other.key"]).is_some());
    assert!(opens(&s, "V.paraes", &["-k", "new.key"]).is_none());
}

/// `--rewrite` never writes to the file: it renames a checked copy over it (a new inode).
#[test]
fn rekey_rewrite_replaces_the_file_by_a_copy() {
    let s = Scratch::new();
    let (v, _) = v_and_w(&s);
    let inode = std::fs::metadata(s.path("V.paraes")).unwrap().ino();
    let out = s.run(&[
        "rekey",
        "--force",
        "-k",
        "a.key",
        "--rewrite",
        "--new-key-file",
        "d.key",
        "V.paraes",
    ]);
    let said = assert_success(&out, "rekey --rewrite");
    assert!(said.contains("--rewrite"), "{said}");
    assert_ne!(std::fs::metadata(s.path("V.paraes")).unwrap().ino(), inode);
    assert_eq!(opens(&s, "V.paraes", &["-k", "d.key"]), Some(v));
    assert!(opens(&s, "V.paraes", &["-k", "a.key"]).is_none());
}

/// A v3 file with a slot planted for the victim's public recipient opens and rekeys without
/// the override (the key commitment decides); `kill -9` at any point of that rekey leaves a
/// file the victim's identity or the new key opens, with the same content.
#[test]
fn kill_9_during_a_rekey_over_a_planted_slot_leaves_a_file_the_old_or_the_new_secret_opens() {
    let s = Scratch::new();
    let plain = seeded_bytes(38, 200_000);
    s.write("plain.bin", &plain);
    s.key_file("new.key", 256, 8, true);
    assert_success(&s.run(&["keygen", "--x25519", "-o", "victim.id"]), "keygen");
    let out = s.run(&["keygen", "-y", "victim.id"]);
    let me = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let out = s.run(&["enc", "-q", "-r", &me, "plain.bin", "-o", "victim.paraes"]);
    assert_success(&out, "enc");
    let public = Recipient::Public(parse_recipients(&me).unwrap().remove(0));
    let planted = plant_slot(&s.read("victim.paraes"), 1, &[public], 7);
    s.write("victim.paraes", &planted);
    let out = s.run(&["verify", "-i", "victim.id", "victim.paraes"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_success(&out, "verify of a planted v3 file");
    assert!(said.contains("OK, stanza slot 1 ignored"), "{said}");
    let args = [
        "rekey",
        "--force",
        "-q",
        "-i",
        "victim.id",
        "--new-key-file",
        "new.key",
        "victim.paraes",
    ];
    let mut outcomes = [0usize; 2];
    for round in 0..16u64 {
        s.write("victim.paraes", &planted);
        let mut child = s
            .command(&args)
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(round * 700));
        let _ = child.kill();
        let finished = child.wait().unwrap().success();
        outcomes[usize::from(finished)] += 1;
        let by_old = opens(&s, "victim.paraes", &["-i", "victim.id"]);
        let by_new = opens(&s, "victim.paraes", &["-k", "new.key"]);
        assert!(
            by_old.as_deref() == Some(&plain[..]) || by_new.as_deref() == Some(&plain[..]),
            "round {round}: neither the old nor the new secret opens the file"
        );
        for content in [by_old, by_new].into_iter().flatten() {
            assert!(content == plain, "round {round}: other content");
        }
    }
    // The last round let it finish (or it was killed): either way, a rekey run to the end
    // leaves the new key alone.
    s.write("victim.paraes", &planted);
    let out = s.run(&args);
    assert_success(&out, "rekey over a planted slot, no override");
    assert!(opens(&s, "victim.paraes", &["-i", "victim.id"]).is_none());
    assert_eq!(opens(&s, "victim.paraes", &["-k", "new.key"]), Some(plain));
    eprintln!(
        "kill -9 rounds: {} killed before the end, {} finished",
        outcomes[0], outcomes[1]
    );
}
