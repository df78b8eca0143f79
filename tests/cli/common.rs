//! Shared helpers of the end-to-end tests in tests/cli/: running the `paraes` binary in a scratch
//! directory, seeded data and keys, the container layout of docs/FORMAT.md, and `openssl enc`.

use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

/// Plaintext bytes of a format v3 body's chunks (C2SP chunked encryption: always 16 KiB, the
/// last chunk shorter), and the smallest `--chunk-size` a container takes (`CHUNK_ARG`).
pub const CHUNK: usize = 16384;
/// `CHUNK` as the command line spells it.
pub const CHUNK_ARG: &str = "16KiB";
/// Header bytes of a container with one key-file stanza (docs/FORMAT.md: a 64-byte preamble
/// and two 2016-byte stanza slots); a v3 body (a Cobblestone message) starts here.
pub const HEADER_LEN: usize = 4096;
/// Header bytes of a container with one passphrase stanza (the same 4 KiB).
pub const PASSPHRASE_HEADER_LEN: usize = 4096;
/// Bytes of a v3 body's message before its first chunk: a 24-byte salt and a 32-byte key
/// commitment.
pub const MESSAGE_PREFIX_LEN: usize = 56;
/// Bytes of a chunk tag (v3: AES-GCM's; v2: POLYVAL-then-AES), 16 bytes.
pub const TAG_LEN: usize = 16;
/// The AES key sizes (of raw streams and the engines).
pub const KEY_BITS: [usize; 3] = [128, 192, 256];
/// The key sizes of a container's body (Cobblestone-128 and -256).
pub const CONTAINER_BITS: [usize; 2] = [128, 256];

/// The modes of operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Ctr,
    Ecb,
}

impl Mode {
    /// The value of `--mode`.
    pub fn arg(self) -> &'static str {
        match self {
            Mode::Ctr => "ctr",
            Mode::Ecb => "ecb",
        }
    }

    /// The `openssl enc` cipher name, e.g. `-aes-128-ctr`.
    pub fn openssl_cipher(self, bits: usize) -> String {
        format!("-aes-{bits}-{}", self.arg())
    }
}

/// `len` bytes from a seeded SplitMix64 generator, so a failure names a reproducible case.
pub fn seeded_bytes(seed: u64, len: usize) -> Vec<u8> {
    paraes_core::seeded::SplitMix64::new(seed ^ 0x5eed_f00d_da7a).bytes(len)
}

/// Length of the v3 container of `plain_len` bytes: header, the message's salt and
/// commitment, the plaintext's length of ciphertext, and one tag per 16 KiB chunk plus the
/// final, always shorter (possibly empty) chunk's.
pub fn container_len(plain_len: usize, header_len: usize) -> usize {
    let chunks = plain_len / CHUNK + 1;
    header_len + MESSAGE_PREFIX_LEN + plain_len + chunks * TAG_LEN
}

/// The `(ciphertext, tag)` records of a v3 container's body (after its salt and commitment):
/// full 16 KiB chunks, then the shorter last one.
pub fn records(container: &[u8], header_len: usize) -> Vec<(&[u8], &[u8])> {
    let body = &container[header_len + MESSAGE_PREFIX_LEN..];
    let mut out: Vec<(&[u8], &[u8])> = body
        .chunks(CHUNK + TAG_LEN)
        .map(|record| {
            assert!(record.len() >= TAG_LEN, "a record shorter than a tag");
            record.split_at(record.len() - TAG_LEN)
        })
        .collect();
    if body.len().is_multiple_of(CHUNK + TAG_LEN) {
        out.push((&body[body.len()..], &body[body.len()..]));
    }
    out
}

/// The v3 message's salt: the 24 bytes at the body's start.
pub fn salt(container: &[u8], header_len: usize) -> [u8; 24] {
    container[header_len..header_len + 24]
        .try_into()
        .expect("24 bytes")
}

