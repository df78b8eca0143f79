//! The `paraes` command-line tool: parses arguments and reports errors; the work happens in
//! paraes-core (AES, engines, container, pipeline) and the glue modules beside this file.

mod backend;
mod bench;
mod cli;
mod commands;
mod keys;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(not(feature = "mpi"))]
#[path = "mpi_stub.rs"]
mod mpi;
mod output;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    if let Err(e) = output::install_interrupt_handler() {
        eprintln!("paraes: error: {e:#}");
        return ExitCode::FAILURE;
    }
    match commands::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        // `paraes dec x | head`: the reader left; that is a normal end, not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        // Another process (MPI rank 0) has already told the user.
        Err(e) if e.is::<Reported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("paraes: error: {}", one_line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

/// `text` with control characters escaped (`\n`, `\t`, ...), so that a file name holding a
/// newline cannot split an error into several lines.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A failure that has already been reported to the user by another process of the same job.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the job failed (reported by rank 0)")
    }
}

impl std::error::Error for Reported {}

/// Help and version go out as clap prints them; usage errors become one line.
fn usage_error(e: &clap::Error) -> ExitCode {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(e.exit_code() as u8);
    }
    let rendered = e.render().to_string();
    let message = rendered
        .split("\nUsage:")
        .next()
        .unwrap_or_default()
        .split("\nFor more information")
        .next()
        .unwrap_or_default();
    let message = message.trim_start_matches("error:");
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!("paraes: error: {one_line} (see paraes --help)");
    ExitCode::from(2)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
