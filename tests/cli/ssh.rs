//! SSH keys as recipients and identities (issue 29), end to end with keys that `ssh-keygen`
//! makes (OpenSSH's format and `-m PEM`): `-r "$(cat id_ed25519.pub)"` and `-R` with an
//! authorized_keys-style file, `-i id_ed25519` / `-i id_rsa`; a stranger's key fails cleanly;
//! a key with a passphrase asks on the terminal only when a stanza names it, and fails in one
//! line without a terminal (never reading standard input); FIDO, ECDSA and certificate keys are
//! refused with the reason; hostile keys fail in one line; SSH stanzas mix with every other
//! kind and with `rekey`; `info` shows the key tags; README's SSH commands run as written.

use std::process::{Command, Output, Stdio};

use sha2::{Digest, Sha256};

use crate::common::{assert_success, bin, seeded_bytes, stderr, Scratch};

/// Runs `ssh-keygen ARGS` in the scratch directory, failing the test (not skipping it) when
/// OpenSSH's client tools are missing (scripts/test.sh installs openssh-client).
fn ssh_keygen(s: &Scratch, args: &[&str]) {
    let out = Command::new("ssh-keygen")
        .args(args)
        .current_dir(s.path(""))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "`ssh-keygen` is needed for this test (Debian: apt-get install openssh-client; \
                 scripts/test.sh installs it): {e}"
            )
        });
    assert!(
        out.status.success(),
        "ssh-keygen {args:?} failed: {}",
        stderr(&out)
    );
}

/// A new key pair `name` (and `name.pub`) of `ssh-keygen -t TYPE` plus `extra` arguments, no
/// passphrase.
fn keypair(s: &Scratch, name: &str, key_type: &str, extra: &[&str]) -> String {
    let mut args = vec!["-q", "-t", key_type, "-N", "", "-C", name, "-f", name];
    args.extend(extra);
    ssh_keygen(s, &args);
    String::from_utf8(s.read(&format!("{name}.pub")))
        .unwrap()
        .trim()
        .to_string()
}

/// The SSH key tag of a public key line: SHA-256 of its base64 data, first 4 bytes, as hex.
fn tag_of(line: &str) -> String {
    let data = line.split_whitespace().nth(1).expect("a key line");
    let decoded = base64_decode(data);
    hex::encode(&Sha256::digest(&decoded)[..4])
}