/// A temporary directory that `paraes` runs in.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    pub fn new() -> Self {
        Scratch {
            dir: tempfile::Builder::new()
                .prefix("paraes-cli-test.")
                .tempdir()
                .expect("a temporary directory"),
        }
    }

    /// A scratch directory for a test that writes about `bytes` of files: on the memory file
    /// system (/dev/shm) when it is a writable directory with twice that free, else where
    /// [`Scratch::new`] puts it (said on standard error). A CI machine's disk once ran out
    /// under the large-file tests (stop 48: "No space left on device" in two tests whose
    /// files are GiB-sized); memory is the one resource every machine here has 24 GiB of.
    pub fn for_large_files(bytes: u64) -> Self {
        // SAFETY: statvfs is given a NUL-terminated path and a zeroed struct that it fills.
        let free = unsafe {
            let mut stat: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c"/dev/shm".as_ptr(), &mut stat) == 0 {
                stat.f_bavail as u64 * stat.f_frsize as u64
            } else {
                0
            }
        };
        let in_memory = (free >= 2 * bytes)
            .then(|| {
                tempfile::Builder::new()
                    .prefix("paraes-cli-test.")
                    .tempdir_in("/dev/shm")
                    .ok()
            })
            .flatten();
        if let Some(dir) = in_memory {
            return Scratch { dir };
        }
        eprintln!(
            "note: /dev/shm is not writable or has {} MiB free, under twice the {} MiB this test \
             writes: its files go to the temporary directory on disk",
            free >> 20,
            bytes >> 20
        );
        Self::new()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, contents: &[u8]) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, contents).unwrap_or_else(|e| panic!("writing {name}: {e}"));
        path
    }

    /// Writes a secret file (a passphrase), readable by its owner only.
    pub fn secret(&self, name: &str, contents: &[u8]) -> PathBuf {
        let path = self.write(name, contents);
        self.set_mode(name, 0o600);
        path
    }

    pub fn read(&self, name: &str) -> Vec<u8> {
        fs::read(self.path(name)).unwrap_or_else(|e| panic!("reading {name}: {e}"))
    }

    pub fn exists(&self, name: &str) -> bool {
        self.path(name).symlink_metadata().is_ok()
    }

    pub fn remove(&self, name: &str) {
        fs::remove_file(self.path(name)).unwrap_or_else(|e| panic!("removing {name}: {e}"));
    }

    pub fn set_mode(&self, name: &str, mode: u32) {
        fs::set_permissions(self.path(name), fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {name}: {e}"));
    }

    pub fn mode(&self, name: &str) -> u32 {
        fs::metadata(self.path(name))
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    /// Every entry of the directory, hidden ones (temporaries) included.
    pub fn names(&self) -> BTreeSet<String> {
        fs::read_dir(self.dir.path())
            .expect("readable scratch directory")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    /// Writes a seeded key of `bits` as a mode-0600 key file, as hex text or raw bytes;
    /// returns the key bytes.
    pub fn key_file(&self, name: &str, bits: usize, seed: u64, hex_text: bool) -> Vec<u8> {
        let key = seeded_bytes(seed.wrapping_mul(31).wrapping_add(bits as u64), bits / 8);
        if hex_text {
            self.write(name, format!("{}\n", hex::encode(&key)).as_bytes());
        } else {
            assert!(
                !key.iter().all(u8::is_ascii_hexdigit),
                "a raw test key that reads as hex"
            );
            self.write(name, &key);
        }
        self.set_mode(name, 0o600);
        key
    }

    /// `paraes ARGS` in this directory (standard input: nothing).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(bin());
        command.args(args).current_dir(self.dir.path());
        command
    }

    /// Runs `paraes ARGS` with empty standard input.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .expect("paraes runs")
    }

    /// Runs `paraes ARGS` with `stdin` on standard input.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("paraes runs");
        feed_and_wait(&mut child, stdin)
    }

    /// Runs `paraes FIRST | paraes SECOND` with `stdin` into the first; returns both outputs
    /// (the first one's stdout is empty: it went into the pipe).
    pub fn pipe(&self, first: &[&str], second: &[&str], stdin: &[u8]) -> (Output, Output) {
        let mut head = self
            .command(first)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("paraes runs");
        let tail = self
            .command(second)
            .stdin(head.stdout.take().expect("piped stdout"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("paraes runs");
        // Drain the second while feeding the first, so neither can block on a full pipe.
        let tail = std::thread::spawn(move || tail.wait_with_output().expect("paraes ends"));
        let head_output = feed_and_wait(&mut head, stdin);
        (head_output, tail.join().expect("second paraes"))
    }

    /// `paraes enc -q -k KEY --chunk-size 16KiB INPUT` (the smallest pipeline batch, one
    /// 16 KiB chunk at a time), asserting success: writes `INPUT.paraes`.
    pub fn enc_small_chunks(&self, key: &str, input: &str) {
        let out = self.run(&["enc", "-q", "-k", key, "--chunk-size", CHUNK_ARG, input]);
        assert_success(&out, &format!("enc {input}"));
    }

    /// Runs `bash -c SCRIPT` in this directory with `$PARAES` naming the binary.
    pub fn bash(&self, script: &str) -> Output {
        Command::new("bash")
            .args(["-c", script])
            .env("PARAES", bin())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("bash runs")
    }

    /// Asserts that `output` is a clean refusal (see [`assert_error`]) and that the directory
    /// still holds exactly `before`: no output file, no temporary.
    pub fn assert_refused(&self, output: &Output, before: &BTreeSet<String>, what: &str) -> String {
        let message = assert_error(output, what);
        assert_eq!(
            &self.names(),
            before,
            "{what}: the directory changed although paraes failed ({message})"
        );
        message
    }

    /// Asserts that no `.paraes-tmp` temporary is left in the directory.
    pub fn assert_no_temporary(&self, what: &str) {
        let left: Vec<_> = self
            .names()
            .into_iter()
            .filter(|n| n.ends_with(".paraes-tmp"))
            .collect();
        assert!(left.is_empty(), "{what}: temporaries left behind: {left:?}");
    }
}

/// Writes `stdin` to the child from a thread (so a full stdout pipe cannot deadlock), then
/// collects its output.
fn feed_and_wait(child: &mut Child, stdin: &[u8]) -> Output {
    let mut pipe = child.stdin.take().expect("piped stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // paraes may stop reading early (an error); that is its business, not the test's.
        let _ = pipe.write_all(&data);
    });
    let mut stdout = Vec::new();
    let mut err_pipe = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(pipe) = err_pipe.as_mut() {
            pipe.read_to_end(&mut buf).expect("reading stderr");
        }
        buf
    });
    if let Some(out) = child.stdout.as_mut() {
        out.read_to_end(&mut stdout).expect("reading stdout");
    }
    let stderr = err_reader.join().expect("stderr reader");
    let status = child.wait().expect("paraes ends");
    writer.join().expect("stdin writer");
    Output {
        status,
        stdout,
        stderr,
    }
}

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_paraes")
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts exit status 0 and returns stderr.
pub fn assert_success(output: &Output, what: &str) -> String {
    let err = stderr(output);
    assert!(
        output.status.success(),
        "{what}: paraes failed ({:?}): {err}",
        output.status
    );
    err
}

