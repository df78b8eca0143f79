//! Ranks started by Slurm's `srun` (a job step), as a cluster starts them: `srun -n 2 paraes
//! enc --backend mpi` and `srun -n 3 --overcommit paraes dec --backend mpi` write what one
//! process writes (raw streams byte for byte; containers that open to the same plaintext) in
//! both `--mpi-io` strategies, and `srun -c N` gives `paraes` N worker threads, set by the
//! CPUs Slurm bound it to. Needs a running Slurm (`SLURM_CONF`) and `PARAES_MPI_LIBRARY`
//! (`mpich`: `srun --mpi=pmi2`; `openmpi`: `srun --mpi=pmix`): scripts/test-mpi.sh starts a
//! one-node Slurm and runs these tests for each library. Without them the tests fail, they
//! never skip. Every `srun` is bounded: past its deadline its process group is ended and the
//! test fails with what `srun` said.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::common::{assert_success, bin, seeded_bytes, Scratch, CHUNK, CHUNK_ARG};
use crate::mpi::with_mpi::{assert_v3_container, session_base, STRATEGIES};

/// How long one `srun` may take, queueing included.
const DEADLINE: Duration = Duration::from_secs(120);

/// One job at a time: the node has few CPUs, and a job step that waits for another's CPUs
/// would spend its deadline queueing.
static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What a bounded `srun` left: its exit status (`None`: killed at the deadline), stdout and
/// stderr.
struct Ran {
    status: Option<ExitStatus>,
    stdout: Vec<u8>,
    stderr: String,
    what: String,
}

impl Ran {
    /// Asserts that `srun` ended in time and succeeded; returns its stderr.
    fn succeeded(&self) -> &str {
        match self.status {
            None => panic!(
                "{}: still running after {} s; its process group was killed. srun said: {}",
                self.what,
                DEADLINE.as_secs(),
                self.stderr
            ),
            Some(status) => assert!(
                status.success(),
                "{}: failed ({status}): {}",
                self.what,
                self.stderr
            ),
        }
        &self.stderr
    }
}

/// The `srun --mpi=` plugin of the MPI library the binary links, named by
/// `PARAES_MPI_LIBRARY`.
fn pmi_plugin() -> &'static str {
    match std::env::var("PARAES_MPI_LIBRARY").as_deref() {
        Ok("mpich") => "pmi2",
        Ok("openmpi") => "pmix",
        other => panic!(
            "PARAES_MPI_LIBRARY is {other:?}: set it to mpich or openmpi, the library this \
             binary was built against (scripts/test-mpi.sh does, for each library)"
        ),
    }
}

/// Fails the test loudly unless a Slurm answers: `SLURM_CONF` set and `sinfo` showing a node
/// that can take jobs.
fn assert_slurm_runs() {
    let start_it = "start one with scripts/test-mpi.sh (a one-node Slurm on this machine, \
                    then these tests for each MPI library)";
    assert!(
        std::env::var_os("SLURM_CONF").is_some(),
        "SLURM_CONF is not set, so no Slurm is running for these tests: {start_it}"
    );
    let sinfo = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .unwrap_or_else(|e| panic!("sinfo does not run ({e}): {start_it}"));
    let states = String::from_utf8_lossy(&sinfo.stdout);
    // A node between jobs shows `completing` for a moment; drained or down ones take none.
    let takes_jobs = |state: &str| {
        ["idle", "mix", "alloc", "completing"]
            .iter()
            .any(|s| state.starts_with(s))
    };
    assert!(
        sinfo.status.success() && states.lines().any(takes_jobs),
        "sinfo shows no node that takes jobs ({}; {}): {start_it}",
        states.trim(),
        String::from_utf8_lossy(&sinfo.stderr).trim()
    );
}

