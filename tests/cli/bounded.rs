//! Commands that end within a bounded time whatever they do: a launch (an MPI launcher, or a
//! shell script that starts one) runs in a process group of its own, is waited for with a
//! deadline, and on expiry its whole group is killed and the test fails with the standard error
//! it wrote so far. When the launcher itself exits, whatever it left behind in its group (a rank
//! that lingers, a producer blocked on a named pipe no one reads) is killed too, so that no
//! leftover holds its output pipes open and no test waits on them for good. Every MPI test
//! starts its launcher through here.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long one launch may take before it is killed: generous for a loaded 2-core CI machine
/// (the longest MPI launch of the tests takes a few seconds there).
pub(crate) const LAUNCH_DEADLINE: Duration = Duration::from_secs(120);
/// How long the output pipes may stay open once the launch's process group is gone (a process
/// that left the group, such as a daemon, may still hold them): what was read by then is kept.
const DRAIN_GRACE: Duration = Duration::from_secs(5);
/// How often the launch is checked for its end.
const POLL: Duration = Duration::from_millis(5);

/// A command started in its own process group, its standard output and error read as they come.
pub(crate) struct Launch {
    child: Child,
    started: Instant,
    deadline: Duration,
    what: String,
    stdout: Drain,
    stderr: Drain,
}

/// A pipe read to its end on a thread of its own, into a buffer that can be taken at any time.
struct Drain {
    bytes: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Drain {
    fn start(mut pipe: impl Read + Send + 'static) -> Drain {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (tell, done) = mpsc::channel();
        let into = Arc::clone(&bytes);
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                into.lock()
                    .expect("drain buffer")
                    .extend_from_slice(&buf[..n]);
            }
            let _ = tell.send(());
        });
        Drain { bytes, done }
    }

    /// Waits for the pipe's end until `until`, then takes what was read.
    fn take(self, until: Instant) -> Vec<u8> {
        let _ = self
            .done
            .recv_timeout(until.saturating_duration_since(Instant::now()));
        std::mem::take(&mut *self.bytes.lock().expect("drain buffer"))
    }

    fn so_far(&self) -> Vec<u8> {
        self.bytes.lock().expect("drain buffer").clone()
    }
}

impl Launch {
    /// Starts `command` (standard input as the caller set it) in a new process group, with
    /// `deadline` for its end; `what` names it in failures.
    pub(crate) fn start(command: &mut Command, deadline: Duration, what: &str) -> Launch {
        let mut child = command
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start {:?}: {e}", command.get_program()));
        let stdout = Drain::start(child.stdout.take().expect("piped stdout"));
        let stderr = Drain::start(child.stderr.take().expect("piped stderr"));
        Launch {
            child,
            started: Instant::now(),
            deadline,
            what: what.to_string(),
            stdout,
            stderr,
        }
    }

