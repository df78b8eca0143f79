//! `paraes enc|dec --backend mpi` under `mpiexec -n 1|2|3|4`: both I/O strategies, both
//! directions. Format v3 containers written under MPI (sizes from empty to several 16 KiB chunks
//! plus a few bytes, both key sizes) are C2SP messages that the single-process tool and a
//! one-thread reference sealer agree with, and the single-process tool's containers decrypt
//! under MPI. Raw streams (CTR and ECB at every key size) are byte-identical to the
//! single-process tool's. What containers no longer offer (ECB, 192-bit bodies, batches that are
//! not whole 16 KiB chunks) is a usage error. Without the `mpi` feature, the one error that says
//! how to get it. The ranks are started by the launcher of the MPI library the binary was built
//! against, which `PARAES_MPI_LIBRARY` names (`mpich`: `mpiexec.mpich`; `openmpi`:
//! `mpirun.openmpi`), checked against what the binary links; the test command in README.md
//! installs both and runs these tests under each. A missing launcher or an unset library fails
//! the tests, it does not skip them; every launch ends within `bounded::LAUNCH_DEADLINE`.
//!
//! The launcher and container helpers here serve the other MPI files too: `mpi_batches` (the
//! ranks share a body at the boundaries of the pipeline batch), `mpi_failures` (failures end
//! the whole job with one message and no output), `mpi_jobs` (pipes, a single rank without
//! mpiexec, many files, bare messages), and wycheproof's MPI tests.

/// A build without the feature answers `--backend mpi` with how to get it.
#[cfg(not(feature = "mpi"))]
#[test]
fn without_the_feature_mpi_says_how_to_build_it() {
    let scratch = crate::common::Scratch::new();

    scratch.key_file("k", 256, 1, true);
    scratch.write("in", b"data");
    let before = scratch.names();
    let out = scratch.run(&["enc", "--backend", "mpi", "-k", "k", "in", "-o", "out"]);
    let message = scratch.assert_refused(&out, &before, "mpi without the feature");
    assert!(
        message.starts_with("not built with MPI support: cargo build --features mpi"),
        "{message}"
    );
}

#[cfg(feature = "mpi")]
pub(crate) mod with_mpi {
    use std::ffi::OsString;
    use std::path::PathBuf;
    use std::process::{Command, Output, Stdio};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use paraes_core::cobblestone::{self, Variant};

    use crate::common::{
        assert_success, assert_usage_error, bin, container_len, records, salt, seeded_bytes,
        stderr, Scratch, CHUNK, CHUNK_ARG, CONTAINER_BITS, HEADER_LEN, KEY_BITS,
        MESSAGE_PREFIX_LEN, TAG_LEN,
    };

    pub(crate) const RANKS: [usize; 4] = [1, 2, 3, 4];
    pub(crate) const STRATEGIES: [&str; 2] = ["direct", "scatter"];
    /// Empty, one byte and one block (fewer chunks than ranks), around one chunk (exactly one
    /// chunk ends in an empty final chunk of its own), and four chunks plus a few bytes (five
    /// chunks: uneven shares of 2 + 3 on two ranks, 1 + 2 + 2 on three; segments that start
    /// mid-stream).
    const SIZES: [usize; 7] = [0, 1, 16, CHUNK - 1, CHUNK, CHUNK + 1, 4 * CHUNK + 5];
    /// `paraes enc` on MPI with the key file `k` and the tests' small batches (one 16 KiB chunk).
    pub(crate) const MPI_ENC: [&str; 8] = [
        "enc",
        "--backend",
        "mpi",
        "-q",
        "-k",
        "k",
        "--chunk-size",
        CHUNK_ARG,
    ];
    /// The pipeline batch of `dec` (which has no `--chunk-size`): the default, whole 16 KiB
    /// chunks of it.
    pub(crate) const DEC_BATCH: usize = paraes_core::pipeline::DEFAULT_CHUNK_SIZE;
    /// Bytes of one full record of a v3 body: a 16 KiB chunk and its tag.
    const RECORD: usize = CHUNK + TAG_LEN;