/// Runs `srun SRUN_ARGS paraes ARGS` in the scratch directory, in a process group of its own,
/// for at most [`DEADLINE`]: past it, SIGTERM to the group (srun then cancels the job step),
/// SIGKILL five seconds later. Standard input is empty.
fn srun(scratch: &Scratch, srun_args: &[&str], args: &[&str]) -> Ran {
    srun_with_input(scratch, srun_args, args, None)
}

/// [`srun`] with `input` written to srun's standard input from a thread (`None`: /dev/null).
fn srun_with_input(
    scratch: &Scratch,
    srun_args: &[&str],
    args: &[&str],
    input: Option<&[u8]>,
) -> Ran {
    assert_slurm_runs();
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let what = format!("srun {} paraes {}", srun_args.join(" "), args.join(" "));
    let mut child = Command::new("srun")
        .args(srun_args)
        // Slurm ends the job itself should this runner die.
        .arg("--time=3")
        .arg(bin())
        .args(args)
        .current_dir(scratch.path(""))
        // Open MPI's ranks keep their session directories under this job's own base, not
        // the one the other tests' jobs share and race on (see `Library::environment`);
        // MPICH reads none of it.
        .env("OMPI_MCA_orte_tmpdir_base", session_base())
        .stdin(match input {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: srun does not start: {e}"));
    if let (Some(mut pipe), Some(input)) = (child.stdin.take(), input) {
        let input = input.to_vec();
        // A job that ends without reading all of it closes the pipe: the write then fails,
        // which is that job's business, not the feeder's.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let group = format!("-{}", child.id());
    let mut status = None;
    let mut signalled = None;
    loop {
        if let Some(ended) = child.try_wait().expect("waiting on srun") {
            if signalled.is_none() {
                status = Some(ended);
            }
            break;
        }
        match signalled {
            None if started.elapsed() > DEADLINE => {
                let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
                signalled = Some(Instant::now());
            }
            Some(at) if at.elapsed() > Duration::from_secs(5) => {
                let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ran {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: String::from_utf8_lossy(&stderr.join().expect("stderr reader")).into_owned(),
        what,
    }
}

/// `srun -n RANKS` with the library's PMI plugin (and `--overcommit` past the node's CPUs).
fn srun_ranks(ranks: usize, overcommit: bool) -> Vec<String> {
    let mut args = vec![
        format!("--mpi={}", pmi_plugin()),
        "-n".to_owned(),
        ranks.to_string(),
    ];
    if overcommit {
        args.push("--overcommit".to_owned());
    }
    args
}

/// Runs `paraes ARGS` on `ranks` ranks under `srun`, asks for `--stats json` and asserts that
/// the job succeeded with that many workers (so that ranks which each thought themselves alone,
/// under the wrong PMI plugin, cannot pass for a job).
fn mpi_job(scratch: &Scratch, ranks: usize, overcommit: bool, args: &[&str]) {
    let srun_args = srun_ranks(ranks, overcommit);
    let srun_args: Vec<&str> = srun_args.iter().map(String::as_str).collect();
    let mut args = args.to_vec();
    args.extend(["--backend", "mpi", "--stats", "json"]);
    let ran = srun(scratch, &srun_args, &args);
    let err = ran.succeeded();
    let stats: serde_json::Value = err
        .lines()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("{}: no --stats json line: {err}", ran.what));
    assert!(
        stats["workers"] == ranks && stats["runner"] == "mpi",
        "{}: not one job of {ranks} ranks: {err}",
        ran.what
    );
}

/// Raw streams (CTR across a counter wrap; ECB) encrypted by two ranks under `srun` and
/// decrypted by three overcommitted ones are byte-identical to the single-process tool's, in
/// both I/O strategies.
#[test]
fn srun_ranks_write_the_raw_streams_of_one_process() {
    let scratch = Scratch::new();
    // Five 16 KiB batches and a few bytes: shares of 3 + 2 and 2 + 2 + 1, segments that start
    // mid-stream; the counter wraps in the second batch.
    let len = 5 * CHUNK + 5;
    let iv = format!("{:032x}", 0u128.wrapping_sub(CHUNK as u128 / 16 + 8));
    scratch.write("plain", &seeded_bytes(40, len));
    for (case, strategy) in STRATEGIES.into_iter().enumerate() {
        for (bits, mode) in [("256", vec!["ctr", "--iv", &iv]), ("128", vec!["ecb"])] {
            let what = format!("{strategy}, {mode:?}, {bits} bits");
            scratch.key_file("k", bits.parse().unwrap(), case as u64, true);
            let mut raw = vec!["-k", "k", "--raw"];
            raw.extend(&mode);
            // enc in 16 KiB batches; dec (which has no --chunk-size) in its default ones.
            let one = |direction: &'static str, input: &'static str, output: &'static str| {
                let mut args = vec![direction, "-q"];
                if direction == "enc" {
                    args.extend(["--chunk-size", CHUNK_ARG]);
                }
                args.extend(&raw);
                args.extend([input, "-o", output, "-f"]);
                args
            };
            assert_success(&scratch.run(&one("enc", "plain", "one.enc")), &what);
            let mut args = one("enc", "plain", "ranks.enc");
            args.extend(["--mpi-io", strategy]);
            mpi_job(&scratch, 2, false, &args);
            assert!(
                scratch.read("ranks.enc") == scratch.read("one.enc"),
                "{what}: srun -n 2 enc differs from the single-process tool"
            );
            let mut args = one("dec", "one.enc", "ranks.dec");
            args.extend(["--mpi-io", strategy]);
            mpi_job(&scratch, 3, true, &args);
            assert!(
                scratch.read("ranks.dec") == scratch.read("plain"),
                "{what}: srun -n 3 --overcommit dec differs from the plaintext"
            );
        }
    }
}

/// Containers written by two ranks under `srun` are the format v3 files the single-process
/// tool writes (the reference sealer's body; the single-process tool opens them), and three
/// overcommitted ranks open both theirs and the single-process tool's to the plaintext, in
/// both I/O strategies.
#[test]
fn srun_ranks_seal_and_open_containers_as_one_process_does() {
    let scratch = Scratch::new();
    for (case, strategy) in STRATEGIES.into_iter().enumerate() {
        let what = format!("--mpi-io {strategy}");
        let plain = seeded_bytes(41 + case as u64, 4 * CHUNK + 5);
        scratch.write("plain", &plain);
        scratch.key_file("k", 256, 41 + case as u64, true);
        let io = ["--mpi-io", strategy];
        let mut args = vec!["enc", "-k", "k", "--chunk-size", CHUNK_ARG];
        args.extend(io);
        args.extend(["plain", "-o", "ranks.paraes", "-f"]);
        mpi_job(&scratch, 2, false, &args);
        assert_v3_container(&scratch, "ranks.paraes", &plain, 256, &what);

        let out = scratch.run(&["enc", "-q", "-k", "k", "plain", "-o", "one.paraes", "-f"]);
        assert_success(&out, &what);
        for sealed in ["ranks.paraes", "one.paraes"] {
            let mut args = vec!["dec", "-k", "k"];
            args.extend(io);
            args.extend([sealed, "-o", "back", "-f"]);
            mpi_job(&scratch, 3, true, &args);
            assert!(
                scratch.read("back") == plain,
                "{what}: srun -n 3 --overcommit dec of {sealed}"
            );
            scratch.assert_no_temporary(&what);
        }
    }
}

/// `srun -c 1` gives `paraes enc` one worker thread and `srun -c 2` two, set by the CPUs
/// Slurm bound the task to, alone and as one rank of `--backend mpi`; `-v` names the source.
#[test]
fn srun_cpus_per_task_sets_the_worker_threads() {
    let scratch = Scratch::new();
    scratch.key_file("k", 256, 42, true);
    scratch.write("plain", &seeded_bytes(42, 100_000));
    let node_cpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|list| paraes_core::cpus::count_cpu_list(&list))
        .expect("the CPUs online");
    assert!(
        node_cpus >= 2,
        "srun -c 2 needs a node of two CPUs at least"
    );
    let plugin = format!("--mpi={}", pmi_plugin());
    for (cpus, backend) in [(1, "cpu"), (2, "cpu"), (1, "mpi"), (2, "mpi")] {
        let cpus_arg = cpus.to_string();
        let mut srun_args = vec!["-n", "1", "-c", &cpus_arg];
        if backend == "mpi" {
            srun_args.push(&plugin);
        }
        let args = [
            "enc",
            "-v",
            "--backend",
            backend,
            "-k",
            "k",
            "plain",
            "-o",
            "out",
            "-f",
        ];
        let ran = srun(&scratch, &srun_args, &args);
        let err = ran.succeeded();
        // Fewer CPUs than the node's: a mask of them. All of the node's (-c 2 on a node of
        // two): the whole machine, which is what Slurm gave. (SLURM_CPUS_PER_TASK names the
        // source only where it is below the CPUs the process sees, so that ranks a plain
        // mpiexec starts inside a `-c` allocation, who inherit it, still share the node.)
        let threads = format!("{cpus} thread{})", if cpus == 1 { "" } else { "s" });
        let from = if cpus < node_cpus {
            "thread count set by the affinity mask"
        } else {
            "thread count set by the CPUs online"
        };
        assert!(err.contains(&threads), "{}: not {threads}: {err}", ran.what);
        assert!(err.contains(from), "{}: not {from:?}: {err}", ran.what);
        assert!(ran.stdout.is_empty(), "{}: wrote to stdout", ran.what);
    }
}

/// Standard input under `srun`: it goes to every task unless `--input=0` gives it to task 0
/// alone, and a task that does not read it stops the stream for all. With `--input=0`, two
/// ranks encrypt a stream larger than a pipe holds into the container of that stream (under
/// either PMI plugin: Slurm's `pmi2` sets the `PMI_FD` that MPICH's mpiexec sets too, and must
/// not be taken for it); without it, paraes refuses at once, saying `--input=0`, and writes
/// nothing, rather than hang until the step is killed.
#[test]
fn srun_standard_input_reaches_task_0_alone() {
    let scratch = Scratch::new();
    scratch.key_file("k", 256, 43, true);
    let plain = seeded_bytes(43, 40 * CHUNK + 3);
    let srun_args = srun_ranks(2, false);
    let mut srun_args: Vec<&str> = srun_args.iter().map(String::as_str).collect();
    let args = [
        "enc",
        "-k",
        "k",
        "--backend",
        "mpi",
        "--chunk-size",
        CHUNK_ARG,
        "-o",
        "sealed",
    ];
    let before = scratch.names();
    let ran = srun_with_input(&scratch, &srun_args, &args, Some(&plain));
    let what = &ran.what;
    let status = ran.status.unwrap_or_else(|| {
        panic!(
            "{what}: still running after {} s: {}",
            DEADLINE.as_secs(),
            ran.stderr
        )
    });
    assert!(
        !status.success(),
        "{what}: succeeded, with input sent to every task"
    );
    // srun adds lines of its own ("srun: error: ..."); paraes's is one.
    let lines: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("paraes"))
        .collect();
    assert!(
        lines.len() == 1 && lines[0].contains("--input=0"),
        "{what}: not one line of paraes that says --input=0: {}",
        ran.stderr
    );
    assert_eq!(scratch.names(), before, "{what}: left files behind");

    srun_args.push("--input=0");
    let ran = srun_with_input(&scratch, &srun_args, &args, Some(&plain));
    ran.succeeded();
    assert_v3_container(&scratch, "sealed", &plain, 256, &ran.what);
}
