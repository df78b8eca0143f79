//! Findings of a hostile review of where paraes writes or replaces files (session 12): each
//! test fails on the code it was written against, and passes once the finding is fixed.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;

use crate::common::{
    assert_error, assert_silent_success, assert_success, give_to_unprivileged, running_as_root,
    seeded_bytes, send_signal, skip, unfinished_output, unprivileged, wait_until, Scratch,
    UNPRIVILEGED,
};

/// A directory with a 256-bit key file `key` and a plaintext `x`.
fn with_plaintext(len: usize) -> Scratch {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    s.write("x", &seeded_bytes(1, len));
    s
}

/// A directory as [`with_plaintext`] makes it, when the tests run as root; otherwise the test
/// `test` is reported as skipped (failed under CI), saying `why` it needs root.
fn as_root(test: &str, why: &str) -> Option<Scratch> {
    if !running_as_root() {
        skip(test, why);
        return None;
    }
    Some(with_plaintext(1000))
}

/// Makes `shared`, a directory that is sticky and writable by all, as `/tmp` is.
fn shared_dir(s: &Scratch) {
    fs::create_dir(s.path("shared")).unwrap();
    s.set_mode("shared", 0o1777);
}

/// Makes `shared` and in it a link `NAME -> target` that another user (`nobody`) owns, as
/// anyone may plant one in `/tmp`. Needs root (to give the link away).
fn plant_link(s: &Scratch, target: impl AsRef<std::path::Path>, name: &str) {
    shared_dir(s);
    let link = s.path(&format!("shared/{name}"));
    std::os::unix::fs::symlink(target, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(UNPRIVILEGED), Some(UNPRIVILEGED)).unwrap();
}