/// Standard base64 (a public key line's data).
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64"),
        }
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|&c| c != b'=') {
        acc = (acc << 6) | value(c);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// `paraes dec -q FILE -o - UNLOCK...`: the plaintext, or None when it fails.
fn opens(s: &Scratch, file: &str, unlock: &[&str]) -> Option<Vec<u8>> {
    let out = s.run(&[&["dec", "-q", file, "-o", "-"][..], unlock].concat());
    out.status.success().then_some(out.stdout)
}

/// Runs paraes in a new session, without a controlling terminal (`setsid`), with `stdin` on
/// standard input.
fn without_terminal(s: &Scratch, args: &[&str], stdin: &str) -> Output {
    let script = format!(
        "printf '%s' '{stdin}' | setsid -w \"$PARAES\" {}",
        args.iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    s.bash(&script)
}

/// The issue's "done when": a file encrypted with `-r "$(cat id_ed25519.pub)" -R keys` (an
/// RSA key in an authorized_keys-style file) opens with either private key, in OpenSSH's
/// format or PEM; a stranger's key fails cleanly; `info` names both stanzas and their tags.
#[test]
fn a_file_for_two_ssh_keys_opens_with_either_and_not_with_a_stranger_s() {
    let s = Scratch::new();
    let ed = keypair(&s, "id_ed25519", "ed25519", &[]);
    let rsa = keypair(&s, "id_rsa", "rsa", &["-b", "3072", "-m", "PEM"]);
    assert!(String::from_utf8(s.read("id_rsa"))
        .unwrap()
        .starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    keypair(&s, "stranger", "ed25519", &[]);
    s.write(
        "keys",
        format!("# the team\n\nno-pty,from=\"10.0.0.0/8\" {rsa}\n  # end\n").as_bytes(),
    );
    let plain = seeded_bytes(29, 100_000);
    s.write("f", &plain);
    let out = s.bash("\"$PARAES\" enc -r \"$(cat id_ed25519.pub)\" -R keys f");
    assert_success(&out, "enc to two SSH keys");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    for key in ["id_ed25519", "id_rsa"] {
        assert_eq!(
            opens(&s, "f.paraes", &["-i", key]).as_deref(),
            Some(&plain[..]),
            "{key}"
        );
    }
    // The RSA key in OpenSSH's format opens it too.
    ssh_keygen(&s, &["-q", "-p", "-N", "", "-f", "id_rsa"]);
    assert!(String::from_utf8(s.read("id_rsa"))
        .unwrap()
        .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
    assert_eq!(
        opens(&s, "f.paraes", &["-i", "id_rsa"]).as_deref(),
        Some(&plain[..])
    );
    let before = s.names();
    let out = s.run(&["dec", "-i", "stranger", "f.paraes"]);
    let err = s.assert_refused(&out, &before, "a stranger's key");
    assert!(
        err.contains("none of the given") && err.contains("ssh-ed25519 recipient"),
        "{err}"
    );
    // info: both stanzas with their key tags, as text and JSON.
    let info = String::from_utf8(s.run(&["info", "f.paraes"]).stdout).unwrap();
    let (ed_tag, rsa_tag) = (tag_of(&ed), tag_of(&rsa));
    assert!(
        info.contains(&format!(
            "ssh-ed25519 recipient (SSH key tag {ed_tag}), ssh-rsa recipient (SSH key tag {rsa_tag})"
        )),
        "{info}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&s.run(&["info", "--json", "f.paraes"]).stdout).unwrap();
    let kinds = &json["slots"][0]["stanza_kinds"];
    assert_eq!(kinds[0]["kind_byte"], 5);
    assert_eq!(kinds[0]["ssh_key_tag"], ed_tag.as_str());
    assert_eq!(kinds[1]["kind"], "ssh-rsa recipient");
    assert_eq!(kinds[1]["ssh_key_tag"], rsa_tag.as_str());
    // Each SSH stanza is named by its kind and key tag, and removed by that name (issue 39).
    assert!(
        info.contains(&format!("named: ssh-ed25519:{ed_tag}, ssh-rsa:{rsa_tag}")),
        "{info}"
    );
    assert_eq!(kinds[1]["name"], format!("ssh-rsa:{rsa_tag}").as_str());
    let out = s.run(&[
        "rekey",
        "-i",
        "id_ed25519",
        "--remove",
        &format!("ssh-rsa:{rsa_tag}"),
        "f.paraes",
    ]);
    let err = assert_success(&out, "rekey --remove ssh-rsa:TAG");
    assert!(err.contains(&format!("removed ssh-rsa:{rsa_tag}")), "{err}");
    assert!(opens(&s, "f.paraes", &["-i", "id_rsa"]).is_none());
    assert_eq!(
        opens(&s, "f.paraes", &["-i", "id_ed25519"]).as_deref(),
        Some(&plain[..])
    );
    // keygen -y prints a private key's public line (without its comment).
    let out = s.run(&["keygen", "-y", "id_ed25519"]);
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        format!("{} id_ed25519", printed.trim()),
        ed,
        "keygen -y of an SSH key"
    );
}

/// A locked key asks for its passphrase on the terminal, and only when a stanza's tag names
/// it; without a terminal it fails in one line that says what to do, and never reads the
/// passphrase from standard input.
#[test]
fn a_locked_key_asks_on_the_terminal_only_for_its_own_stanza() {
    let s = Scratch::new();
    let ed = keypair(&s, "locked", "ed25519", &[]);
    ssh_keygen(&s, &["-q", "-p", "-N", "pass words", "-f", "locked"]);
    let rsa = keypair(&s, "rsa_locked", "rsa", &["-b", "2048"]);
    ssh_keygen(&s, &["-q", "-p", "-N", "pass words", "-f", "rsa_locked"]);
    s.key_file("team.key", 256, 3, true);
    let plain = seeded_bytes(30, 5000);
    s.write("f", &plain);
    assert_success(
        &s.run(&["enc", "-q", "-r", &ed, "f"]),
        "enc to a locked key",
    );
    assert_success(
        &s.run(&["enc", "-q", "-r", &rsa, "f", "-o", "f.rsa.paraes"]),
        "enc to a locked RSA key",
    );
    assert_success(
        &s.run(&["enc", "-q", "-k", "team.key", "f", "-o", "g.paraes"]),
        "enc to a key file",
    );

    // No terminal: one line, what to do; the passphrase on standard input is not read.
    for (key, file) in [("locked", "f.paraes"), ("rsa_locked", "f.rsa.paraes")] {
        let before = s.names();
        let out = without_terminal(&s, &["dec", "-i", key, file, "-o", "out"], "pass words\n");
        let err = s.assert_refused(&out, &before, "a locked key without a terminal");
        assert!(
            err.contains(&format!("cannot unlock SSH key {key}"))
                && err.contains("no terminal")
                && err.contains("ssh-keygen -p"),
            "{err}"
        );
    }
    // A file with no stanza for the key: opened by the key file, nothing asked (no terminal
    // needed).
    let out = without_terminal(
        &s,
        &[
            "dec", "-i", "locked", "-k", "team.key", "g.paraes", "-o", "-",
        ],
        "",
    );
    assert_success(&out, "a locked key that no stanza names");
    assert_eq!(out.stdout, plain);

    // On a terminal (`script`): asked once, with the key's name; the typed passphrase opens it.
    let out = s.bash(
        "rm -f typed.log; \
         ( for i in $(seq 600); do grep -q 'Passphrase for' typed.log 2>/dev/null && break; \
           sleep 0.1; done; printf 'pass words\\n' ) \
         | timeout 120 script -qfec '\"$PARAES\" dec -i locked f.paraes -o tty.out' typed.log \
           >/dev/null; echo \"status=$?\"",
    );
    let log = String::from_utf8_lossy(&s.read("typed.log")).into_owned();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("status=0"),
        "{log}"
    );
    assert_eq!(
        log.matches("Passphrase for SSH key locked:").count(),
        1,
        "{log}"
    );
    assert!(
        !log.contains("pass words"),
        "the passphrase was echoed: {log}"
    );
    assert_eq!(s.read("tty.out"), plain);
}

/// Runs `paraes ARGS` on a terminal (`script`, logging to typed.log), answering each
/// passphrase prompt with `answer` as it appears, until paraes ends: (its exit status, how many
/// times it asked, the log).
fn on_a_terminal(s: &Scratch, args: &str, answer: &str) -> (String, usize, String) {
    let out = s.bash(&format!(
        r#"rm -f typed.log status.txt
        ( n=0; for i in $(seq 1200); do
            [ -e status.txt ] && break
            c=$(grep -o 'Passphrase for' typed.log 2>/dev/null | wc -l)
            if [ "$c" -gt "$n" ]; then n=$c; printf '{answer}\n'; fi
            sleep 0.1
          done ) \
        | timeout 150 script -qfec '"$PARAES" {args}; echo $? > status.txt' typed.log >/dev/null
        cat status.txt"#
    ));
    let log = String::from_utf8_lossy(&s.read("typed.log")).into_owned();
    let status = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (status, log.matches("Passphrase for SSH key").count(), log)
}

/// One locked key given twice (`-i locked -i ./locked -i locked`: one file, two paths) is asked
/// for its passphrase once, right or wrong (a wrong one made each copy ask again); beside a copy
/// of it without a passphrase, nothing is asked and that copy opens the file.
#[test]
fn one_locked_key_given_twice_is_asked_for_once() {
    let s = Scratch::new();
    let ed = keypair(&s, "locked", "ed25519", &[]);
    ssh_keygen(&s, &["-q", "-p", "-N", "pass words", "-f", "locked"]);
    std::fs::copy(s.path("locked"), s.path("copy")).unwrap();
    ssh_keygen(
        &s,
        &["-q", "-p", "-P", "pass words", "-N", "", "-f", "copy"],
    );
    let plain = seeded_bytes(34, 3000);
    s.write("f", &plain);
    assert_success(
        &s.run(&["enc", "-q", "-r", &ed, "f"]),
        "enc to a locked key",
    );

    let twice = "dec -i locked -i ./locked -i locked f.paraes -o tty.out";
    let (status, asked, log) = on_a_terminal(&s, twice, "wrong words");
    assert!(status != "0" && !status.is_empty(), "{log}");
    assert_eq!(asked, 1, "asked once for one key: {log}");
    assert!(
        log.contains("cannot unlock SSH key locked: the passphrase is wrong"),
        "{log}"
    );
    assert!(!s.exists("tty.out"));

    let (status, asked, log) = on_a_terminal(&s, twice, "pass words");
    assert_eq!((status.as_str(), asked), ("0", 1), "{log}");
    assert_eq!(s.read("tty.out"), plain);
    s.remove("tty.out");

    for both in ["-i locked -i copy", "-i copy -i locked"] {
        let args = format!("dec {both} f.paraes -o tty.out");
        let (status, asked, log) = on_a_terminal(&s, &args, "pass words");
        assert_eq!((status.as_str(), asked), ("0", 0), "{both}: {log}");
        assert_eq!(s.read("tty.out"), plain);
        s.remove("tty.out");
    }
}

/// A public key in PEM (`ssh-keygen -e -m PKCS8`, `-m PEM`) or RFC 4716 (`ssh-keygen -e`) form,
/// given to -r or -R, is refused as such (not as "a private key file") with the command that
/// makes its OpenSSH line; that command's line then works.
#[test]
fn a_public_key_in_pem_or_rfc_4716_form_is_refused_with_the_command_that_converts_it() {
    let s = Scratch::new();
    let rsa = keypair(&s, "id_rsa", "rsa", &["-b", "2048"]);
    s.write("f", b"data");
    for (mode, file, form, command) in [
        (
            "PKCS8",
            "key.pkcs8",
            "PEM (PKCS#8)",
            "ssh-keygen -i -m PKCS8 -f KEY",
        ),
        (
            "PEM",
            "key.pem",
            "PEM (PKCS#1)",
            "ssh-keygen -i -m PEM -f KEY",
        ),
        ("RFC4716", "key.rfc", "RFC 4716", "ssh-keygen -i -f KEY"),
    ] {
        let out = s.bash(&format!("ssh-keygen -e -m {mode} -f id_rsa.pub > {file}"));
        assert_success(&out, "ssh-keygen -e");
        // `-r TEXT` with TEXT starting with a dash is an unknown option to clap: given as
        // `--recipient=TEXT`.
        let text = format!("--recipient={}", String::from_utf8(s.read(file)).unwrap());
        for args in [
            vec!["enc", &text, "f", "-o", "new.paraes"],
            vec!["enc", "-R", file, "f", "-o", "new.paraes"],
        ] {
            let before = s.names();
            let out = s.run(&args);
            let err = s.assert_refused(&out, &before, &format!("{mode}: {}", &args[1][..2]));
            assert!(
                err.contains(&format!("a public key in {form} form"))
                    && err.contains(&format!("`{command}`"))
                    && !err.contains("private key"),
                "{mode}: {err}"
            );
        }
        // The advice, followed, gives the key's line.
        let out = s.bash(&command.replace("KEY", file));
        let line = String::from_utf8(assert_success_stdout(out, command)).unwrap();
        assert!(rsa.starts_with(line.trim()), "{mode}: {line}");
        assert_success(
            &s.run(&["enc", "-q", "-r", line.trim(), "f", "-o", "new.paraes"]),
            "enc to the converted line",
        );
        s.remove("new.paraes");
    }
}

/// The standard output of a command that must succeed.
fn assert_success_stdout(out: Output, what: &str) -> Vec<u8> {
    assert_success(&out, what);
    out.stdout
}

/// FIDO (sk-), ECDSA and certificate keys are refused with the reason, from -r and -R, never
/// skipped; so is a private key given as a recipient, a public key given as -i, and an SSH
/// private key given as -k.
#[test]
fn keys_that_cannot_decrypt_are_refused_with_the_reason() {
    let s = Scratch::new();
    s.write("f", b"data");
    s.key_file("k", 256, 1, true);
    assert_success(&s.run(&["enc", "-q", "-k", "k", "f"]), "enc");
    let ecdsa = keypair(&s, "ec", "ecdsa", &[]);
    let ed = keypair(&s, "id_ed25519", "ed25519", &[]);
    keypair(&s, "ca", "ed25519", &[]);
    ssh_keygen(
        &s,
        &["-q", "-s", "ca", "-I", "me", "-n", "me", "id_ed25519.pub"],
    );
    let cert = String::from_utf8(s.read("id_ed25519-cert.pub")).unwrap();
    // An sk-ssh-ed25519@openssh.com key: its type, a 32-byte key, the application "ssh:".
    let sk = "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIBYuRgZDXDBDwMvYf/Y+7W+7IwG3Q4bF4f5w7ya1AP/4AAAABHNzaDo= me@token";
    s.write("team", format!("{ed}\n{sk}\n").as_bytes());
    s.write("certs", cert.as_bytes());
    for (args, needle) in [
        (
            vec!["enc", "-r", sk, "f", "-o", "new.paraes"],
            "FIDO security key",
        ),
        (
            vec!["enc", "-R", "team", "f", "-o", "new.paraes"],
            "line 2: a FIDO security key",
        ),
        (
            vec!["enc", "-r", &ecdsa, "f", "-o", "new.paraes"],
            "an ECDSA key",
        ),
        (
            vec!["enc", "-R", "certs", "f", "-o", "new.paraes"],
            "an OpenSSH certificate",
        ),
        (
            vec!["enc", "-R", "id_ed25519", "f", "-o", "new.paraes"],
            "private key file, not a public key",
        ),
        (
            vec!["dec", "-i", "id_ed25519.pub", "f.paraes"],
            "public key, not a private key",
        ),
        (vec!["dec", "-i", "ec", "f.paraes"], "ECDSA"),
        (
            vec!["enc", "-k", "id_ed25519", "f", "-o", "new.paraes"],
            "give it with -i",
        ),
    ] {
        let before = s.names();
        let out = s.run(&args);
        let err = s.assert_refused(&out, &before, &format!("{args:?}"));
        assert!(err.contains(needle), "{args:?}: {err}");
        if needle.contains("FIDO") {
            assert!(err.contains("cannot decrypt"), "{err}");
        }
    }
}

/// Hostile SSH keys fail in one line, never with a panic: truncated key files, a public key
/// line of the wrong type or cut short, a tiny RSA key, a point not on the curve, too many
/// bcrypt rounds.
#[test]
fn hostile_ssh_keys_fail_in_one_line() {
    let s = Scratch::new();
    s.write("f", b"data");
    s.key_file("k", 256, 1, true);
    assert_success(&s.run(&["enc", "-q", "-k", "k", "f"]), "enc");
    let ed = keypair(&s, "id_ed25519", "ed25519", &[]);
    let rsa = keypair(&s, "id_rsa", "rsa", &["-b", "2048"]);
    let small = keypair(&s, "small", "rsa", &["-b", "1024"]);
    keypair(&s, "slow", "ed25519", &[]);
    ssh_keygen(&s, &["-q", "-p", "-a", "1025", "-N", "pw", "-f", "slow"]);
    let key = String::from_utf8(s.read("id_ed25519")).unwrap();
    s.secret("cut", &key.as_bytes()[..key.len() / 2]);
    keypair(&s, "pem", "rsa", &["-b", "2048", "-m", "PEM"]);
    let text = String::from_utf8(s.read("pem")).unwrap();
    s.secret("cut_pem", &text.as_bytes()[..text.len() - 300]);
    let ed_data = ed.split(' ').nth(1).unwrap();
    let rsa_data = rsa.split(' ').nth(1).unwrap();
    let wrong_type = format!("ssh-ed25519 {rsa_data}");
    let cut_line = format!("ssh-ed25519 {}", &ed_data[..30]);
    // ssh-ed25519 with 32 bytes that are no point of the curve (y = 2).
    let not_a_point =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    for (args, needle) in [
        (vec!["dec", "-i", "cut", "f.paraes"], "does not parse"),
        (vec!["dec", "-i", "cut_pem", "f.paraes"], "does not parse"),
        (
            vec!["enc", "-r", &wrong_type, "f", "-o", "new.paraes"],
            "not a whole ssh-ed25519 key",
        ),
        (
            vec!["enc", "-r", &cut_line, "f", "-o", "new.paraes"],
            "not a whole",
        ),
        (
            vec!["enc", "-r", &small, "f", "-o", "new.paraes"],
            "1024 bits",
        ),
        (
            vec!["enc", "-r", not_a_point, "f", "-o", "new.paraes"],
            "not a point",
        ),
        (vec!["dec", "-i", "slow", "f.paraes"], "1025 bcrypt rounds"),
    ] {
        let before = s.names();
        let out = s.run(&args);
        let err = s.assert_refused(&out, &before, &format!("{args:?}"));
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!stderr(&out).contains("panicked"));
    }
}

/// SSH recipients mix with key files, passphrases and paraes recipients, and with `rekey`;
/// beside a post-quantum recipient they bring a warning that the file is only as safe as
/// they are.
#[test]
fn ssh_stanzas_mix_with_every_kind_and_rekey() {
    let s = Scratch::new();
    let ed = keypair(&s, "id_ed25519", "ed25519", &[]);
    let rsa = keypair(&s, "id_rsa", "rsa", &["-b", "2048"]);
    s.key_file("team.key", 256, 1, true);
    s.secret("pass", b"a long enough passphrase\n");
    assert_success(&s.run(&["keygen", "--x25519", "-o", "me.id"]), "keygen");
    assert_success(&s.run(&["keygen", "--pq", "-o", "pq.id"]), "keygen --pq");
    let me = String::from_utf8(s.run(&["keygen", "-y", "me.id"]).stdout).unwrap();
    let pq = String::from_utf8(s.run(&["keygen", "-y", "pq.id"]).stdout).unwrap();
    let plain = seeded_bytes(31, 40_000);
    s.write("f", &plain);
    let out = s.run(&[
        "enc",
        "-k",
        "team.key",
        "--passphrase-file",
        "pass",
        "-r",
        me.trim(),
        "-r",
        &ed,
        "f",
    ]);
    assert!(stderr(&out).is_empty(), "no warning: {}", stderr(&out));
    assert_success(&out, "enc to a mix");
    for unlock in [
        &["-k", "team.key"][..],
        &["--passphrase-file", "pass"],
        &["-i", "me.id"],
        &["-i", "id_ed25519"],
    ] {
        assert_eq!(
            opens(&s, "f.paraes", unlock).as_deref(),
            Some(&plain[..]),
            "{unlock:?}"
        );
    }
    // rekey: open with the SSH key, hand the file to the RSA key alone.
    let out = s.run(&[
        "rekey",
        "--force",
        "-i",
        "id_ed25519",
        "--new-recipient",
        &rsa,
        "f.paraes",
    ]);
    assert_success(&out, "rekey to an SSH key");
    assert_eq!(
        opens(&s, "f.paraes", &["-i", "id_rsa"]).as_deref(),
        Some(&plain[..])
    );
    assert!(opens(&s, "f.paraes", &["-i", "id_ed25519"]).is_none());
    assert!(opens(&s, "f.paraes", &["-k", "team.key"]).is_none());
    // Beside a post-quantum recipient: a warning, and the file still opens with both.
    let out = s.run(&["enc", "-r", pq.trim(), "-r", &ed, "f", "-o", "pq.paraes"]);
    let warning = assert_success(&out, "enc to pq and ssh");
    assert!(
        warning.contains("post-quantum") && warning.contains("only as safe"),
        "{warning}"
    );
    for unlock in [&["-i", "pq.id"][..], &["-i", "id_ed25519"]] {
        assert_eq!(
            opens(&s, "pq.paraes", unlock).as_deref(),
            Some(&plain[..]),
            "{unlock:?}"
        );
    }
}

/// An 8192-bit RSA key (the SSH testkit's, in PEM) seals and opens; its stanza is 1,076 bytes.
#[test]
fn an_8192_bit_rsa_key_works() {
    let s = Scratch::new();
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/testkit/ssh/manifest.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let key = manifest
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["file"].as_str().unwrap().contains("rsa8192"))
        .expect("the kit's 8192-bit key")["identities"][0]["key"]
        .as_str()
        .unwrap()
        .to_string();
    s.secret("big", key.as_bytes());
    let line = String::from_utf8(s.run(&["keygen", "-y", "big"]).stdout).unwrap();
    let plain = seeded_bytes(32, 3000);
    s.write("f", &plain);
    assert_success(
        &s.run(&["enc", "-q", "-r", line.trim(), "f"]),
        "enc to 8192 bits",
    );
    let info = String::from_utf8(s.run(&["info", "f.paraes"]).stdout).unwrap();
    assert!(info.contains("ssh-rsa recipient"), "{info}");
    // The stanza's length: kind (1) and length (2) then 4 + 1024 + 48 bytes.
    let file = s.read("f.paraes");
    assert_eq!(file[64 + 10], 6);
    assert_eq!(u16::from_be_bytes([file[64 + 11], file[64 + 12]]), 1076);
    assert_eq!(
        opens(&s, "f.paraes", &["-i", "big"]).as_deref(),
        Some(&plain[..])
    );
}

/// README's SSH section runs as written, with ~/.ssh made by ssh-keygen.
#[test]
fn readme_ssh_commands_run_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## SSH keys")
        .nth(1)
        .expect("README has an SSH keys section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a sh block in README's SSH section");
    let commands: Vec<&str> = block
        .lines()
        .map(|line| line.split("  #").next().unwrap().trim())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    assert_eq!(commands.len(), 2, "{block}");
    let s = Scratch::new();
    std::fs::create_dir(s.path(".ssh")).unwrap();
    let ed = keypair(&s, ".ssh/id_ed25519", "ed25519", &[]);
    let rsa = keypair(&s, ".ssh/colleague", "rsa", &["-b", "2048"]);
    s.write(".ssh/authorized_keys", format!("{rsa}\n").as_bytes());
    assert!(ed.starts_with("ssh-ed25519 "));
    let plain = seeded_bytes(33, 12345);
    s.write("report.pdf", &plain);
    for command in &commands {
        let out = Command::new("bash")
            .args(["-c", &command.replacen("paraes", "\"$PARAES\"", 1)])
            .env("PARAES", bin())
            .env("HOME", s.path(""))
            .current_dir(s.path(""))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = assert_success(&out, command);
        assert!(err.is_empty(), "{command}: {err}");
    }
    assert_eq!(s.read("report-copy.pdf"), plain);
}
