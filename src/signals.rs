//! Ctrl-C, SIGTERM and SIGHUP: one thread waits for them, puts the terminal back if a
//! passphrase prompt had turned echo off, removes the named temporary outputs (the fallback
//! when the file system has no O_TMPFILE; a many-file run may have several at once), says what
//! was left, and exits with 128 + the signal's number (130, 143, 129), as shells expect.

use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// What an interrupted job leaves behind.
#[derive(Default)]
pub enum Pending {
    /// No output is being written.
    #[default]
    Nothing,
    /// Standard output, a FIFO or a device: what went out cannot be taken back.
    Stream,
    /// An unnamed temporary file: it vanishes with the process.
    Anonymous,
    /// A named temporary file, to remove (kept in the list of them until [`named_done`]).
    Named(PathBuf),
}

static PENDING: Mutex<Pending> = Mutex::new(Pending::Nothing);

/// Every named temporary written now (several in a many-file run).
static NAMED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Records what an interruption would leave behind now.
pub fn set_pending(pending: Pending) {
    if let Pending::Named(path) = &pending {
        NAMED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.clone());
    }
    *PENDING.lock().unwrap_or_else(|e| e.into_inner()) = pending;
}

/// The named temporary `path` is gone (renamed into place or removed): a signal leaves it be.
pub fn named_done(path: &std::path::Path) {
    NAMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|p| p != path);
}

/// Starts the thread that handles the signals.
pub fn install() -> Result<()> {
    let mut signals =
        Signals::new([SIGINT, SIGTERM, SIGHUP]).context("cannot install the signal handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                interrupted(signal);
            }
        })
        .context("cannot start the signal thread")?;
    Ok(())
}

fn interrupted(signal: i32) -> ! {
    crate::prompt::restore_terminal();
    let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
    let named = std::mem::take(&mut *NAMED.lock().unwrap_or_else(|e| e.into_inner()));
    for path in &named {
        let _ = std::fs::remove_file(path);
    }
    let name = match signal {
        SIGINT => "interrupted",
        SIGTERM => "terminated",
        _ => "hung up",
    };
    match pending {
        Pending::Nothing => eprintln!("paraes: {name}"),
        Pending::Anonymous => eprintln!("paraes: {name}: no output file was left behind"),
        Pending::Named(_) => eprintln!("paraes: {name}: no output file was left behind"),
        Pending::Stream => {
            eprintln!("paraes: {name}: anything already written to the output stream is incomplete")
        }
    }
    std::process::exit(128 + signal);
}
