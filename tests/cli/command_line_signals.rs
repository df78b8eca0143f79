//! Signals and the command line: SIGKILL leaves no file behind, a signal ends paraes with
//! 128 + its number (and no output file), and Ctrl-C at the passphrase prompt exits 130 with
//! the terminal restored.

use std::process::{Child, Command, Stdio};

use crate::command_line::prepared;
use crate::common::{
    bin, blocked_reading, find_process, reads_the_terminal_without_echo, send_signal, stderr,
    unfinished_output, wait_until, Scratch,
};

/// Starts `paraes ARGS` reading from a pipe that stays open, once it is waiting for data.
fn blocked(s: &Scratch, args: &[&str]) -> Child {
    let child = s
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paraes runs");
    // Wait until it has its unfinished output open in the scratch directory (unnamed or hidden:
    // its /proc fd table) and sits in its read of the empty pipe (a thread in read(2) on fd 0):
    // a signal before that finds no output to clean up, and fixed sleeps were not always long
    // enough on a loaded machine.
    let pid = child.id();
    let dir = s.path("");
    wait_until(
        20,
        "paraes to open its output and block reading the empty pipe",
        || unfinished_output(pid, &dir).is_some() && blocked_reading(pid, 0),
    );
    child
}

#[test]
fn sigkill_leaves_no_file_behind() {
    let s = prepared();
    let before = s.names();
    let dir = s.path("");
    for args in [
        &["enc", "-k", "key", "-o", "out.paraes"][..],
        &["enc", "-k", "key", "--raw", "ctr", "-o", "out.ctr"],
    ] {
        let mut child = blocked(&s, args);
        let pid = child.id();
        child
            .stdin
            .as_mut()
            .map(|stdin| std::io::Write::write_all(stdin, &vec![0u8; 13 << 20]))
            .expect("stdin")
            .expect("fed");
        // Killed once two whole 4 MiB windows went out to its unfinished output (the pipe stays
        // open: the third is held back until the fourth shows whether it is the last, and the
        // fourth waits for the rest of its bytes).
        wait_until(20, "two windows in the unfinished output", || {
            unfinished_output(pid, &dir).is_some_and(|len| len >= 8 << 20)
        });
        send_signal(pid, "KILL");
        child.wait().expect("paraes ends");
        assert_eq!(s.names(), before, "{args:?}: SIGKILL left a file behind");
    }
}

#[test]
fn signals_exit_with_128_plus_their_number() {
    let s = prepared();
    let before = s.names();
    for (signal, status) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let mut child = blocked(&s, &["enc", "-k", "key", "-o", "out.paraes"]);
        // Its input stays open until it has exited (wait_with_output would close it): an end of
        // input meanwhile would let it finish the job while the signal is being handled.
        let input = child.stdin.take();
        send_signal(child.id(), signal);
        let out = child.wait_with_output().expect("paraes ends");
        drop(input);
        assert_eq!(
            out.status.code(),
            Some(status),
            "SIG{signal}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("no output file was left behind"),
            "SIG{signal}: {}",
            stderr(&out)
        );
        assert_eq!(s.names(), before, "SIG{signal} left a file behind");
    }
}

#[test]
fn ctrl_c_at_the_passphrase_prompt_exits_130_with_the_terminal_restored() {
    let s = prepared();
    s.write(
        "run.sh",
        b"\"$PARAES\" enc -p f -o prompt-marker.paraes\necho \"status=$?\"\nstty -a\n",
    );
    s.set_mode("run.sh", 0o700);
    for round in 0..5 {
        let mut child = Command::new("script")
            .args(["-qec", "sh run.sh", "/dev/null"])
            .env("PARAES", bin())
            .current_dir(s.path(""))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the `script` command (util-linux) runs");
        let mut pid = None;
        wait_until(10, "paraes to start under script", || {
            pid = find_process("prompt-marker");
            pid.is_some()
        });
        let pid = pid.expect("found");
        // Interrupted once it has turned echo off and sits in its read of the passphrase (after
        // the prompt): then there is a terminal to restore.
        wait_until(
            20,
            "paraes to turn echo off and read the passphrase",
            || reads_the_terminal_without_echo(pid),
        );
        // The terminal's input stays open until paraes has exited (see
        // signals_exit_with_128_plus_their_number).
        let input = child.stdin.take();
        send_signal(pid, "INT");
        let out = child.wait_with_output().expect("script ends");
        drop(input);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains("status=130"), "round {round}: {text}");
        assert!(!text.contains("no terminal"), "round {round}: {text}");
        // `stty -a` lists "echo" (not "-echo") once the terminal is restored.
        assert!(
            text.split_whitespace().any(|flag| flag == "echo"),
            "round {round}: echo is still off: {text}"
        );
        assert!(!s.exists("prompt-marker.paraes"));
    }
}