/// Asserts exit status 0 and an empty stderr (no warning, no error).
pub fn assert_silent_success(output: &Output, what: &str) {
    let err = assert_success(output, what);
    assert!(err.is_empty(), "{what}: unexpected stderr: {err}");
}

/// Asserts a failure with `status` and exactly one stderr line starting `paraes: error: `;
/// returns the message after the prefix.
fn assert_one_error_line(output: &Output, status: i32, what: &str) -> String {
    let err = stderr(output);
    assert_eq!(
        output.status.code(),
        Some(status),
        "{what}: expected exit status {status}, stderr: {err}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{what}: expected one stderr line, got: {err}"
    );
    lines[0]
        .strip_prefix("paraes: error: ")
        .unwrap_or_else(|| panic!("{what}: stderr does not start with 'paraes: error: ': {err}"))
        .to_owned()
}

/// Asserts an error (exit status 1, one `paraes: error: ` line); returns the message.
pub fn assert_error(output: &Output, what: &str) -> String {
    assert_one_error_line(output, 1, what)
}

/// Asserts a usage error (exit status 2, one `paraes: error: ` line); returns the message.
pub fn assert_usage_error(output: &Output, what: &str) -> String {
    assert_one_error_line(output, 2, what)
}

/// The value of `name:` in `paraes info` output (alignment spaces trimmed).
pub fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines().find_map(|line| {
        let (field, value) = line.split_once(':')?;
        (field.trim() == name).then(|| value.trim().to_owned())
    })
}