/// A symbolic link that another user planted in a sticky, world-writable directory (`/tmp`)
/// is one the kernel refuses to follow (`fs.protected_symlinks`, on by default on every
/// major distribution: `cp x /tmp/out` fails with EACCES there). paraes resolves `-o`'s link
/// itself (`canonicalize`, i.e. `realpath(3)`: readlink, which the kernel rule does not
/// cover) and with `--force` renames its output over the link's target, so whoever plants
/// `/tmp/out -> /home/victim/important` (or `/etc/shadow`, for root) has that file replaced
/// when the victim runs `paraes ... -o /tmp/out --force`.
#[test]
fn a_link_planted_by_another_user_in_a_sticky_directory_is_never_followed() {
    const TEST: &str = "a_link_planted_by_another_user_in_a_sticky_directory_is_never_followed";
    let Some(s) = as_root(TEST, "giving the planted link another owner needs root") else {
        return;
    };
    s.write("important", b"the victim's file");
    plant_link(&s, s.path("important"), "out");
    let out = s.run(&["enc", "-q", "-k", "key", "x", "-o", "shared/out", "--force"]);
    assert!(
        s.read("important") == b"the victim's file",
        "paraes followed a link another user planted in a sticky directory and replaced its \
         target (status {:?}, stderr: {})",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A process file-size limit (`ulimit -f`, RLIMIT_FSIZE) makes a write past it fail with
/// EFBIG, which paraes means to report ("more than this file system (or the process's file
/// size limit) allows", positioned.rs), but the kernel first sends SIGXFSZ, whose default
/// action kills the process: paraes dies with status 153 and no message of its own, and where
/// the output is a named temporary (no O_TMPFILE, or MPI ranks on other nodes) the partial
/// `.NAME.*.paraes-tmp` stays behind, since no handler runs.
#[test]
fn a_file_size_limit_is_one_clear_error_not_a_kill() {
    let s = with_plaintext(4 << 20);
    let before = s.names();
    // 1024 blocks of 1 KiB (bash's unit): 1 MiB, a quarter of the output.
    let out = s.bash(r#"ulimit -f 1024; "$PARAES" enc -q -k key x -o x.paraes"#);
    assert_eq!(
        out.status.code(),
        Some(1),
        "killed by SIGXFSZ (153 = 128 + 25) instead of one error line: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let message = assert_error(&out, "enc under ulimit -f");
    assert!(message.contains("x.paraes"), "{message}");
    assert_eq!(s.names(), before, "something was left behind");
}

/// Replacing a file whose name is long (over 255 - 20 bytes: NAME_MAX less the hidden
/// temporary's `.` + `.` + 12 hex digits + `.paraes-tmp`) always fails after all the work is
/// done, because the hidden name the copy is linked to before the rename is too long:
/// `enc --force` over an existing output, `rekey --rewrite`, `upgrade`. Nothing is lost
/// (the failure is clean), but such files can never be replaced.
#[test]
fn a_long_name_can_be_replaced() {
    let s = with_plaintext(1000);
    let name = "a".repeat(240);
    s.write(&name, b"a long-named file");
    let out = s.run(&["enc", "-q", "-k", "key", &name]);
    assert_silent_success(&out, "enc of a 240-byte name");
    let out = s.run(&["enc", "-q", "-k", "key", &name, "--force"]);
    assert_success(&out, "enc --force over the existing 247-byte output");
    let out = s.run(&["keygen", "-o", "key2"]);
    assert_success(&out, "keygen");
    let container = format!("{name}.paraes");
    let out = s.run(&[
        "rekey",
        "-q",
        "-k",
        "key",
        "--add-key-file",
        "key2",
        "--rewrite",
        &container,
    ]);
    assert_success(&out, "rekey --rewrite of the 247-byte name");
}

/// An LD_PRELOAD library that plays the other process winning a race: right before the
/// process opens SWAP_TO for writing (without O_CREAT), SWAP_FROM is renamed over it.
const SWAP_SHIM: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void maybe_swap(const char *path, int flags) {
    const char *to = getenv("SWAP_TO"), *from = getenv("SWAP_FROM");
    if (to && from && strcmp(path, to) == 0 && (flags & O_ACCMODE) == O_WRONLY
        && !(flags & O_CREAT))
        rename(from, to);
}
int open64(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); int mode = va_arg(ap, int); va_end(ap);
    maybe_swap(path, flags);
    int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, "open64");
    return real(path, flags, mode);
}
int open(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); int mode = va_arg(ap, int); va_end(ap);
    maybe_swap(path, flags);
    int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, "open");
    return real(path, flags, mode);
}
"#;

