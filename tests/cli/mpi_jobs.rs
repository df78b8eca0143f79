//! How MPI jobs are run: scatter through named pipes and standard output, `--backend mpi`
//! without mpiexec (one rank), many files in one launch, and bare C2SP messages
//! (`--format cobblestone`) written and read on every rank.

#[cfg(feature = "mpi")]
mod with_mpi {
    use crate::bounded::output_with_stdin;
    use crate::common::{assert_success, seeded_bytes, stderr, Scratch, CHUNK, CHUNK_ARG, TAG_LEN};
    use crate::mpi::with_mpi::{
        assert_v3_container, mpiexec, paraes, run_mpi, run_mpi_script, run_singleton, Library,
        MPI_ENC, RANKS, STRATEGIES,
    };

    /// Scatter streams from a named pipe to standard output (the way to pipe data into an
    /// MPI job, see README.md) and back; the piped container is a v3 file like any other.
    #[test]
    fn scatter_streams_through_pipes() {
        let scratch = Scratch::new();
        scratch.key_file("k", 256, 7, true);
        let plain = seeded_bytes(7, 5 * CHUNK + 3);
        scratch.write("plain", &plain);
        // Open MPI's mpirun gives rank 0 a terminal for standard output (which paraes refuses
        // for binary data, and which would turn \n into \r\n), so there the outputs are
        // named pipes too; MPICH's mpiexec forwards standard output as it is.
        let output = |name: &str| match Library::under_test() {
            Library::Mpich => format!("-o - > {name}"),
            Library::OpenMpi => format!("-o {name}.pipe & cat {name}.pipe > {name}; wait $!"),
        };
        let script = format!(
            "set -e; mkfifo in.pipe sealed.pipe back.pipe; cat plain > in.pipe & \
             $MPIEXEC -n 3 \"$PARAES\" enc --backend mpi -q -k k --chunk-size {CHUNK_ARG} \
             in.pipe {}; \
             $MPIEXEC -n 2 \"$PARAES\" dec --backend mpi -q -k k sealed --mpi-io scatter {}",
            output("sealed"),
            output("back")
        );
        let out = run_mpi_script(&scratch, &script);
        assert!(out.status.success(), "pipes: {}", stderr(&out));
        assert!(scratch.read("back") == plain, "piped back");
        assert_v3_container(&scratch, "sealed", &plain, 256, "the piped container");
    }

    /// Started without mpiexec, `--backend mpi` is a job of one rank (an MPI singleton), and
    /// standard input works there (no launcher stands in between).
    #[test]
    fn without_mpiexec_it_runs_as_one_rank() {
        let scratch = Scratch::new();
        scratch.key_file("k", 192, 11, true);
        let plain = seeded_bytes(11, 3 * CHUNK + 7);
        scratch.write("plain", &plain);
        for strategy in STRATEGIES {
            let mut args = MPI_ENC.to_vec();
            args.extend(["--mpi-io", strategy, "plain", "-o", "sealed", "-f"]);
            assert_success(&run_singleton(&scratch, &args, b""), strategy);
            let out = scratch.run(&["dec", "-k", "k", "sealed", "-o", "-"]);
            assert_success(&out, strategy);
            assert_eq!(out.stdout, plain, "{strategy}");
        }
        let mut args = MPI_ENC.to_vec();
        args.extend(["-o", "-"]);
        let out = run_singleton(&scratch, &args, &plain);
        assert_success(&out, "standard input");
        scratch.write("piped", &out.stdout);
        let out = scratch.run(&["dec", "-k", "k", "piped", "-o", "-"]);
        assert_eq!(out.stdout, plain, "standard input");
    }

    /// Standard input through the launcher: MPICH's forwards it to rank 0 without flow
    /// control (large streams are cut off), so paraes refuses it there (even empty), with one
    /// line that says to use a named pipe, and writes nothing; Open MPI's `mpirun` forwards it with flow
    /// control, so there 3 ranks encrypt a stream piped into the launcher (more than a pipe
    /// holds: the launcher must wait for rank 0 to read) into the container of that stream.
    #[test]
    fn standard_input_through_the_launcher() {
        let scratch = Scratch::new();
        scratch.key_file("k", 256, 13, true);
        let plain = seeded_bytes(13, 40 * CHUNK + 3);
        let before = scratch.names();
        let mut command = mpiexec();
        let mut args = MPI_ENC.to_vec();
        args.extend(["-o", "sealed"]);
        command.args(["-n", "3"]).args(paraes(&args));
        command.current_dir(scratch.path(""));
        let what = "standard input through the launcher";
        let library = Library::under_test();
        // Under MPICH, nothing: with data that rank 0 does not read, Hydra itself fails
        // ("assert (!closed) failed"), before paraes's refusal is the answer.
        let stdin = if library == Library::Mpich {
            &[][..]
        } else {
            &plain
        };
        let out = output_with_stdin(command, stdin, what);
        match library {
            Library::Mpich => {
                let message = scratch.assert_refused(&out, &before, what);
                assert!(message.contains("named pipe"), "{what}: {message}");
            }
            Library::OpenMpi => {
                assert_success(&out, what);
                assert_v3_container(&scratch, "sealed", &plain, 256, what);
            }
        }
    }

