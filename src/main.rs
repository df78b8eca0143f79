//! The `paraes` command-line tool: parses the arguments, builds a validated plan (`plan/`),
//! runs it, and turns the outcome into an exit status: 0, 1 for an error, 2 for a usage error,
//! 128 + N for signal N. The work happens in the library crates; the modules beside this file
//! are glue: `plan/` (every option rule), `keys/` (key sources), `run/` (enc and dec on their
//! runners: local, many files, range, MPI), `commands/` (the other subcommands), and the shared
//! pieces (engines, output, progress, advice). ARCHITECTURE.md has the map.

/// std's `eprintln!`, which panics when standard error cannot be written (`2>/dev/full`, a
/// reader that left): a warning then ended the job with status 101 and no output. A message
/// standard error cannot take is dropped instead (nothing else could be done with it); what
/// must reach the user (a raw stream's IV) is written with its error handled.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` as [`eprintln!`] is: never a panic.
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

mod advice;
mod cli;
mod commands;
mod engines;
mod files;
mod keys;
mod plan;
mod progress;
mod prompt;
mod run;
mod signals;
mod units;
mod usage;

use std::process::ExitCode;

use anyhow::Result;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};

use crate::cli::Cli;
use crate::plan::{Plan, UsageError};
use crate::run::prepare::Reported;

/// Large buffers start on a page boundary, so the kernel copies file data in and out of them at
/// full speed (`paraes_files::page_aligned` says why).
#[global_allocator]
static ALLOCATOR: paraes_files::PageAlignedLarge = paraes_files::PageAlignedLarge;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e),
    };
    if let Err(e) = signals::install() {
        eprintln!("paraes: error: {e:#}");
        return ExitCode::FAILURE;
    }
    match plan::build(cli.command).and_then(execute) {
        Ok(()) => ExitCode::SUCCESS,
        // `paraes dec x | head`: the reader left; that is a normal end, not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        // Another process (MPI rank 0) has already told the user.
        Err(e) if e.is::<Reported>() => ExitCode::FAILURE,
        Err(e) => match e.downcast_ref::<UsageError>() {
            Some(usage) => {
                eprintln!(
                    "paraes: error: {} (see paraes {} --help)",
                    advice::one_line(&usage.message),
                    usage.command
                );
                ExitCode::from(2)
            }
            None => {
                eprintln!("paraes: error: {}", advice::error_line(&e));
                ExitCode::FAILURE
            }
        },
    }
}

/// Runs a plan.
fn execute(plan: Plan) -> Result<()> {
    match plan {
        Plan::Crypt(plan) => run::run(&plan),
        Plan::Verify(plan) => commands::verify::run(&plan),
        Plan::Rekey(plan) => commands::rekey::run(&plan),
        Plan::Upgrade(plan) => commands::upgrade::run(&plan),
        Plan::Keygen(args) => commands::keygen::run(&args),
        Plan::Info(args) => commands::info::run(&args),
        Plan::Bench(args) => commands::bench::run(&args),
        // Rendered whole, then written: a closed pipe (`| head`) is a normal end, not a panic.
        Plan::Completions(shell) => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "paraes", &mut script);
            progress::print_out(&script)
        }
        Plan::Man(dir) => commands::man::run(dir.as_deref()),
    }
}

/// Names other tools use for our backends.
const BACKEND_SYNONYMS: [(&str, &str); 9] = [
    ("cuda", "gpu"),
    ("nvidia", "gpu"),
    ("ptx", "gpu"),
    ("sunway", "sunway-sim"),
    ("sw26010", "sunway-sim"),
    ("sim", "sunway-sim"),
    ("aesni", "cpu"),
    ("vaes", "cpu"),
    ("mpich", "mpi"),
];