/// `-o NAME` naming a FIFO or device is checked with a stat of the name (output.rs,
/// `Output::create`) and then opened by name, for writing, following links, without O_TRUNC
/// and without a check of what was opened: a FIFO swapped between the two for a link to
/// another file (or for a regular file) has that file written over in place, from byte 0,
/// not truncated (a larger file is left part ciphertext, part old bytes), outside the
/// all-or-nothing temporary. The shim plays the race's winner deterministically.
#[test]
fn a_fifo_swapped_for_a_link_before_it_is_opened_is_not_written_through() {
    const TEST: &str = "a_fifo_swapped_for_a_link_before_it_is_opened_is_not_written_through";
    let s = with_plaintext(1000);
    let source = s.write("swap.c", SWAP_SHIM.as_bytes());
    let library = s.path("swap.so");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .arg("-ldl")
        .output();
    if !built.is_ok_and(|out| out.status.success()) {
        skip(TEST, "no C compiler (`cc`) to build the race shim");
        return;
    }
    let made = s.bash("mkfifo out");
    assert_success(&made, "mkfifo");
    let precious = seeded_bytes(7, 100_000);
    s.write("victim", &precious);
    std::os::unix::fs::symlink(s.path("victim"), s.path("planted")).unwrap();
    let out = s
        .command(&["enc", "-q", "-k", "key", "x", "-o", "out"])
        .env("LD_PRELOAD", &library)
        .env("SWAP_TO", "out")
        .env("SWAP_FROM", "planted")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        s.read("victim") == precious,
        "the victim file was written over through the swapped-in link (status {:?}, {})",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A FIFO that another user made at the output's name in a sticky, world-writable directory
/// (`/tmp`) is written into as a stream (output.rs: `stream_into_special_files`, opened
/// without O_CREAT, so the kernel's `fs.protected_fifos`, which stops `cp` and a shell's `>`
/// there, never applies): `keygen -o /tmp/k` streams the new secret key, and `dec -o
/// /tmp/plain` the plaintext, to whoever reads the FIFO; paraes exits 0 and says nothing.
#[test]
fn a_fifo_planted_by_another_user_in_a_sticky_directory_gets_no_secret() {
    const TEST: &str = "a_fifo_planted_by_another_user_in_a_sticky_directory_gets_no_secret";
    let Some(s) = as_root(TEST, "giving the planted FIFO another owner needs root") else {
        return;
    };
    assert_silent_success(&s.run(&["enc", "-q", "-k", "key", "x"]), "enc x");
    shared_dir(&s);
    for (name, args) in [
        ("newkey", &["keygen", "-o", "shared/newkey"][..]),
        (
            "plain",
            &["dec", "-q", "-k", "key", "x.paraes", "-o", "shared/plain"],
        ),
    ] {
        let fifo = s.path(&format!("shared/{name}"));
        assert_success(&s.bash(&format!("mkfifo -m 666 shared/{name}")), "mkfifo");
        std::os::unix::fs::lchown(&fifo, Some(UNPRIVILEGED), Some(UNPRIVILEGED)).unwrap();
        // The other user's reader: open for reading and writing, so paraes's open does not
        // wait, and non-blocking, so an empty FIFO reads as nothing.
        let reader = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let out = s.run(args);
        let mut got = vec![0u8; 65536];
        let n = std::io::Read::read(&mut &reader, &mut got).unwrap_or(0);
        assert!(
            n == 0,
            "{}: {n} bytes of secret went to another user's FIFO (status {:?}): {:?}",
            args.join(" "),
            out.status.code(),
            String::from_utf8_lossy(&got[..n.min(80)])
        );
    }
}

/// `rekey --rewrite` and `upgrade` give their copy the file's owner and mode
/// (guard.rs, `keep_owner_and_mode`); where the group cannot be kept (the user is not in the
/// file's group: `fchown` fails), only the setuid and setgid bits are dropped, so the group
/// bits are given to the user's own group instead: a container that group `root` could read
/// (mode 0640) becomes readable by the user's group, and with it its stanzas (a passphrase
/// stanza can be attacked offline).
#[test]
fn a_rewritten_container_is_readable_by_no_group_that_could_not_read_it() {
    const TEST: &str = "a_rewritten_container_is_readable_by_no_group_that_could_not_read_it";
    let Some(s) = as_root(
        TEST,
        "a file whose group its owner is not in needs root to make",
    ) else {
        return;
    };
    assert_silent_success(&s.run(&["enc", "-q", "-k", "key", "x"]), "enc x");
    assert_success(&s.run(&["keygen", "-o", "key2"]), "keygen");
    give_to_unprivileged(&s.path(""));
    // Owned by the user, group root (the user is not in it), readable by that group.
    std::os::unix::fs::chown(s.path("x.paraes"), None, Some(0)).unwrap();
    s.set_mode("x.paraes", 0o640);
    let out = unprivileged(
        &s.path(""),
        &[
            "rekey",
            "-q",
            "-k",
            "key",
            "--add-key-file",
            "key2",
            "--rewrite",
            "x.paraes",
        ],
    )
    .output()
    .unwrap();
    assert_success(&out, "rekey --rewrite as the user");
    let meta = fs::metadata(s.path("x.paraes")).unwrap();
    let (gid, mode) = (
        std::os::unix::fs::MetadataExt::gid(&meta),
        std::os::unix::fs::MetadataExt::mode(&meta) & 0o777,
    );
    assert!(
        gid == 0 || mode & 0o070 == 0,
        "the rewritten container is mode {mode:o} with group {gid}: a group that could not \
         read it before can now"
    );
}

/// The worst case of `-o` following another user's link in a sticky directory: the link
/// points at a device, and paraes, needing no `--force` for a device (it is "written as a
/// stream"), wrote its output into it in place: as root, `paraes enc f -o /tmp/out` wrote
/// over whatever disk `/tmp/out` was made to point at (shown by the review on a loop device).
/// Here the device is /dev/null, which any machine has: paraes must refuse the link, with one
/// line that names it.
#[test]
fn a_link_planted_by_another_user_never_leads_to_a_device() {
    const TEST: &str = "a_link_planted_by_another_user_never_leads_to_a_device";
    let Some(s) = as_root(TEST, "a link of another owner needs root to make") else {
        return;
    };
    plant_link(&s, "/dev/null", "out");
    let before = s.names();
    let out = s.run(&["enc", "-q", "-k", "key", "x", "-o", "shared/out"]);
    let message = s.assert_refused(&out, &before, "-o a planted link to a device");
    assert!(
        message.contains("shared/out") && message.contains("another user"),
        "{message}"
    );
    // A link of this user in the same directory is followed, as `cp` follows it.
    fs::remove_file(s.path("shared/out")).unwrap();
    std::os::unix::fs::symlink("/dev/null", s.path("shared/out")).unwrap();
    let out = s.run(&["enc", "-q", "-k", "key", "x", "-o", "shared/out"]);
    assert_success(&out, "-o this user's own link to /dev/null");
}

/// A many-file run interrupted by SIGTERM or SIGINT leaves hidden temporaries behind while it
/// says that nothing was. The signal thread removes the named temporaries it knows of
/// (pending.rs, `clean_up_for_exit`) and then prints and exits, but the 32 workers go on
/// meanwhile: a temporary linked or created after the list was taken (or between its creation
/// and `set_pending`) is never removed. On a file system with O_TMPFILE this is every
/// `--force` over existing outputs (the hidden `.NAME.*.paraes-tmp` that `link_anonymous`
/// renames over the old file: a whole copy, plaintext for `dec`); without O_TMPFILE it is
/// every output (measured: 1 to 19 left per interrupted run of 3,000 files).
#[test]
fn an_interrupted_many_file_run_leaves_no_hidden_temporary() {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    fs::create_dir(s.path("in")).unwrap();
    for i in 0..2000 {
        s.write(&format!("in/f{i}"), &seeded_bytes(i, 20_000));
    }
    let args = [
        "enc",
        "-q",
        "-k",
        "key",
        "--recursive",
        "in",
        "--output-dir",
        "out",
    ];
    assert_success(&s.run(&args), "the first run");
    let mut forced = args.to_vec();
    forced.push("--force");
    for (round, delay_ms) in [150u64, 300, 450, 600, 750].into_iter().enumerate() {
        let child = s
            .command(&forced)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        send_signal(child.id(), if round % 2 == 0 { "TERM" } else { "INT" });
        let out = child.wait_with_output().unwrap();
        let left: Vec<String> = fs::read_dir(s.path("out/in"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".paraes-tmp"))
            .collect();
        assert!(
            left.is_empty(),
            "round {round} ({delay_ms} ms, status {:?}, said: {}): {} hidden temporaries left, \
             e.g. {:?}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim(),
            left.len(),
            left.first()
        );
    }
}

/// README: an `--output-dir` run "never writes through a symbolic link below the directory
/// you named". `make_parents` (run/many.rs) checks each directory below it with `O_NOFOLLOW`
/// when the file's job starts, but the output is then made and linked by its path name
/// (output.rs: `O_TMPFILE` in the directory by name, `linkat`/`rename` to the path at the
/// commit, after the whole file's work): a directory below `--output-dir` replaced by a link
/// during the work sends the output through the link, and with `--force` replaces the file of
/// the same name where the link points.
#[test]
fn a_link_swapped_in_below_the_output_directory_during_the_work_is_not_written_through() {
    let s = Scratch::for_large_files(1 << 30);
    s.key_file("key", 256, 1, true);
    fs::create_dir_all(s.path("src/sub")).unwrap();
    fs::write(s.path("src/sub/big"), vec![0u8; 256 << 20]).unwrap();
    fs::create_dir_all(s.path("out/src/sub")).unwrap();
    fs::create_dir(s.path("victim")).unwrap();
    s.write("victim/big.paraes", b"the victim's file");
    let mut child = s
        .command(&[
            "enc",
            "-q",
            "-k",
            "key",
            "--recursive",
            "src",
            "--output-dir",
            "out",
            "--force",
        ])
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until(60, "the unfinished output in out/src/sub", || {
        unfinished_output(pid, &s.path("out/src/sub")).is_some()
    });
    // Another user with a way into the output tree swaps the directory for a link.
    fs::rename(s.path("out/src/sub"), s.path("out/src/sub.real")).unwrap();
    std::os::unix::fs::symlink(s.path("victim"), s.path("out/src/sub")).unwrap();
    let status = child.wait().unwrap();
    assert!(
        s.read("victim/big.paraes") == b"the victim's file",
        "the output went through the link swapped in below --output-dir and replaced the \
         file there (status {:?})",
        status.code()
    );
}

/// The most memory a child of this test process has held (nextest runs each test in a
/// process of its own), in bytes.
fn children_max_rss() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage), 0);
        usage
    };
    usage.ru_maxrss as u64 * 1024
}

