//! `paraes enc|dec --backend mpi` under `mpiexec -n 1|2|3`: both I/O strategies, both
//! directions, ECB and CTR at every key size, sizes from empty to several chunks plus a few
//! bytes, all identical to the single-process tool; and the failures that must end the whole job
//! with one message and no output. Without the `mpi` feature, the one error that says how to get
//! it. Needs MPICH's `mpiexec` (the test command in README.md installs it): a missing launcher
//! fails the tests, it does not skip them.

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
mod with_mpi {
    use std::io::Write;
    use std::process::{Command, Output, Stdio};
    use std::time::{Duration, Instant};

    use crate::common::{
        assert_success, bin, body_without_tags, container_len, nonce, seeded_bytes, stderr, Mode,
        Scratch, CHUNK, CHUNK_ARG, HEADER_LEN, KEY_BITS,
    };

    const RANKS: [usize; 3] = [1, 2, 3];
    const STRATEGIES: [&str; 2] = ["direct", "scatter"];
    /// Empty, one byte and one block (fewer chunks than ranks), around one chunk (ECB's padding
    /// makes a chunk of its own at exactly one chunk), and five chunks plus a few bytes (uneven
    /// shares: 2 + 3 chunks on two ranks, 1 + 2 + 2 on three; segments that start mid-stream).
    const SIZES: [usize; 7] = [0, 1, 16, CHUNK - 1, CHUNK, CHUNK + 1, 4 * CHUNK + 5];
    /// `paraes enc` on MPI with the key file `k` and the tests' small chunks.
    const MPI_ENC: [&str; 8] = [
        "enc",
        "--backend",
        "mpi",
        "-q",
        "-k",
        "k",
        "--chunk-size",
        CHUNK_ARG,
    ];