    /// The launcher's process id (which is also its process group's id).
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether the launcher has exited (it is not reaped: its process group stays its own).
    pub(crate) fn exited(&self) -> bool {
        // SAFETY: siginfo_t is a plain C struct, valid all zeros.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child with WNOWAIT only reads its state (the child stays
        // a zombie to be reaped by `finish`) into `info`, which outlives the call.
        let polled = unsafe {
            libc::waitid(
                libc::P_PID,
                self.id(),
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        assert_eq!(
            polled,
            0,
            "{}: waitid: {}",
            self.what,
            std::io::Error::last_os_error()
        );
        // SAFETY: with WNOHANG, a pid of 0 in `info` means that no child changed state.
        unsafe { info.si_pid() != 0 }
    }

    /// Waits for the launcher's end, at most until its deadline; then kills what is left of its
    /// process group and returns its output, or, past the deadline, kills the whole group and
    /// says so with the standard error written so far.
    pub(crate) fn finish(mut self) -> Result<Output, String> {
        while !self.exited() {
            if self.started.elapsed() >= self.deadline {
                self.kill_group();
                let status = self.child.wait().expect("the killed launcher is reaped");
                let err = self.stderr.so_far();
                return Err(format!(
                    "{}: still running after {} s ({status}): killed its process group; \
                     its standard error so far: {}",
                    self.what,
                    self.deadline.as_secs_f64(),
                    String::from_utf8_lossy(&err)
                ));
            }
            thread::sleep(POLL);
        }
        // The launcher is a zombie, so its pid (the group's id) cannot be reused yet.
        self.kill_group();
        let status: ExitStatus = self.child.wait().expect("the launcher is reaped");
        let until = Instant::now() + DRAIN_GRACE;
        Ok(Output {
            status,
            stdout: self.stdout.take(until),
            stderr: self.stderr.take(until),
        })
    }

    /// [`Launch::finish`], failing the test on an overrun.
    pub(crate) fn wait(self) -> Output {
        self.finish().unwrap_or_else(|overrun| panic!("{overrun}"))
    }

    /// SIGKILL to every process of the launch's group; none left is not an error.
    fn kill_group(&self) {
        let group = libc::pid_t::try_from(self.id()).expect("a pid");
        // SAFETY: kill(2) with a negative pid signals that process group, ours alone.
        let killed = unsafe { libc::kill(-group, libc::SIGKILL) };
        let error = std::io::Error::last_os_error();
        assert!(
            killed == 0 || error.raw_os_error() == Some(libc::ESRCH),
            "{}: killing process group {group}: {error}",
            self.what
        );
    }
}

/// Runs `command` to its end within [`LAUNCH_DEADLINE`] (standard input: nothing), failing the
/// test, with its standard error so far, if it does not end by then.
pub(crate) fn output(command: &mut Command, what: &str) -> Output {
    Launch::start(command.stdin(Stdio::null()), LAUNCH_DEADLINE, what).wait()
}

/// [`output`] with `stdin` written to the command's standard input through a pipe.
pub(crate) fn output_with_stdin(mut command: Command, stdin: &[u8], what: &str) -> Output {
    use std::io::Write;
    let (reader, mut writer) = std::io::pipe().expect("a pipe");
    let launch = Launch::start(command.stdin(reader), LAUNCH_DEADLINE, what);
    drop(command); // its copy of the read end: the launch holds the only ones now
    let data = stdin.to_vec();
    // The command may stop reading early (an error); that is its business, not the test's.
    thread::spawn(move || writer.write_all(&data));
    launch.wait()
}

/// Whether process `pid` is gone (or a zombie, which runs no more).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

/// Waits up to 10 s for every pid written, one per line, to file `list` to be gone.
fn assert_all_gone(list: &std::path::Path, what: &str) {
    let text = std::fs::read_to_string(list).unwrap_or_else(|e| panic!("{what}: {e}"));
    let pids: Vec<u32> = text.lines().map(|l| l.parse().expect("a pid")).collect();
    assert!(!pids.is_empty(), "{what}: no pid written");
    let since = Instant::now();
    while !pids.iter().all(|&pid| gone(pid)) {
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "{what}: still running: {pids:?}"
        );
        thread::sleep(POLL);
    }
}

/// A launch that outlives its deadline (a shell that sleeps, with a child of its own that
/// sleeps too, as a launcher and its ranks do) is killed, group and all, soon after the
/// deadline, and the failure says so with what it had written to standard error.
#[test]
fn a_launch_past_its_deadline_is_killed_with_its_stderr() {
    let scratch = crate::common::Scratch::new();
    let pids = scratch.path("pids");
    let script = "sleep 600 & echo $! > pids; echo $$ >> pids; echo rank 0 is stuck >&2; sleep 600";
    let started = Instant::now();
    let mut command = Command::new("bash");
    command.args(["-c", script]).current_dir(scratch.path(""));
    let overrun = Launch::start(
        command.stdin(Stdio::null()),
        Duration::from_secs(2),
        "a stuck launch",
    )
    .finish()
    .expect_err("a launch past its deadline is an error");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(30),
        "ended after {took:?}"
    );
    assert!(
        overrun.starts_with("a stuck launch: still running after 2 s"),
        "{overrun}"
    );
    assert!(overrun.contains("killed its process group"), "{overrun}");
    assert!(overrun.contains("rank 0 is stuck"), "{overrun}");
    assert_all_gone(&pids, "the stuck launch and its child");
}

/// A launcher that exits while something it started still holds its output pipes (the way
/// `scatter_streams_through_pipes` hung: a producer blocked on a named pipe that no rank
/// opened) ends the launch at once with the launcher's status: the leftover is killed.
#[test]
fn a_leftover_of_a_launcher_that_exited_is_killed() {
    let scratch = crate::common::Scratch::new();
    let script = "set -e; mkfifo in.pipe; cat /dev/zero > in.pipe & echo $! > pids; \
                  echo the launcher failed >&2; exit 3";
    let started = Instant::now();
    let mut command = Command::new("bash");
    command.args(["-c", script]).current_dir(scratch.path(""));
    let out = output(&mut command, "a launcher with a leftover");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "the launcher failed\n"
    );
    assert_all_gone(&scratch.path("pids"), "the producer on the named pipe");
}

/// A launch that ends in time gives its status and both outputs whole, and takes what it is
/// given on standard input whole (more than a pipe holds).
#[test]
fn a_launch_in_time_gives_its_output() {
    let mut command = Command::new("bash");
    command.args(["-c", "head -c 1000000 /dev/zero; echo done >&2; exit 4"]);
    let out = output(&mut command, "a quick launch");
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout.len(), 1_000_000);
    assert_eq!(out.stderr, b"done\n");

    let mut command = Command::new("bash");
    command.args(["-c", "sleep 0.2; wc -c"]);
    let out = output_with_stdin(command, &[7u8; 1_000_000], "a launch fed");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1000000");
}