/// README ("Many files") said that the list of names is held in memory at "about a hundred
/// bytes per file"; a `--recursive` run held about 700-900 bytes per file (measured: 88 MB
/// for 100,000 files, 231 MB for 300,000, against 6 MB for one): the names were copied into the
/// walk's list, the plan's jobs, the collision map (with each output's absolute path), the
/// identity map and the runner's list. Now the walk hands each file to the plan as it is found,
/// the plan keeps an input's name and its output's, the collision check a 16-byte hash of where
/// each output lands, and the runner borrows the plan's names: about 400 bytes per file
/// (426 measured here), which README says and this test keeps true (with room for the longer
/// absolute paths of another machine's scratch directory).
#[test]
fn a_many_file_run_holds_about_400_bytes_per_file() {
    const FILES: u64 = 100_000;
    let s = Scratch::for_large_files(64 << 20);
    s.key_file("key", 256, 1, true);
    fs::create_dir(s.path("one")).unwrap();
    s.write("one/file-with-a-moderately-long-name-0000000", b"");
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "key",
        "--recursive",
        "one",
        "--output-dir",
        "o1",
    ]);
    assert_success(&out, "one file");
    let baseline = children_max_rss();
    fs::create_dir(s.path("many")).unwrap();
    for i in 0..FILES {
        fs::File::create(s.path(&format!("many/file-with-a-moderately-long-name-{i:07}"))).unwrap();
    }
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "key",
        "--recursive",
        "many",
        "--output-dir",
        "o2",
    ]);
    assert_success(&out, "many files");
    let per_file = children_max_rss().saturating_sub(baseline) / FILES;
    assert!(
        per_file <= 600,
        "{per_file} bytes per file (README: about 400 bytes)"
    );
}