/// Runs `openssl enc CIPHER -K KEY [-iv IV] [-d] [-nopad] -nosalt` on `input`.
/// Fails the test (rather than skipping it) when `openssl` is not installed.
pub fn openssl_enc(
    cipher: &str,
    key: &[u8],
    iv: Option<&[u8; 16]>,
    decrypt: bool,
    pad: bool,
    input: &[u8],
) -> Vec<u8> {
    let mut command = Command::new("openssl");
    command.args(["enc", cipher, "-nosalt", "-K", &hex::encode(key)]);
    if let Some(iv) = iv {
        command.args(["-iv", &hex::encode(iv)]);
    }
    if decrypt {
        command.arg("-d");
    }
    if !pad {
        command.arg("-nopad");
    }
    let mut child = match command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!(
            "the `openssl` command line is needed for this test (install OpenSSL so that \
             `openssl` is on PATH): {e}"
        ),
    };
    let output = feed_and_wait(&mut child, input);
    assert!(
        output.status.success(),
        "openssl enc {cipher} failed: {}",
        stderr(&output)
    );
    output.stdout
}

/// Whether the tests run under CI (`CI` is set, as `CI=true`), where every test must run: CI
/// runs scripts/test.sh, which installs what the tests need, as root on a machine without a GPU.
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Reports a test that cannot run here, loudly and straight to the stderr handle (the test
/// harness captures `eprintln!`), so that a skip is never mistaken for a pass; under CI (see
/// [`under_ci`]) it fails the test instead, since whatever it lacks should be there. (Only a
/// GPU may be missing under CI: the tests that need one say so with a line of their own.)
pub fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {why} ***\n");
    assert!(
        !under_ci(),
        "{test} cannot run here, and under CI every test must run: {why}"
    );
}

/// Whether the tests run as root (who reads files whatever their permission bits).
pub fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Sends signal `signal` (a name such as `INT`) to process `pid`.
pub fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// The uid and gid (nobody:nogroup) that permission checks run as when the tests run as root.
pub const UNPRIVILEGED: u32 = 65534;

/// `paraes ARGS` in directory `dir` as a user without privileges, so that permission bits are
/// checked as they are for any user even where the tests run as root (as CI does): as root,
/// through `setpriv` (util-linux, which scripts/test.sh installs) as uid and gid
/// [`UNPRIVILEGED`] with no supplementary groups; otherwise as the user running the tests.
/// What that user must reach is the caller's to open (modes, or [`give_to_unprivileged`]).
/// Fails the test, never skips it, where this cannot be done.
pub fn unprivileged(dir: &std::path::Path, args: &[&str]) -> Command {
    if !running_as_root() {
        let mut command = Command::new(bin());
        command.args(args).current_dir(dir);
        return command;
    }
    let drop = [
        format!("--reuid={UNPRIVILEGED}"),
        format!("--regid={UNPRIVILEGED}"),
        "--clear-groups".to_string(),
        "--".to_string(),
    ];
    let probe = Command::new("setpriv")
        .args(&drop)
        .args(["test", "-x", bin()])
        .status();
    match probe {
        Ok(status) if status.success() => {}
        Ok(_) => panic!(
            "uid {UNPRIVILEGED} cannot run {} (a directory on its path is closed to other \
             users): the permission tests run paraes as that user when the tests run as root",
            bin()
        ),
        Err(e) => panic!(
            "`setpriv` (util-linux) is needed to run paraes as an unprivileged user when the \
             tests run as root: {e}"
        ),
    }
    let mut command = Command::new("setpriv");
    command.args(&drop).arg(bin()).args(args).current_dir(dir);
    command
}

/// Gives `path` and everything under it to the unprivileged user when the tests run as root,
/// so that it owns them as a user owns her files (`chown -R`); does nothing otherwise.
pub fn give_to_unprivileged(path: &std::path::Path) {
    if running_as_root() {
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{UNPRIVILEGED}:{UNPRIVILEGED}"))
            .arg(path)
            .status()
            .expect("chown runs");
        assert!(status.success(), "chown -R of {}", path.display());
    }
}

/// Whether a thread of process `pid` sits in read(2) or readv(2) on its descriptor `fd`: the
/// system call and its first argument in /proc/PID/task/TID/syscall (shown only while it is in
/// the call).
pub fn blocked_reading(pid: u32, fd: u32) -> bool {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let reads = [libc::SYS_read, libc::SYS_readv].map(|call| call.to_string());
    let fd = format!("{fd:#x}");
    tasks.flatten().any(|task| {
        fs::read_to_string(task.path().join("syscall")).is_ok_and(|line| {
            let mut fields = line.split_whitespace();
            fields
                .next()
                .is_some_and(|call| reads.iter().any(|r| r == call))
                && fields.next() == Some(fd.as_str())
        })
    })
}