    /// The launcher; its absence fails the test loudly.
    fn mpiexec() -> &'static str {
        let found = Command::new("mpiexec")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            found,
            "mpiexec not found: install MPICH (apt-get install mpich libmpich-dev libclang-dev); \
             the test command in README.md does this"
        );
        "mpiexec"
    }

    /// `mpiexec -n RANKS paraes ARGS` in the scratch directory.
    fn run_mpi(scratch: &Scratch, ranks: usize, args: &[&str]) -> Output {
        Command::new(mpiexec())
            .arg("-n")
            .arg(ranks.to_string())
            .arg(bin())
            .args(args)
            .current_dir(scratch.path(""))
            .stdin(Stdio::null())
            .output()
            .expect("mpiexec runs")
    }

    /// A multiple-program launch: `mpiexec -n A paraes X : -n B PROGRAM Y ...`.
    fn run_mpmd(scratch: &Scratch, parts: &[(usize, Vec<String>)]) -> Output {
        let mut command = Command::new(mpiexec());
        for (i, (ranks, program)) in parts.iter().enumerate() {
            if i > 0 {
                command.arg(":");
            }
            command.arg("-n").arg(ranks.to_string()).args(program);
        }
        command
            .current_dir(scratch.path(""))
            .stdin(Stdio::null())
            .output()
            .expect("mpiexec runs")
    }

    /// `paraes ARGS` as a program line of [`run_mpmd`].
    fn paraes(args: &[&str]) -> Vec<String> {
        std::iter::once(bin())
            .chain(args.iter().copied())
            .map(String::from)
            .collect()
    }

    /// The raw stream the single-process tool makes of `plain` for the body of a container.
    fn single_process_raw(scratch: &Scratch, mode: Mode, iv: &[u8; 16], plain: &str) -> Vec<u8> {
        let iv_hex = hex::encode(iv);
        let mut args = vec!["enc", "-q", "--backend", "cpu", "-k", "dk", "--raw"];
        args.push(mode.arg());
        if mode == Mode::Ctr {
            args.extend(["--iv", &iv_hex]);
        }
        args.extend([plain, "-o", "-"]);
        let out = scratch.run(&args);
        assert_success(&out, "single-process raw stream");
        out.stdout
    }

    /// Containers made by any rank count and strategy are the single-process tool's: same
    /// length, body equal to the raw mode stream from the header's counter, tags that the
    /// single-process tool verifies; and containers of the single-process tool decrypt the same
    /// under MPI.
    #[test]
    fn containers_match_the_single_process_tool() {
        let scratch = Scratch::new();
        let mut case = 0u64;
        for ranks in RANKS {
            for strategy in STRATEGIES {
                for mode in Mode::ALL {
                    for (i, &len) in SIZES.iter().enumerate() {
                        case += 1;
                        let bits = KEY_BITS[(i + ranks) % 3];
                        let what = format!("{ranks} ranks, {strategy}, {mode:?}-{bits}, {len} B");
                        scratch.key_file("k", bits, case, true);
                        let plain = seeded_bytes(case, len);
                        scratch.write("plain", &plain);
                        let common = ["--backend", "mpi", "--mpi-io", strategy, "-q", "-k", "k"];

                        let bits_arg = bits.to_string();
                        let mut args = vec!["enc", "-m", mode.arg(), "--chunk-size", CHUNK_ARG];
                        args.extend(["--bits", bits_arg.as_str()]);
                        args.extend(common);
                        args.extend(["plain", "-o", "mpi.paraes", "-f"]);
                        assert_success(&run_mpi(&scratch, ranks, &args), &what);
                        let sealed = scratch.read("mpi.paraes");
                        assert_eq!(sealed.len(), container_len(mode, len, HEADER_LEN), "{what}");
                        // The body is the raw stream under the container's body key.
                        let out = scratch.run(&[
                            "dec",
                            "-k",
                            "k",
                            "mpi.paraes",
                            "-o",
                            "/dev/null",
                            "--show-data-key",
                        ]);
                        let err = assert_success(&out, &what);
                        let data_key = err
                            .lines()
                            .find_map(|l| l.strip_prefix("data key:"))
                            .expect("dec --show-data-key prints the data key")
                            .trim()
                            .to_string();
                        assert_eq!(data_key.len(), bits / 4, "{what}: body key size");
                        scratch.write("dk", data_key.as_bytes());
                        scratch.set_mode("dk", 0o600);
                        let raw = single_process_raw(&scratch, mode, &nonce(&sealed), "plain");
                        assert_eq!(body_without_tags(&sealed, HEADER_LEN), raw, "{what}: body");
                        let out = scratch.run(&["dec", "-k", "k", "mpi.paraes", "-o", "-"]);
                        assert_success(&out, &what);
                        assert_eq!(out.stdout, plain, "{what}: single-process decryption");

                        let out = scratch.run(&[
                            "enc",
                            "-q",
                            "-m",
                            mode.arg(),
                            "--chunk-size",
                            CHUNK_ARG,
                            "-k",
                            "k",
                            "plain",
                            "-o",
                            "one.paraes",
                            "-f",
                        ]);
                        assert_success(&out, &what);
                        let mut args = vec!["dec"];
                        args.extend(common);
                        args.extend(["one.paraes", "-o", "back", "-f"]);
                        assert_success(&run_mpi(&scratch, ranks, &args), &what);
                        assert_eq!(scratch.read("back"), plain, "{what}: MPI decryption");
                        scratch.assert_no_temporary(&what);
                    }
                }
            }
        }
    }

    /// Raw streams (no container) are byte-identical to the single-process tool's, both ways,
    /// around chunk boundaries. The IV is near the 128-bit wrap, so a rank whose segment starts
    /// mid-stream must carry the counter across it.
    #[test]
    fn raw_streams_match_the_single_process_tool() {
        let scratch = Scratch::new();
        let iv = "fffffffffffffffffffffffffffffff0";
        for ranks in RANKS {
            for strategy in STRATEGIES {
                for (mode_args, sizes) in [
                    (vec!["ctr", "--iv", iv], SIZES.to_vec()),
                    (
                        vec!["ecb"],
                        vec![0, 17, CHUNK - 1, CHUNK, 2 * CHUNK, 4 * CHUNK + 5],
                    ),
                    (vec!["ecb", "--no-pad"], vec![0, 16, CHUNK, 4 * CHUNK + 16]),
                ] {
                    for len in sizes {
                        let what = format!("{ranks} ranks, {strategy}, {mode_args:?}, {len} B");
                        scratch.key_file("k", 192, len as u64, true);
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
                                args.extend(&raw);
                                args.extend([input, "-o", output, "-f"]);
                                args
                            };
                            assert_success(&scratch.run(&with("cpu", "one")), &what);
                            let expected = scratch.read("one");
                            assert_success(&run_mpi(&scratch, ranks, &with("mpi", "many")), &what);
                            assert_eq!(scratch.read("many"), expected, "{what} {direction}");
                            if direction == "enc" {
                                scratch.write("cipher", &expected);
                            } else {
                                assert_eq!(expected, scratch.read("plain"), "{what}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// Scatter streams from a named pipe to standard output (the way to pipe data into an
    /// MPI job, see README.md) and back.
    #[test]
    fn scatter_streams_through_pipes() {
        let scratch = Scratch::new();
        scratch.key_file("k", 256, 7, true);
        let plain = seeded_bytes(7, 5 * CHUNK + 3);
        scratch.write("plain", &plain);
        let script = format!(
            "set -e; mkfifo in.pipe; cat plain > in.pipe & \
             mpiexec -n 3 \"$PARAES\" enc --backend mpi -q -k k --chunk-size {CHUNK_ARG} \
             in.pipe -o - > sealed; \
             mpiexec -n 2 \"$PARAES\" dec --backend mpi -q -k k sealed -o - --mpi-io scatter > back"
        );
        mpiexec();
        let out = scratch.bash(&script);
        assert!(out.status.success(), "pipes: {}", stderr(&out));
        assert_eq!(scratch.read("back"), plain);
        let out = scratch.run(&["dec", "-k", "k", "sealed", "-o", "-"]);
        assert_eq!(
            out.stdout, plain,
            "the single-process tool reads the piped container"
        );
    }

    /// Started without mpiexec, `--backend mpi` is a job of one rank (an MPI singleton), and
    /// standard input works there (no launcher stands in between).
    #[test]
    fn without_mpiexec_it_runs_as_one_rank() {
        mpiexec();
        let scratch = Scratch::new();
        scratch.key_file("k", 192, 11, true);
        let plain = seeded_bytes(11, 3 * CHUNK + 7);
        scratch.write("plain", &plain);
        for strategy in STRATEGIES {
            let mut args = MPI_ENC.to_vec();
            args.extend(["--mpi-io", strategy, "plain", "-o", "sealed", "-f"]);
            assert_success(&scratch.run(&args), strategy);
            let out = scratch.run(&["dec", "-k", "k", "sealed", "-o", "-"]);
            assert_success(&out, strategy);
            assert_eq!(out.stdout, plain, "{strategy}");
        }
        let mut args = MPI_ENC.to_vec();
        args.extend(["-o", "-"]);
        let out = scratch.run_with_stdin(&args, &plain);
        assert_success(&out, "standard input");
        scratch.write("piped", &out.stdout);
        let out = scratch.run(&["dec", "-k", "k", "piped", "-o", "-"]);
        assert_eq!(out.stdout, plain, "standard input");
    }

    /// Refusals and failures: one `paraes: error:` line from rank 0, a non-zero exit, the
    /// directory unchanged (no output, no temporary).
    #[test]
    fn failures_end_the_job_with_one_message_and_no_output() {
        let scratch = Scratch::new();
        scratch.key_file("k", 128, 1, true);
        scratch.key_file("other", 128, 2, true);
        scratch.write("plain", &seeded_bytes(3, 6 * CHUNK + 9));
        let mut args = MPI_ENC.to_vec();
        args.extend(["plain", "-o", "sealed"]);
        assert_success(&run_mpi(&scratch, 2, &args), "setup");
        let mut args = MPI_ENC.to_vec();
        args.extend(["-m", "ecb", "plain", "-o", "sealed-ecb"]);
        assert_success(&run_mpi(&scratch, 3, &args), "setup ecb");
        let record = CHUNK + 16;
        let mut tampered = scratch.read("sealed");
        let chunk_4 = HEADER_LEN + 4 * record + 100;
        tampered[chunk_4] ^= 1;
        scratch.write("tampered", &tampered);
        let sealed = scratch.read("sealed");
        // 7 chunks; cut after chunk 4 (chunk 4 is not the last) and inside chunk 5.
        scratch.write("cut-at-chunk", &sealed[..HEADER_LEN + 5 * record]);
        scratch.write("cut-in-chunk", &sealed[..HEADER_LEN + 5 * record + 100]);
        let mut ecb = scratch.read("sealed-ecb");
        let last = ecb.len() - 20;
        ecb[last] ^= 1;
        scratch.write("tampered-ecb", &ecb);
        let before = scratch.names();

        // Damage found by any rank (chunk 4 is rank 0's of 1, rank 1's of 2, rank 2's of 3).
        for ranks in RANKS {
            for strategy in STRATEGIES {
                for (file, chunk) in [
                    ("tampered", 4),
                    ("cut-at-chunk", 4),
                    ("cut-in-chunk", 5),
                    ("tampered-ecb", 6),
                ] {
                    let what = format!("{file}, {ranks} ranks, {strategy}");
                    let args = [
                        "dec",
                        "-k",
                        "k",
                        file,
                        "-o",
                        "out",
                        "--backend",
                        "mpi",
                        "--mpi-io",
                        strategy,
                    ];
                    let out = run_mpi(&scratch, ranks, &args);
                    let message = scratch.assert_refused(&out, &before, &what);
                    let expected = format!("chunk {chunk} failed authentication");
                    assert!(message.contains(&expected), "{what}: {message}");
                }
            }
        }

        for strategy in STRATEGIES {
            let io = ["--backend", "mpi", "--mpi-io", strategy];
            let what = format!("wrong key, {strategy}");
            let mut args = vec!["dec", "-k", "other", "sealed", "-o", "out"];
            args.extend(io);
            let message = scratch.assert_refused(&run_mpi(&scratch, 3, &args), &before, &what);
            assert!(
                message.contains("none of the given keys"),
                "{what}: {message}"
            );

            let what = format!("missing input, {strategy}");
            let mut args = vec!["enc", "-k", "k", "missing", "-o", "out"];
            args.extend(io);
            let message = scratch.assert_refused(&run_mpi(&scratch, 3, &args), &before, &what);
            assert!(message.contains("cannot open missing"), "{what}: {message}");

            let what = format!("a rank whose engine cannot start, {strategy}");
            let mut good = MPI_ENC.to_vec();
            good.extend(["--mpi-io", strategy, "plain", "-o", "out"]);
            // CUDA device 4096 exists nowhere: that rank's engine cannot start, GPU or not.
            let mut bad = good.clone();
            bad.extend(["--rank-engine", "gpu", "--gpu-device", "4096"]);
            let out = run_mpmd(&scratch, &[(2, paraes(&good)), (1, paraes(&bad))]);
            let message = scratch.assert_refused(&out, &before, &what);
            assert!(message.starts_with("rank 2 of 3: "), "{what}: {message}");
        }

        let what = "standard input under mpiexec";
        let out = Command::new(mpiexec())
            .args([
                "-n",
                "2",
                bin(),
                "enc",
                "--backend",
                "mpi",
                "-k",
                "k",
                "-o",
                "out",
            ])
            .current_dir(scratch.path(""))
            .stdin(Stdio::null())
            .output()
            .expect("mpiexec runs");
        let message = scratch.assert_refused(&out, &before, what);
        assert!(message.contains("named pipe"), "{what}: {message}");
    }

    /// A rank that cannot see the files (no shared file system) fails a direct job before
    /// anything is written, and says to use scatter. Needs `unshare` (root) to hide the files
    /// from one rank; says so loudly where it cannot.
    #[test]
    fn a_rank_without_the_files_fails_direct_io_cleanly() {
        let scratch = Scratch::new();
        let probe = scratch.bash("unshare -m --propagation private true");
        if !probe.status.success() {
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED a_rank_without_the_files_fails_direct_io_cleanly: cannot make a \
                 private mount namespace here (needs root and unshare): {}\n",
                stderr(&probe).trim()
            );
            return;
        }
        scratch.key_file("k", 256, 4, true);
        scratch.write("plain", &seeded_bytes(4, 3 * CHUNK));
        let before = scratch.names();
        let dir = scratch.path("");
        let dir = dir.to_str().expect("utf-8 path");
        let args = [
            "enc",
            "--backend",
            "mpi",
            "--mpi-io",
            "direct",
            "-q",
            "-k",
            "k",
        ];
        let mut good = paraes(&args);
        good.extend(["plain".into(), "-o".into(), "out".into()]);
        // Rank 1 sees an empty file system where the scratch directory is.
        let hide = format!("mount -t tmpfs none {dir} && cd {dir} && exec \"$0\" \"$@\"");
        let mut blind = vec![
            "unshare".to_string(),
            "-m".into(),
            "--propagation".into(),
            "private".into(),
            "sh".into(),
            "-c".into(),
            hide,
        ];
        blind.extend(good.iter().cloned());
        let out = run_mpmd(&scratch, &[(1, good), (1, blind)]);
        let message = scratch.assert_refused(&out, &before, "rank without the files");
        assert!(message.starts_with("rank 1 of 2: cannot open"), "{message}");
        assert!(message.contains("--mpi-io scatter"), "{message}");
    }

    /// A rank killed mid-job ends the whole job (the launcher kills the others), with a
    /// non-zero exit and no output file: rank 0's output is an unnamed file until committed.
    #[test]
    fn a_rank_that_dies_leaves_no_output() {
        let scratch = Scratch::new();
        scratch.key_file("k", 128, 5, true);
        // Large enough that the job is still running when rank 1 is killed (a sparse file).
        let big = std::fs::File::create(scratch.path("big")).expect("create");
        big.set_len(2 << 30).expect("sparse file");
        let before = scratch.names();
        let args = [
            "enc",
            "--backend",
            "mpi",
            "--threads",
            "1",
            "-k",
            "k",
            "big",
            "-o",
            "out",
        ];
        let mut doomed = vec![
            "timeout".to_string(),
            "-s".into(),
            "KILL".into(),
            "0.5".into(),
        ];
        doomed.extend(paraes(&args));
        let out = run_mpmd(&scratch, &[(1, paraes(&args)), (1, doomed)]);
        assert!(!out.status.success(), "the job must fail: {}", stderr(&out));
        let deadline = Instant::now() + Duration::from_secs(10);
        while scratch.names() != before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            scratch.names(),
            before,
            "output left behind: {}",
            stderr(&out)
        );
    }

    /// Many files under MPI (issue 14): all ranks go through rank 0's list together, one job
    /// per file, under 1, 2 and 3 ranks and both strategies; a file that fails is one line and
    /// the others are written; the outputs equal the single-process tool's plaintexts.
    #[test]
    fn many_files_run_one_job_each_on_every_rank() {
        for ranks in RANKS {
            for io in STRATEGIES {
                let scratch = Scratch::new();
                scratch.key_file("k", 256, 1, true);
                std::fs::create_dir_all(scratch.path("tree/sub")).unwrap();
                let files = [("tree/a", 0), ("tree/sub/b", 3 * CHUNK + 5), ("tree/c", 1)];
                for (i, (name, len)) in files.iter().enumerate() {
                    scratch.write(name, &seeded_bytes(i as u64, *len));
                }
                let mut enc: Vec<&str> = MPI_ENC.to_vec();
                enc.extend(["--mpi-io", io, "--recursive", "tree", "--output-dir", "enc"]);
                let out = run_mpi(&scratch, ranks, &enc);
                let what = format!("{ranks} ranks, {io}");
                assert_success(&out, &what);
                scratch.write("list", b"enc/tree/a.paraes\nmissing.paraes\nenc/tree/sub/b.paraes\nenc/tree/c.paraes\n");
                let dec = [
                    "dec",
                    "--backend",
                    "mpi",
                    "-q",
                    "-k",
                    "k",
                    "--mpi-io",
                    io,
                    "--files-from",
                    "list",
                    "--output-dir",
                    "dec",
                ];
                let out = run_mpi(&scratch, ranks, &dec);
                let err = stderr(&out);
                assert!(
                    !out.status.success(),
                    "{what}: a missing file must fail the run"
                );
                assert!(err.contains("missing.paraes: cannot open"), "{what}: {err}");
                assert!(err.contains("1 of 4 files failed"), "{what}: {err}");
                for (i, (name, len)) in files.iter().enumerate() {
                    let base = name.rsplit('/').next().unwrap();
                    assert_eq!(
                        scratch.read(&format!("dec/{base}")),
                        seeded_bytes(i as u64, *len),
                        "{what}: {name}"
                    );
                }
            }
        }
    }
}