    /// Many files under MPI (issue 14): all ranks go through rank 0's list together, one job
    /// per file, under 1 to 4 ranks and both strategies; a file that fails is one line and
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
                // A listed name is mirrored below --output-dir (issue 39, item 4).
                for (i, (name, len)) in files.iter().enumerate() {
                    assert_eq!(
                        scratch.read(&format!("dec/enc/{name}")),
                        seeded_bytes(i as u64, *len),
                        "{what}: {name}"
                    );
                }
            }
        }
    }

    /// Bare C2SP messages (`--format cobblestone`) under MPI: what 1 to 4 ranks write (direct
    /// and scatter, --chunk-size 16KiB so ranks split short messages) is byte for byte the
    /// message `paraes_core::cobblestone::seal` makes with its salt, and decrypts with the
    /// single-process paraes; a single-process message decrypts under MPI; a wrong context or
    /// a damaged chunk is refused with one message and no output.
    #[test]
    fn bare_messages_run_on_every_rank() {
        let scratch = Scratch::new();
        let key = scratch.key_file("k", 256, 31, true);
        for len in [0, 1, CHUNK - 1, CHUNK, 4 * CHUNK + 5] {
            let plain = seeded_bytes(len as u64 + 3, len);
            scratch.write("plain", &plain);
            let message = ["--format", "cobblestone", "-k", "k", "--context", "ctx"];
            for ranks in RANKS {
                for strategy in STRATEGIES {
                    let what = format!("{len} bytes, {ranks} ranks, {strategy}");
                    let mpi = ["--backend", "mpi", "--mpi-io", strategy];
                    let args = [
                        &["enc", "-q", "-f", "--chunk-size", CHUNK_ARG][..],
                        &message,
                        &mpi,
                        &["plain", "-o", "m"],
                    ]
                    .concat();
                    assert_success(&run_mpi(&scratch, ranks, &args), &what);
                    let sealed = scratch.read("m");
                    let salt: [u8; 24] = sealed[..24].try_into().unwrap();
                    let expected = paraes_core::cobblestone::seal(
                        paraes_core::cobblestone::Variant::Cobblestone256,
                        &key,
                        &salt,
                        b"ctx",
                        &plain,
                    )
                    .unwrap();
                    assert!(sealed == expected, "{what}: not the C2SP message");
                    let args = [&["dec", "-q", "-f"][..], &message, &["m", "-o", "back"]].concat();
                    assert_success(&scratch.run(&args), &what);
                    assert!(scratch.read("back") == plain, "{what}: round trip");
                    let args = [
                        &["dec", "-q", "-f"][..],
                        &message,
                        &mpi,
                        &["m", "-o", "again"],
                    ]
                    .concat();
                    assert_success(&run_mpi(&scratch, ranks, &args), &what);
                    assert!(scratch.read("again") == plain, "{what}: MPI decryption");
                }
            }
        }
        // Refusals: a wrong context, a damaged chunk; nothing written.
        let plain = seeded_bytes(5, 3 * CHUNK + 1);
        scratch.write("plain", &plain);
        let args = [
            "enc",
            "-q",
            "-f",
            "--format",
            "cobblestone",
            "-k",
            "k",
            "plain",
            "-o",
            "m2",
        ];
        assert_success(&scratch.run(&args), "single-process message");
        let mut damaged = scratch.read("m2");
        damaged[56 + CHUNK + TAG_LEN + 9] ^= 1;
        scratch.write("damaged", &damaged);
        let before = scratch.names();
        for (file, context, expected) in [("m2", "other", "commitment"), ("damaged", "", "chunk 1")]
        {
            for ranks in RANKS {
                let what = format!("{file}, {ranks} ranks");
                let args = [
                    "dec",
                    "--format",
                    "cobblestone",
                    "-k",
                    "k",
                    "--context",
                    context,
                    "--backend",
                    "mpi",
                    file,
                    "-o",
                    "out",
                ];
                let out = run_mpi(&scratch, ranks, &args);
                let message = scratch.assert_refused(&out, &before, &what);
                assert!(message.contains(expected), "{what}: {message}");
            }
        }
    }
}