/// Polls `ready` every few milliseconds until it holds; fails the test after `seconds`.
pub fn wait_until(seconds: u64, what: &str, mut ready: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(seconds),
            "timed out after {seconds} s waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The size of the unfinished output process `pid` is writing in `dir`, if it has one open: an
/// unnamed `O_TMPFILE` file (its /proc link reads `DIR/#INODE (deleted)`) or the named
/// `.paraes-tmp` fallback.
pub fn unfinished_output(pid: u32, dir: &std::path::Path) -> Option<u64> {
    unfinished_output_metadata(pid, dir).map(|m| m.len())
}

/// The metadata of the unfinished output of [`unfinished_output`].
pub fn unfinished_output_metadata(pid: u32, dir: &std::path::Path) -> Option<fs::Metadata> {
    let dir = dir.canonicalize().ok()?;
    for entry in fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        let Ok(target) = fs::read_link(entry.path()) else {
            continue;
        };
        let shown = target.to_string_lossy();
        let unfinished = shown.ends_with(" (deleted)") || shown.ends_with(".paraes-tmp");
        if unfinished && target.starts_with(&dir) {
            return fs::metadata(entry.path()).ok();
        }
    }
    None
}

/// The pid of a process of the paraes binary working in `dir` whose environment holds
/// `variable` (`NAME=VALUE`), if one runs.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn paraes_in(dir: &std::path::Path, variable: &str) -> Option<u32> {
    let dir = dir.canonicalize().ok()?;
    let exe = std::path::Path::new(bin()).canonicalize().ok()?;
    fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid = entry.file_name().to_str()?.parse().ok()?;
        let proc = entry.path();
        let ours = fs::read_link(proc.join("exe")).ok()? == exe
            && fs::read_link(proc.join("cwd")).ok()? == dir;
        let environ = fs::read(proc.join("environ")).ok()?;
        let holds = environ.split(|&b| b == 0).any(|v| v == variable.as_bytes());
        (ours && holds).then_some(pid)
    })
}

/// The pid of the process whose command line holds `marker`, if one runs.
pub fn find_process(marker: &str) -> Option<u32> {
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let mut cmdline = Vec::new();
        if fs::File::open(entry.path().join("cmdline"))
            .and_then(|mut f| f.read_to_end(&mut cmdline))
            .is_ok()
            && cmdline.starts_with(bin().as_bytes())
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            return Some(pid);
        }
    }
    None
}

/// Whether process `pid` sits in a read(2) of its terminal (/dev/tty, or its /dev/pts/N) and
/// that terminal's echo is off (read from the /dev/pts/N it has open: /dev/tty opened here
/// would be this process's own terminal).
pub fn reads_the_terminal_without_echo(pid: u32) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let terminals: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|fd| {
            let number = fd.file_name().to_str()?.parse().ok()?;
            let target = fs::read_link(fd.path()).ok()?;
            (target.starts_with("/dev/pts/") || target == std::path::Path::new("/dev/tty"))
                .then_some((number, target))
        })
        .collect();
    let reading = terminals.iter().any(|(fd, _)| blocked_reading(pid, *fd));
    let echo_off = terminals
        .iter()
        .filter(|(_, target)| target.starts_with("/dev/pts/"))
        .any(|(_, target)| {
            let tty = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
                .open(target);
            tty.is_ok_and(|tty| {
                rustix::termios::tcgetattr(&tty).is_ok_and(|settings| {
                    !(settings.local_modes).contains(rustix::termios::LocalModes::ECHO)
                })
            })
        });
    reading && echo_off
}

/// The format v1 fixtures (containers written by the last paraes that wrote v1, their keys,
/// passphrase and plaintexts).
pub const V1_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v1");

/// A scratch directory holding every v1 fixture (secrets with mode 0600).
pub fn v1_fixtures() -> Scratch {
    let s = Scratch::new();
    for entry in fs::read_dir(V1_FIXTURES).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        s.write(&name, &fs::read(&path).unwrap());
        s.set_mode(&name, 0o600);
    }
    s
}
