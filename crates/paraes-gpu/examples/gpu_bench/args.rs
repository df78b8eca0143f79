//! gpu_bench's command line.

use std::path::PathBuf;

use crate::common::{GIB, MIB};

/// The command line (the options: the example's documentation, main.rs).
pub(crate) struct Args {
    pub(crate) json: Option<String>,
    pub(crate) max_bytes: usize,
    pub(crate) reps: usize,
    pub(crate) quick: bool,
    pub(crate) paraes: Option<PathBuf>,
    pub(crate) tool_max_bytes: usize,
    pub(crate) shm: PathBuf,
    pub(crate) tool_only: bool,
    pub(crate) tool_backend: String,
    pub(crate) probe: bool,
    pub(crate) cobblestone_only: bool,
    pub(crate) load_bytes: usize,
    pub(crate) kernel_bytes: Option<usize>,
}

/// Reads the command line (`--help` prints it; an unknown option or a bad value exits 2).
pub(crate) fn args() -> Args {
    let mut args = Args {
        json: None,
        max_bytes: 4 * GIB,
        reps: 20,
        quick: false,
        paraes: None,
        tool_max_bytes: 8 * GIB,
        shm: PathBuf::from("/dev/shm"),
        tool_only: false,
        tool_backend: "gpu".into(),
        probe: false,
        cobblestone_only: false,
        load_bytes: 16 * GIB,
        kernel_bytes: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .unwrap_or_else(|| die(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--json" => args.json = Some(value("--json")),
            "--max-bytes" => {
                args.max_bytes = value("--max-bytes")
                    .parse()
                    .unwrap_or_else(|_| die("bad --max-bytes"))
            }
            "--reps" => {
                args.reps = value("--reps")
                    .parse()
                    .unwrap_or_else(|_| die("bad --reps"))
            }
            "--quick" => args.quick = true,
            "--paraes" => args.paraes = Some(PathBuf::from(value("--paraes"))),
            "--skip-tool" => args.paraes = None,
            "--tool-only" => args.tool_only = true,
            "--probe" => args.probe = true,
            "--cobblestone" => args.cobblestone_only = true,
            "--kernel-bytes" => {
                args.kernel_bytes = Some(
                    value("--kernel-bytes")
                        .parse()
                        .unwrap_or_else(|_| die("bad --kernel-bytes")),
                )
            }
            "--load-bytes" => {
                args.load_bytes = value("--load-bytes")
                    .parse()
                    .unwrap_or_else(|_| die("bad --load-bytes"))
            }
            "--tool-backend" => args.tool_backend = value("--tool-backend"),
            "--shm" => args.shm = PathBuf::from(value("--shm")),
            "--tool-max-bytes" => {
                args.tool_max_bytes = value("--tool-max-bytes")
                    .parse()
                    .unwrap_or_else(|_| die("bad --tool-max-bytes"))
            }
            "-h" | "--help" => {
                say!(
                    "usage: gpu_bench [--json PATH] [--max-bytes N] [--reps N] [--quick] \
                     [--paraes PATH] [--tool-max-bytes N] [--shm DIR] [--skip-tool] [--tool-only] [--tool-backend B] [--probe] [--cobblestone] [--kernel-bytes N] [--load-bytes N]"
                );
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other:?} (try --help)")),
        }
    }
    if args.quick {
        args.max_bytes = args.max_bytes.min(64 * MIB);
        args.tool_max_bytes = args.tool_max_bytes.min(64 * MIB);
        args.reps = args.reps.min(5);
        args.load_bytes = args.load_bytes.min(256 * MIB);
    }
    args
}

/// Says why on stderr and exits 2 (no usable GPU, or a bad command line).
pub(crate) fn die(message: &str) -> ! {
    eprintln!("gpu_bench: {message}");
    std::process::exit(2)
}