/// Review of session 12's fixes (helper revc). `rekey` (and `upgrade`) take their container
/// through `Taken::take`, which resolves the path's links in user space (`fs::canonicalize`,
/// i.e. `realpath(3)`), where neither the kernel's `fs.protected_symlinks` nor paraes's own
/// check of `-o`'s links (its first version, `refuse_planted_links`) applied: a link another user planted in `/tmp`
/// (`/tmp/shared.paraes -> /home/victim/secret.paraes`) has the victim's *other* container
/// rekeyed, e.g. opened to the recipient the victim meant to give `/tmp/shared.paraes` to.
#[test]
fn rekey_never_follows_a_link_another_user_planted_in_a_sticky_directory() {
    const TEST: &str = "rekey_never_follows_a_link_another_user_planted_in_a_sticky_directory";
    let Some(s) = as_root(TEST, "a link of another owner needs root to make") else {
        return;
    };
    assert_silent_success(
        &s.run(&["enc", "-q", "-k", "key", "x", "-o", "secret.paraes"]),
        "enc",
    );
    assert_success(&s.run(&["keygen", "-o", "key2"]), "keygen");
    let before = s.read("secret.paraes");
    plant_link(&s, s.path("secret.paraes"), "c.paraes");
    let out = s.run(&[
        "rekey",
        "-q",
        "-k",
        "key",
        "--add-key-file",
        "key2",
        "shared/c.paraes",
    ]);
    assert!(
        s.read("secret.paraes") == before,
        "rekey followed a link another user planted in a sticky directory and rekeyed its \
         target (status {:?}, stderr: {})",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The first version of the check of `-o`'s links (`refuse_planted_links`, since replaced by
/// `shared_dirs::resolve_links`) recursed into each link's target joined to the
/// link's *unresolved* parent, so every link before it in the path is walked (and recursed
/// into) again: a path of n links is 2^n walks. `-o d/d/.../d/out` with `d -> .` (30 of them,
/// 31 links, within the kernel's 40) resolves at once in the kernel and in `realpath`, but
/// paraes spun for hours (measured: n=20 5 s, each 2 more links x4).
#[test]
fn a_path_through_many_links_is_checked_in_linear_time() {
    let s = with_plaintext(1000);
    std::os::unix::fs::symlink(".", s.path("d")).unwrap();
    std::os::unix::fs::symlink("/dev/null", s.path("out")).unwrap();
    let through = format!("{}out", "d/".repeat(30));
    let mut child = s
        .command(&["enc", "-q", "-k", "key", "x", "-o", &through])
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        status.is_some_and(|status| status.success()),
        "-o through 31 links did not finish within 20 s (status {status:?})"
    );
}

/// `Output::create` checks an existing FIFO or device at the output's name with
/// `refuse_if_planted(at, &fs::metadata(at))`: the directory of the *name* (a link's
/// directory) with the owner of the link's *target*. Callers that do not resolve links first
/// (`keygen -o`) get neither rule: a link another user planted in a sticky directory that points
/// at a root-owned device passes (root's `keygen -o /tmp/k` writes the key into whatever disk
/// `/tmp/k` names, where `fs.protected_symlinks` is off, as on this machine), while the user's
/// own link in `/tmp` to a FIFO a colleague owns in a private directory is refused as "a FIFO
/// in /tmp that another user owns" (`enc -o` writes it).
#[test]
fn keygen_follows_no_planted_link() {
    const TEST: &str = "keygen_follows_no_planted_link";
    let Some(s) = as_root(TEST, "a link of another owner needs root to make") else {
        return;
    };
    plant_link(&s, "/dev/null", "k");
    let out = s.run(&["keygen", "-o", "shared/k"]);
    assert!(
        !out.status.success(),
        "keygen -o wrote the key through a link another user planted in a sticky directory \
         (to /dev/null here; to a disk in the attack)"
    );
}

/// The other side of `keygen_follows_no_planted_link`: this user's own link in a shared
/// directory, to a colleague's FIFO in a private one, is refused by keygen (enc -o writes it).
#[test]
fn keygen_refuses_no_own_link_to_a_colleagues_fifo() {
    const TEST: &str = "keygen_refuses_no_own_link_to_a_colleagues_fifo";
    let Some(s) = as_root(TEST, "a FIFO of another owner needs root to make") else {
        return;
    };
    shared_dir(&s);
    assert_success(&s.bash("mkfifo -m 666 fifo"), "mkfifo");
    std::os::unix::fs::chown(s.path("fifo"), Some(UNPRIVILEGED), Some(UNPRIVILEGED)).unwrap();
    std::os::unix::fs::symlink(s.path("fifo"), s.path("shared/mine")).unwrap();
    let reader = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(s.path("fifo"))
        .unwrap();
    let out = s.run(&["keygen", "-o", "shared/mine"]);
    drop(reader);
    assert_success(&out, "keygen -o this user's own link to a colleague's FIFO");
}

/// A file given twice (two names, or two hard links) that is also another input's output is
/// named as it was before the many-file plan kept its names apart (session 13): by the last of
/// its names in the order the inputs were given, whether or not that name got an output name
/// of its own. The rewrite named the first, and put inputs without an output name after all
/// the others.
#[test]
fn an_output_that_is_an_input_given_twice_is_named_by_its_last_name() {
    let s = with_plaintext(10);
    s.write("a", b"a");
    s.write("a.paraes", b"precious");
    let out = s.run(&["enc", "-q", "-k", "key", "a", "a.paraes", "./a.paraes"]);
    let err = assert_error(&out, "output is an input given twice");
    assert!(
        err.contains("a.paraes (the output of a) is the input ./a.paraes of this run"),
        "{err}"
    );
    // q.paraes is a second name of x; x gets no output name (dec of a name without .paraes).
    s.write("x.paraes", b"not a container");
    fs::hard_link(s.path("x"), s.path("q.paraes")).unwrap();
    for (order, shown) in [
        (["q.paraes", "x", "x.paraes"], "x"),
        (["x", "q.paraes", "x.paraes"], "q.paraes"),
    ] {
        let mut args = vec!["dec", "-q", "-k", "key"];
        args.extend(order);
        let err = assert_error(&s.run(&args), "output is an unnamed input");
        assert!(
            err.contains(&format!(
                "x (the output of x.paraes) is the input {shown} of this run"
            )),
            "{order:?}: {err}"
        );
    }
    assert_eq!(s.read("a.paraes"), b"precious");
    assert_eq!(s.read("x"), seeded_bytes(1, 10));
}

/// `bench --json`, `--csv` and `--plot PATH` wrote their reports with `std::fs::write` (and the
/// plot library's own file), which follow links and truncate: a link another user planted in a
/// shared directory (`/tmp/report.csv -> /home/victim/file`) had its target replaced by the
/// report, and a write that failed half-way left half a report. The reports now go through the
/// file layer, as every other output: a planted link is refused, a report appears whole.
#[test]
fn bench_reports_follow_no_planted_link() {
    const TEST: &str = "bench_reports_follow_no_planted_link";
    let Some(s) = as_root(TEST, "a link of another owner needs root to make") else {
        return;
    };
    let quick = [
        "bench",
        "--quick",
        "-b",
        "cpu",
        "-m",
        "ctr",
        "--sizes",
        "16KiB",
        "--repeat",
        "1",
        "--baseline",
        "none",
    ];
    assert_success(
        &s.run(&[&quick[..], &["--json", "run.json"]].concat()),
        "bench --json run.json",
    );
    s.write("important", b"the victim's file");
    plant_link(&s, s.path("important"), "report");
    for args in [
        &[&quick[..], &["--json", "shared/report"]].concat(),
        &["bench", "--from-json", "run.json", "--csv", "shared/report"][..],
        &[
            "bench",
            "--from-json",
            "run.json",
            "--plot",
            "shared/report",
        ][..],
    ] {
        let out = s.run(args);
        assert!(
            s.read("important") == b"the victim's file",
            "{args:?} wrote through a link another user planted (status {:?})",
            out.status.code()
        );
        assert_error(&out, &format!("{args:?}"));
    }
}