/// Help and version go out as clap prints them; usage errors become one line that points at
/// the subcommand's help, with exit status 2.
fn clap_error(e: &clap::Error) -> ExitCode {
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
    let mut line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if let (ErrorKind::UnknownArgument, Some(ContextValue::String(arg))) =
        (e.kind(), e.get(ContextKind::InvalidArg))
    {
        let subcommand = std::env::args().nth(1).unwrap_or_default();
        if let Some(hint) = misplaced_option_hint(&subcommand, arg) {
            // clap's tip ("to pass '-i' as a value, use '-- -i'") would mislead here.
            if let Some(at) = line.find(" tip:") {
                line.truncate(at);
            }
            line.push_str(": ");
            line.push_str(hint);
        }
    }
    if let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidValue) {
        if let Some((_, ours)) = BACKEND_SYNONYMS
            .iter()
            .find(|(theirs, _)| theirs.eq_ignore_ascii_case(value))
        {
            // clap's own tip would name the nearest spelling (cuda -> cpu): say what is meant.
            if let Some(at) = line.find(" tip:") {
                line.truncate(at);
            }
            line.push_str(&format!(": for {value}, use --backend {ours}"));
        }
    }
    eprintln!(
        "paraes: error: {} (see {} --help)",
        advice::one_line(&line),
        help_target()
    );
    ExitCode::from(2)
}

/// What to do instead of an option that belongs to another subcommand.
fn misplaced_option_hint(subcommand: &str, arg: &str) -> Option<&'static str> {
    let name = arg.split('=').next().unwrap_or(arg);
    Some(match (subcommand, name) {
        ("enc", "-i" | "--identity") => "enc encrypts to recipients (-r RECIPIENT, -R FILE); -i is for dec (print an identity's recipient with `paraes keygen -y FILE`)",
        ("enc", "--show-data-key" | "--max-kdf-mib" | "--force-raw") => "that option is for dec",
        ("dec", "-r" | "--recipient" | "-R" | "--recipients-file") => "dec opens with identities (-i FILE), not recipients",
        ("dec", "-m" | "--mode" | "--bits" | "--chunk-size") => "dec reads the mode, key size and chunk size from the container header (a raw stream: --raw MODE)",
        _ => return None,
    })
}

/// `paraes SUBCOMMAND` when the command line names a known subcommand, else `paraes`.
fn help_target() -> String {
    let command = Cli::command();
    let named = std::env::args().nth(1).filter(|arg| {
        command
            .get_subcommands()
            .any(|sub| sub.get_name() == arg.as_str())
    });
    match named {
        Some(sub) => format!("paraes {sub}"),
        None => "paraes".to_owned(),
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// The test-only reference engine (src/engines/reference.rs), chosen by name on the command
    /// line like any engine, encrypts a file that the CPU
    /// engine decrypts, and the other way round.
    #[test]
    fn a_registered_engine_runs_enc_and_dec_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
        std::fs::write(path("key"), [9u8; 32]).unwrap();
        let plain: Vec<u8> = (0..100_000u32).map(|i| (i * 31 + 7) as u8).collect();
        std::fs::write(path("plain"), &plain).unwrap();
        let run = |args: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(["paraes"].iter().chain(args).chain(&[
                "-q",
                "-k",
                &path("key"),
            ]))
            .unwrap();
            match crate::plan::build(cli.command).unwrap() {
                crate::plan::Plan::Crypt(plan) => crate::run::run(&plan).unwrap(),
                _ => unreachable!("enc and dec make crypt plans"),
            }
        };
        for (enc, dec) in [("reference-test", "cpu"), ("cpu", "reference-test")] {
            let (sealed, opened) = (path(&format!("{enc}.paraes")), path(&format!("{enc}.out")));
            run(&["enc", "--backend", enc, &path("plain"), "-o", &sealed]);
            run(&["dec", "--backend", dec, &sealed, "-o", &opened]);
            assert_eq!(std::fs::read(&opened).unwrap(), plain, "{enc} -> {dec}");
        }
    }

    /// The kernel copies into a buffer 1 to 31 bytes past its source's place in a page three to
    /// four times slower on AMD Zen; the system allocator put large blocks 16 bytes past a page.
    #[test]
    fn large_buffers_start_on_a_page() {
        for len in [64 << 10, 1 << 20, 4 << 20, (4 << 20) + 4096] {
            let buffer = Vec::<u8>::with_capacity(len);
            assert_eq!(
                buffer.as_ptr() as usize % paraes_files::page_aligned::PAGE,
                0,
                "{len} bytes"
            );
        }
    }
}
