//! Ctrl-C, Ctrl-\ (SIGQUIT), SIGTERM and SIGHUP: one thread waits for them, puts the terminal
//! back if a passphrase prompt had turned echo off, removes the named temporary outputs (the
//! fallback when the file system has no O_TMPFILE, and `--force`'s copy renamed over the old
//! file; a many-file run may have several at once), says what was left, and exits with 128 +
//! the signal's number (130, 131, 143, 129), as shells expect. SIGXFSZ is caught, so that a
//! write past `ulimit -f` fails with an error paraes reports. No signal (a crash's SIGSEGV or
//! SIGABRT) dumps core: a core file would hold every key and passphrase the process has in
//! memory.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use paraes_files::pending::{clean_up_for_exit, Pending};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGXFSZ};
use signal_hook::iterator::Signals;

/// Turns core dumps off, starts the thread that handles the signals, and catches SIGXFSZ.
pub fn install() -> Result<()> {
    // Before any secret is read. Soft and hard limit: nothing in the process raises it again.
    // Best effort (the process is no less safe than before when it fails).
    let no_core = rustix::process::Rlimit {
        current: Some(0),
        maximum: Some(0),
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Core, no_core);
    // A write past the process's file size limit (`ulimit -f`) sends SIGXFSZ, whose default
    // kills the process before it can say why or clean up; caught, the write fails with EFBIG
    // instead, which the file layer reports. (The flag it sets is not read.)
    signal_hook::flag::register(SIGXFSZ, Arc::new(AtomicBool::new(false)))
        .context("cannot install the signal handlers")?;
    let mut signals = Signals::new([SIGINT, SIGQUIT, SIGTERM, SIGHUP])
        .context("cannot install the signal handlers")?;
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

/// Whether this process leaves the telling to another (an MPI rank other than 0).
static SILENT: AtomicBool = AtomicBool::new(false);

/// A signal still cleans up and exits with its status, but prints nothing: for MPI ranks other
/// than 0, whose launcher signals every rank at once (Open MPI's `mpirun` sends SIGTERM to the
/// rest when rank 0 exits with a failure it has printed), so rank 0 alone speaks for the job.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn silence() {
    SILENT.store(true, Ordering::SeqCst);
}

fn interrupted(signal: i32) -> ! {
    crate::prompt::restore_terminal();
    let pending = clean_up_for_exit();
    if SILENT.load(Ordering::SeqCst) {
        std::process::exit(128 + signal);
    }
    let name = match signal {
        SIGINT => "interrupted",
        SIGTERM => "terminated",
        SIGQUIT => "quit",
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