    /// Where record `index` of a v3 container with a one-stanza header starts.
    pub(crate) fn record_start(index: usize) -> usize {
        HEADER_LEN + MESSAGE_PREFIX_LEN + index * RECORD
    }

    /// `PARAES_MPI_LIBRARY`'s value: which MPI library the binary under test was built
    /// against, so which launcher starts its ranks (scripts/test.sh sets it for each build).
    pub(crate) const LIBRARY_VARIABLE: &str = "PARAES_MPI_LIBRARY";

    /// An MPI library the tests run under: Debian's MPICH or Open MPI, each started by its own
    /// launcher under its suffixed name, never by whatever `mpiexec` is first on the PATH
    /// (installing Open MPI repoints Debian's `mpiexec` at it).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Library {
        Mpich,
        OpenMpi,
    }

    impl Library {
        /// The library of the binary under test, from [`LIBRARY_VARIABLE`], checked once
        /// against what the binary links (`ldd`) and that its launcher runs; any doubt fails
        /// the test with one line that says what to set or install.
        pub(crate) fn under_test() -> Library {
            static CHECKED: std::sync::OnceLock<Result<Library, String>> =
                std::sync::OnceLock::new();
            match CHECKED.get_or_init(Library::check) {
                Ok(library) => *library,
                Err(why) => panic!("{why}"),
            }
        }

        fn check() -> Result<Library, String> {
            let links = Command::new("ldd")
                .arg(bin())
                .output()
                .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
                .map_err(|e| format!("ldd {}: {e}", bin()))?;
            let value = std::env::var(LIBRARY_VARIABLE).unwrap_or_default();
            let library = Library::named(&value, &links)?;
            let runs = Command::new(library.launcher()[0])
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !runs {
                return Err(format!(
                    "{} not found: install {} libclang-dev (the test command in README.md \
                     does)",
                    library.launcher()[0],
                    library.packages()
                ));
            }
            Ok(library)
        }

        /// The library that `value` (of [`LIBRARY_VARIABLE`]) names, if the binary under test
        /// links it and it alone by `links` (what `ldd` says of the binary); else one line
        /// that says what to set or build.
        fn named(value: &str, links: &str) -> Result<Library, String> {
            let linked: Vec<Library> = [Library::Mpich, Library::OpenMpi]
                .into_iter()
                .filter(|library| links.contains(library.soname()))
                .collect();
            let hint = match linked[..] {
                [one] => format!("{LIBRARY_VARIABLE}={}", one.name()),
                _ => format!("{LIBRARY_VARIABLE}=mpich or openmpi"),
            };
            let library = match value {
                "mpich" => Library::Mpich,
                "openmpi" => Library::OpenMpi,
                _ => {
                    return Err(format!(
                        "set {hint} (the MPI library {} was built against, which picks the \
                         launcher; scripts/test.sh shows how), not {value:?}",
                        bin()
                    ))
                }
            };
            if linked != [library] {
                return Err(format!(
                    "{LIBRARY_VARIABLE}={value}, but {} links {linked:?} (ldd): build it with \
                     MPICC=mpicc.{value} in a target directory of its own (scripts/mpi-cargo.sh), \
                     or set {hint}",
                    bin()
                ));
            }
            Ok(library)
        }

        /// Its name in [`LIBRARY_VARIABLE`] and `mpicc.NAME`.
        pub(crate) fn name(self) -> &'static str {
            match self {
                Library::Mpich => "mpich",
                Library::OpenMpi => "openmpi",
            }
        }

        /// The shared library that a binary built against it links, as `ldd` names it.
        fn soname(self) -> &'static str {
            match self {
                Library::Mpich => "libmpich.so",
                Library::OpenMpi => "libmpi.so.40",
            }
        }

        /// Debian's packages of its launcher and headers.
        fn packages(self) -> &'static str {
            match self {
                Library::Mpich => "mpich libmpich-dev",
                Library::OpenMpi => "openmpi-bin libopenmpi-dev",
            }
        }

        /// Its launcher and the options every launch takes. Open MPI's `mpirun` refuses more
        /// ranks than cores without `--oversubscribe` (CI has 2 cores, the tests start up to
        /// 4 ranks), and `--quiet` drops the banner it adds when a rank exits non-zero, so
        /// that a failed job shows paraes' one line under both launchers.
        pub(crate) fn launcher(self) -> &'static [&'static str] {
            match self {
                Library::Mpich => &["mpiexec.mpich"],
                Library::OpenMpi => &["mpirun.openmpi", "--oversubscribe", "--quiet"],
            }
        }

        /// The environment every launch and rank gets: Open MPI refuses to run as root (as CI
        /// does) unless told it may, and its default choice of point-to-point layer probes
        /// network transports (libfabric, UCX) in every rank, which took 0.2 s of each 0.4 s
        /// launch here; `ob1` (over shared memory on one node) is what such a job ends up on.
        /// When a rank exits non-zero, `mpirun` waits `odls_base_sigkill_timeout` (1 s) between
        /// signalling the job and killing it, even when every rank has already exited: a
        /// failed two-rank job took 2.2 s, and with 0 0.17 s. With 0 a rank still running is
        /// killed at once, which only makes "no output is left" harder to pass.
        /// Each launch gets a session directory base of its own (`orte_tmpdir_base`): jobs
        /// that share the default one (`/tmp/ompi.HOST.UID`) race, one job's `mpirun` removing
        /// the shared top directory as it ends while another creates its own below it, and the
        /// second fails with `ORTE_ERROR_LOG: Error in file ../../../orte/util/session_dir.c
        /// at line 107` (seen in a CI rehearsal: 3 of 18 tests, with the tests side by side;
        /// open-mpi/ompi#7049). MPICH needs nothing.
        pub(crate) fn environment(self) -> Vec<(&'static str, OsString)> {
            match self {
                Library::Mpich => Vec::new(),
                Library::OpenMpi => vec![
                    ("OMPI_ALLOW_RUN_AS_ROOT", "1".into()),
                    ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1".into()),
                    ("OMPI_MCA_pml", "ob1".into()),
                    ("OMPI_MCA_odls_base_sigkill_timeout", "0".into()),
                    ("OMPI_MCA_orte_tmpdir_base", session_base().into_os_string()),
                ],
            }
        }

        /// The variable whose value is a rank's number in the rank's environment.
        pub(crate) fn rank_variable(self) -> &'static str {
            match self {
                Library::Mpich => "PMI_RANK",
                Library::OpenMpi => "OMPI_COMM_WORLD_RANK",
            }
        }
    }

    /// A new, empty directory for one Open MPI launch's session directories: one per launch,
    /// in one directory of this test process in the temporary directory (a short path: Open
    /// MPI puts sockets there). The first call removes those of test processes that have
    /// ended, so runs leave at most their own behind.
    pub(crate) fn session_base() -> PathBuf {
        static LAUNCHES: AtomicUsize = AtomicUsize::new(0);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        const PREFIX: &str = "paraes-ompi-";
        let temp = std::env::temp_dir();
        SWEPT.call_once(|| {
            for entry in std::fs::read_dir(&temp).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let pid = name.to_str().and_then(|name| name.strip_prefix(PREFIX));
                if pid.is_some_and(|pid| !std::path::Path::new("/proc").join(pid).exists()) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        });
        let launch = LAUNCHES.fetch_add(1, Ordering::Relaxed);
        let base = temp
            .join(format!("{PREFIX}{}", std::process::id()))
            .join(launch.to_string());
        std::fs::create_dir_all(&base).expect("a session directory base for Open MPI");
        base
    }

    /// The launcher of the binary under test as a command (its options and environment set),
    /// to which `-n N PROGRAM ARGS` are added; run it through [`crate::bounded`].
    pub(crate) fn mpiexec() -> Command {
        let library = Library::under_test();
        let (program, options) = library.launcher().split_first().expect("a launcher");
        let mut command = Command::new(program);
        command.args(options).envs(library.environment());
        command
    }

    /// The library is never guessed: an unset or unknown `PARAES_MPI_LIBRARY`, or one that the
    /// binary does not link (by `ldd`), is one line that says what to set; a library the
    /// binary links alone is taken.
    #[test]
    fn the_library_is_named_and_matches_the_binary() {
        let mpich = "\tlibmpich.so.12 => /usr/lib/x86_64-linux-gnu/libmpich.so.12 (0x7f)\n";
        let openmpi = "\tlibmpi.so.40 => /usr/lib/x86_64-linux-gnu/libmpi.so.40 (0x7f)\n";
        assert_eq!(Library::named("mpich", mpich), Ok(Library::Mpich));
        assert_eq!(Library::named("openmpi", openmpi), Ok(Library::OpenMpi));
        for (value, links, says) in [
            ("", openmpi, "set PARAES_MPI_LIBRARY=openmpi ("),
            ("MPICH", mpich, "set PARAES_MPI_LIBRARY=mpich ("),
            ("", "", "set PARAES_MPI_LIBRARY=mpich or openmpi ("),
            ("openmpi", mpich, "PARAES_MPI_LIBRARY=openmpi, but "),
            (
                "mpich",
                &format!("{mpich}{openmpi}"),
                "PARAES_MPI_LIBRARY=mpich, but ",
            ),
        ] {
            let why = Library::named(value, links).expect_err(value);
            assert!(why.starts_with(says), "{value:?}: {why}");
            assert_eq!(why.lines().count(), 1, "{why}");
        }
    }

    /// `mpiexec -n RANKS paraes ARGS` in the scratch directory, with the launcher of the
    /// binary's library, within [`crate::bounded::LAUNCH_DEADLINE`].
    pub(crate) fn run_mpi(scratch: &Scratch, ranks: usize, args: &[&str]) -> Output {
        let mut command = mpiexec();
        command
            .arg("-n")
            .arg(ranks.to_string())
            .arg(bin())
            .args(args)
            .current_dir(scratch.path(""));
        crate::bounded::output(&mut command, &format!("mpiexec -n {ranks} paraes {args:?}"))
    }

    /// A multiple-program launch: `mpiexec -n A paraes X : -n B PROGRAM Y ...`, bounded as
    /// [`run_mpi`] is.
    pub(crate) fn run_mpmd(scratch: &Scratch, parts: &[(usize, Vec<String>)]) -> Output {
        let mut command = mpiexec();
        for (i, (ranks, program)) in parts.iter().enumerate() {
            if i > 0 {
                command.arg(":");
            }
            command.arg("-n").arg(ranks.to_string()).args(program);
        }
        command.current_dir(scratch.path(""));
        crate::bounded::output(&mut command, &format!("mpiexec {parts:?}"))
    }

    /// `bash -c SCRIPT` in the scratch directory with `$PARAES` naming the binary and
    /// `$MPIEXEC` the launcher with its options (the environment it needs set), bounded as
    /// [`run_mpi`] is, background jobs of the script included.
    pub(crate) fn run_mpi_script(scratch: &Scratch, script: &str) -> Output {
        let library = Library::under_test();
        let mut command = Command::new("bash");
        command
            .args(["-c", script])
            .env("PARAES", bin())
            .env("MPIEXEC", library.launcher().join(" "))
            .envs(library.environment())
            .current_dir(scratch.path(""));
        crate::bounded::output(&mut command, script)
    }

    /// `paraes ARGS` without a launcher (a job of one rank: an MPI singleton) in the scratch
    /// directory, with the environment the library's processes get, `stdin` on a pipe to its
    /// standard input, bounded as [`run_mpi`] is.
    pub(crate) fn run_singleton(scratch: &Scratch, args: &[&str], stdin: &[u8]) -> Output {
        let mut command = scratch.command(args);
        command.envs(Library::under_test().environment());
        let what = format!("paraes {args:?} (one rank, no launcher)");
        crate::bounded::output_with_stdin(command, stdin, &what)
    }

    /// `paraes ARGS` as a program line of [`run_mpmd`].
    pub(crate) fn paraes(args: &[&str]) -> Vec<String> {
        std::iter::once(bin())
            .chain(args.iter().copied())
            .map(String::from)
            .collect()
    }

    /// The value after `name:` on a line of `text`.
    fn shown<'a>(text: &'a str, name: &str) -> &'a str {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in: {text}"))
            .trim()
    }

    /// Checks the container `name` (sealed with the key file `k`) as a format v3 file of
    /// `plain` with a `bits`-bit body, whoever wrote it: its length and header facts; records
    /// of 16 KiB with a shorter last one; the single-process tool decrypts it to `plain`; and
    /// its body is, byte for byte, the C2SP message that a one-thread reference sealer makes of
    /// `plain` under the data key and context that `dec --show-data-key` shows, with the file's
    /// own salt (so no pipeline batch or rank split changed a byte).
    pub(crate) fn assert_v3_container(
        scratch: &Scratch,
        name: &str,
        plain: &[u8],
        bits: usize,
        what: &str,
    ) {
        let sealed = scratch.read(name);
        assert_eq!(
            sealed.len(),
            container_len(plain.len(), HEADER_LEN),
            "{what}: container length"
        );
        assert_eq!(sealed[8], 3, "{what}: format version byte");
        assert_eq!(
            sealed[16..32],
            [0u8; 16],
            "{what}: a v3 header has no counter"
        );
        let chunks = records(&sealed, HEADER_LEN);
        assert_eq!(chunks.len(), plain.len() / CHUNK + 1, "{what}: chunk count");
        assert_eq!(
            chunks.last().expect("a last chunk").0.len(),
            plain.len() % CHUNK,
            "{what}: the last chunk is the short one"
        );

        let out = scratch.run(&["dec", "-k", "k", "--show-data-key", name, "-o", "-"]);
        let err = assert_success(&out, what);
        assert!(out.stdout == plain, "{what}: single-process decryption");
        let data_key = hex::decode(shown(&err, "data key:")).expect("a hex data key");
        let context = hex::decode(shown(&err, "context:")).expect("a hex context");
        assert_eq!(data_key.len(), bits / 8, "{what}: data key size: {err}");
        assert_eq!(
            context,
            sealed[..16],
            "{what}: the context is the preamble's start"
        );
        let variant = match bits {
            128 => Variant::Cobblestone128,
            256 => Variant::Cobblestone256,
            _ => panic!("no container body of {bits} bits"),
        };
        let reference = cobblestone::seal(
            variant,
            &data_key,
            &salt(&sealed, HEADER_LEN),
            &context,
            plain,
        )
        .expect("the reference seals");
        assert!(
            sealed[HEADER_LEN..] == reference[..],
            "{what}: the body is not the reference sealer's message of the plaintext"
        );
    }

    /// Containers written under MPI, by any rank count and strategy and whatever the batch,
    /// are format v3 files whose body is exactly the reference C2SP message of the plaintext
    /// ([`assert_v3_container`]: the single-process tool decrypts them), and they decrypt under
    /// MPI with another rank count and strategy; containers of the single-process tool decrypt
    /// under MPI. Two encryptions of one file differ (fresh salt and file key), so they are
    /// compared by what they decrypt to, never byte for byte.
    #[test]
    fn containers_interoperate_with_the_single_process_tool() {
        let scratch = Scratch::new();
        let mut cases: Vec<(usize, &str)> = SIZES.iter().map(|&len| (len, CHUNK_ARG)).collect();
        // Batches of three chunks: shares that are not one chunk each, same bytes out.
        cases.push((4 * CHUNK + 5, "48KiB"));
        let mut case = 0u64;
        for ranks in RANKS {
            for (s, strategy) in STRATEGIES.into_iter().enumerate() {
                for (i, &(len, batch)) in cases.iter().enumerate() {
                    case += 1;
                    let bits = CONTAINER_BITS[(i + ranks) % 2];
                    let bits_arg = bits.to_string();
                    let what =
                        format!("{ranks} ranks, {strategy}, {bits} bits, {len} B, batch {batch}");
                    scratch.key_file("k", bits, case, true);
                    let plain = seeded_bytes(case, len);
                    scratch.write("plain", &plain);
                    let common = ["--backend", "mpi", "--mpi-io", strategy, "-q", "-k", "k"];

                    let mut args = vec!["enc", "--bits", &bits_arg, "--chunk-size", batch];
                    args.extend(common);
                    args.extend(["plain", "-o", "mpi.paraes", "-f"]);
                    assert_success(&run_mpi(&scratch, ranks, &args), &what);
                    assert_v3_container(&scratch, "mpi.paraes", &plain, bits, &what);

                    // What MPI wrote, read back under MPI by another job shape.
                    let (other_ranks, other_io) = (ranks % 3 + 1, STRATEGIES[1 - s]);
                    let args = [
                        "dec",
                        "--backend",
                        "mpi",
                        "--mpi-io",
                        other_io,
                        "-q",
                        "-k",
                        "k",
                        "mpi.paraes",
                        "-o",
                        "back",
                        "-f",
                    ];
                    assert_success(&run_mpi(&scratch, other_ranks, &args), &what);
                    assert!(
                        scratch.read("back") == plain,
                        "{what}: decrypted under MPI ({other_ranks} ranks, {other_io})"
                    );

                    let out = scratch.run(&[
                        "enc",
                        "-q",
                        "--bits",
                        &bits_arg,
                        "--chunk-size",
                        batch,
                        "-k",
                        "k",
                        "plain",
                        "-o",
                        "one.paraes",
                        "-f",
                    ]);
                    assert_success(&out, &what);
                    let one = scratch.read("one.paraes");
                    assert_eq!(
                        one.len(),
                        scratch.read("mpi.paraes").len(),
                        "{what}: lengths"
                    );
                    assert_ne!(
                        salt(&one, HEADER_LEN),
                        salt(&scratch.read("mpi.paraes"), HEADER_LEN),
                        "{what}: two encryptions share a salt"
                    );
                    let mut args = vec!["dec"];
                    args.extend(common);
                    args.extend(["one.paraes", "-o", "back", "-f"]);
                    assert_success(&run_mpi(&scratch, ranks, &args), &what);
                    assert!(
                        scratch.read("back") == plain,
                        "{what}: MPI decryption of the single-process container"
                    );
                    scratch.assert_no_temporary(&what);
                }
            }
        }
    }

    /// Raw streams (no container) are byte-identical to the single-process tool's, both ways,
    /// around chunk boundaries, at every key size; enc in 16 KiB batches, dec (which has no
    /// `--chunk-size`) in its default batches, also on a stream of a few of those. The IVs are
    /// just before the 128-bit wrap, so that the counter wraps inside the second batch (of 16
    /// KiB; of the default size on the longer stream): a rank whose segment starts mid-stream
    /// must carry the counter across it.
    #[test]
    fn raw_streams_match_the_single_process_tool() {
        let scratch = Scratch::new();
        // The IV whose counter wraps to zero 8 blocks into the second batch of `batch` bytes.
        let wrap_in_second =
            |batch: usize| format!("{:032x}", 0u128.wrapping_sub(batch as u128 / 16 + 8));
        let iv = wrap_in_second(CHUNK);
        let far_iv = wrap_in_second(DEC_BATCH);
        assert_eq!(iv, "fffffffffffffffffffffffffffffbf8");
        let mut case = 0usize;
        for ranks in RANKS {
            for strategy in STRATEGIES {
                for (mode_args, sizes) in [
                    (vec!["ctr", "--iv", &iv], SIZES.to_vec()),
                    (vec!["ctr", "--iv", &far_iv], vec![2 * DEC_BATCH + 5]),
                    (
                        vec!["ecb"],
                        vec![0, 17, CHUNK - 1, CHUNK, 2 * CHUNK, 4 * CHUNK + 5],
                    ),
                    (vec!["ecb", "--no-pad"], vec![0, 16, CHUNK, 4 * CHUNK + 16]),
                ] {
                    for len in sizes {
                        case += 1;
                        let bits = KEY_BITS[case % 3];
                        let what = format!(
                            "{ranks} ranks, {strategy}, {mode_args:?}, {bits} bits, {len} B"
                        );
                        scratch.key_file("k", bits, len as u64, true);
                        scratch.write("plain", &seeded_bytes(len as u64, len));
                        let mut raw = vec!["-q", "-k", "k", "--raw"];
                        raw.extend(&mode_args);
                        // Encrypt the plaintext, then decrypt the single-process ciphertext.
                        for (direction, input) in [("enc", "plain"), ("dec", "cipher")] {
                            let with = |backend: &'static str, output: &'static str| {
                                let mut args = vec![direction, "--backend", backend];
                                if backend == "mpi" {
                                    args.extend(["--mpi-io", strategy]);
                                }
                                if direction == "enc" {
                                    args.extend(["--chunk-size", CHUNK_ARG]);
                                }
                                args.extend(&raw);
                                args.extend([input, "-o", output, "-f"]);
                                args
                            };
                            assert_success(&scratch.run(&with("cpu", "one")), &what);
                            let expected = scratch.read("one");
                            assert_success(&run_mpi(&scratch, ranks, &with("mpi", "many")), &what);
                            assert!(
                                scratch.read("many") == expected,
                                "{what} {direction}: MPI differs from the single-process tool"
                            );
                            if direction == "enc" {
                                scratch.write("cipher", &expected);
                            } else {
                                assert!(expected == scratch.read("plain"), "{what}: round trip");
                            }
                        }
                    }
                }
            }
        }
    }

    /// What containers no longer offer is a usage error under MPI as without it (exit status
    /// 2, nothing written): ECB (`--raw ecb` only), 192-bit bodies (`--raw` only), and a batch
    /// that is not a whole number of 16 KiB chunks.
    #[test]
    fn what_containers_lack_is_a_usage_error_under_mpi() {
        let scratch = Scratch::new();
        scratch.key_file("k", 256, 9, true);
        scratch.write("plain", &seeded_bytes(9, 3 * CHUNK));
        let before = scratch.names();
        for ranks in RANKS {
            for (option, value, says) in [
                ("--mode", "ecb", "no ECB"),
                ("--bits", "192", "not 192"),
                ("--chunk-size", "20KiB", "multiple of 16KiB"),
            ] {
                let what = format!("{option} {value}, {ranks} ranks");
                let mut args = vec!["enc", "--backend", "mpi", "-q", "-k", "k"];
                args.extend([option, value, "plain", "-o", "out"]);
                let out = run_mpi(&scratch, ranks, &args);
                let message = if ranks == 1 {
                    assert_usage_error(&out, &what)
                } else {
                    // Every rank checks its command line before MPI starts, so each may say
                    // it, and mpiexec merges their standard errors (lines may interleave).
                    let err = stderr(&out);
                    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
                    assert!(err.starts_with("paraes: error: "), "{what}: {err}");
                    err
                };
                assert!(message.contains(says), "{what}: {message}");
                assert_eq!(scratch.names(), before, "{what}: something was written");
            }
        }
    }
}
