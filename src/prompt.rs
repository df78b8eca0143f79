//! The passphrase prompt on the controlling terminal: echo off while typing, and restored by
//! whoever ends the process (Enter, an error, or Ctrl-C through `signals.rs`), so that an
//! interrupted prompt always exits 130 with a working terminal. It asks for the passphrase of
//! `-p`, and for that of an SSH key given with `-i` ([`SshKeyPassphrase`], which the core calls
//! only when a stanza's tag names the key). Only the terminal is asked, never standard input:
//! without one, the error says what to do.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use paraes_core::container::AskPassphrase;
use rustix::termios::{self, LocalModes, OptionalActions, Termios};
use zeroize::Zeroizing;

/// The terminal and its settings from before the prompt, while echo is off.
static SAVED: Mutex<Option<(File, Termios)>> = Mutex::new(None);

/// Puts the terminal back as it was, if a prompt turned echo off (called by the signal
/// handler before it exits).
pub fn restore_terminal() {
    let mut saved = SAVED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((tty, settings)) = saved.take() {
        let _ = termios::tcsetattr(&tty, OptionalActions::Now, &settings);
        // The user's Enter never came: end the prompt's line.
        let _ = (&tty).write_all(b"\n");
    }
    // Kept locked until the process exits, so that no prompt can turn echo off after this.
    std::mem::forget(saved);
}

/// Asks for a passphrase on the terminal; `confirm` asks twice.
pub fn passphrase(confirm: bool) -> Result<Zeroizing<Vec<u8>>> {
    let first = ask("Passphrase: ")?;
    if first.is_empty() {
        bail!("the passphrase is empty: type one, or use a key file");
    }
    if confirm && ask("Passphrase again: ")? != first {
        bail!("the two passphrases differ: try again");
    }
    Ok(first)
}

/// Asks on the terminal for the passphrase of an SSH private key, when the core finds a stanza
/// for it: once per key, never on standard input.
pub struct SshKeyPassphrase;

impl AskPassphrase for SshKeyPassphrase {
    fn ask(&self, what: &str) -> std::result::Result<Zeroizing<Vec<u8>>, String> {
        let Ok(tty) = open_tty() else {
            return Err(
                "it has a passphrase and there is no terminal to ask for it (paraes never reads \
                 it from standard input): run paraes in a terminal, or give a copy of the key \
                 without a passphrase (`ssh-keygen -p -N '' -f COPY`)"
                    .into(),
            );
        };
        let answer =
            ask_on(tty, &format!("Passphrase for {what}: ")).map_err(|e| format!("{e:#}"))?;
        if answer.is_empty() {
            return Err("the passphrase is empty: run again and type it".into());
        }
        Ok(answer)
    }
}

/// The controlling terminal, for reading and writing.
fn open_tty() -> std::io::Result<File> {
    OpenOptions::new().read(true).write(true).open("/dev/tty")
}

/// One line from the terminal with echo off.
fn ask(prompt: &str) -> Result<Zeroizing<Vec<u8>>> {
    let tty = open_tty()
        .context("no terminal to ask for the passphrase: use --passphrase-file PATH (or - for standard input)")?;
    ask_on(tty, prompt)
}

/// One line from `tty` (the terminal) with echo off, after `prompt`.
fn ask_on(tty: File, prompt: &str) -> Result<Zeroizing<Vec<u8>>> {
    let settings = termios::tcgetattr(&tty).context("/dev/tty is not a terminal")?;
    let mut quiet = settings.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    quiet.local_modes.insert(LocalModes::ECHONL);
    let saved_tty = tty.try_clone().context("/dev/tty")?;
    let echo_off = {
        // Held while echo goes off, so that a signal thread restoring the terminal runs
        // either before (and finds nothing to restore, echo still on) or after.
        let mut saved = SAVED.lock().unwrap_or_else(|e| e.into_inner());
        *saved = Some((saved_tty, settings));
        termios::tcsetattr(&tty, OptionalActions::Flush, &quiet)
    };
    let answer = echo_off
        .map_err(std::io::Error::from)
        .and_then(|()| (&tty).write_all(prompt.as_bytes()))
        .and_then(|()| read_line(&tty));
    // Restore before looking at the outcome: the terminal is never left without echo. Under
    // the lock, so that a signal thread that finds nothing to restore exits only after this
    // has restored it (else Ctrl-C just after Enter could exit between the two).
    {
        let mut saved = SAVED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((tty, settings)) = saved.take() {
            let _ = termios::tcsetattr(&tty, OptionalActions::Now, &settings);
        }
    }
    answer.context("reading the passphrase from the terminal failed")
}

/// Reads up to a newline, a byte at a time so that no buffer but `line` (zeroized) holds the
/// passphrase. An interrupted read is retried: Ctrl-C is handled by the signal thread, which
/// restores the terminal and exits 130 (one behaviour, never a race).
fn read_line(mut tty: &File) -> std::io::Result<Zeroizing<Vec<u8>>> {
    // Never reallocated (which would leave copies behind): a longer line is refused.
    const MAX: usize = 4096;
    let mut line = Zeroizing::new(Vec::with_capacity(MAX));
    let mut byte = Zeroizing::new([0u8; 1]);
    loop {
        match tty.read(&mut byte[..]) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if line.len() == MAX => {
                return Err(std::io::Error::other(
                    "the passphrase is longer than 4096 bytes",
                ))
            }
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(line)
}
