//! `paraes enc|dec --backend mpi` under `mpiexec -n 1|2|3`: both I/O strategies, both
//! directions. Format v3 containers written under MPI (sizes from empty to several 16 KiB chunks
//! plus a few bytes, both key sizes) are C2SP messages that the single-process tool and a
//! one-thread reference sealer agree with, and the single-process tool's containers decrypt
//! under MPI; the ranks share a body at the boundaries of the pipeline batch (`--chunk-size`).
//! Raw streams (CTR and ECB at every key size) are byte-identical to the single-process tool's.
//! Failures (damaged, cut or mixed-up containers, wrong keys, a rank that cannot start) end the
//! whole job with one message and no output; what containers no longer offer (ECB, 192-bit
//! bodies, batches that are not whole 16 KiB chunks) is a usage error. Without the `mpi`
//! feature, the one error that says how to get it. Needs MPICH's `mpiexec` (the test command in
//! README.md installs it): a missing launcher fails the tests, it does not skip them.

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
    use std::process::{Command, Output, Stdio};

    use paraes_core::cobblestone::{self, Variant};

    use crate::common::{
        assert_success, assert_usage_error, bin, container_len, paraes_in, records, salt,
        seeded_bytes, send_signal, skip, stderr, unfinished_output_metadata, wait_until, Scratch,
        CHUNK, CHUNK_ARG, CONTAINER_BITS, HEADER_LEN, KEY_BITS, MESSAGE_PREFIX_LEN, TAG_LEN,
    };

    pub(crate) const RANKS: [usize; 3] = [1, 2, 3];
    pub(crate) const STRATEGIES: [&str; 2] = ["direct", "scatter"];
    /// Empty, one byte and one block (fewer chunks than ranks), around one chunk (exactly one
    /// chunk ends in an empty final chunk of its own), and four chunks plus a few bytes (five
    /// chunks: uneven shares of 2 + 3 on two ranks, 1 + 2 + 2 on three; segments that start
    /// mid-stream).
    const SIZES: [usize; 7] = [0, 1, 16, CHUNK - 1, CHUNK, CHUNK + 1, 4 * CHUNK + 5];
    /// `paraes enc` on MPI with the key file `k` and the tests' small batches (one 16 KiB chunk).
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
    /// The pipeline batch of `dec` (which has no `--chunk-size`): the default, whole 16 KiB
    /// chunks of it.
    const DEC_BATCH: usize = paraes_core::pipeline::DEFAULT_CHUNK_SIZE;
    /// Bytes of one full record of a v3 body: a 16 KiB chunk and its tag.
    const RECORD: usize = CHUNK + TAG_LEN;

    /// Where record `index` of a v3 container with a one-stanza header starts.
    fn record_start(index: usize) -> usize {
        HEADER_LEN + MESSAGE_PREFIX_LEN + index * RECORD
    }

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
    pub(crate) fn run_mpi(scratch: &Scratch, ranks: usize, args: &[&str]) -> Output {
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
    fn assert_v3_container(scratch: &Scratch, name: &str, plain: &[u8], bits: usize, what: &str) {
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

    /// Which rank encrypted each 16 KiB chunk of a direct-I/O job: each rank `r > 0` runs in
    /// its own directory `r{r}` and is given the input as `/proc/self/cwd/plain`, so it reads
    /// its own `plain` (same length, other content) at the path rank 0 planned; the output
    /// (which every rank writes in place) then decrypts, chunk by chunk, to the plaintext of the
    /// rank that encrypted that chunk. `extra` goes before the paths (the key, mode, batch);
    /// `decrypt` turns the output `mix` into its plaintext. Returns each chunk's rank.
    fn chunk_owners(
        scratch: &Scratch,
        ranks: usize,
        len: usize,
        extra: &[&str],
        decrypt: &[&str],
        what: &str,
    ) -> Vec<usize> {
        let mut plains = Vec::new();
        for rank in 0..ranks {
            let dir = if rank == 0 {
                String::new()
            } else {
                format!("r{rank}/")
            };
            if rank > 0 {
                std::fs::create_dir_all(scratch.path(&dir)).expect("a rank's directory");
            }
            let plain = seeded_bytes(1000 * len as u64 + rank as u64, len);
            scratch.write(&format!("{dir}plain"), &plain);
            plains.push(plain);
        }
        let mut args = vec!["enc", "--backend", "mpi", "--mpi-io", "direct", "-q"];
        args.extend(extra);
        args.extend(["/proc/self/cwd/plain", "-o", "mix", "-f"]);
        let mut parts = vec![(1, paraes(&args))];
        for rank in 1..ranks {
            let mut program: Vec<String> =
                ["sh", "-c", &format!("cd r{rank} && exec \"$0\" \"$@\"")]
                    .map(String::from)
                    .to_vec();
            program.extend(paraes(&args));
            parts.push((1, program));
        }
        assert_success(&run_mpmd(scratch, &parts), what);
        let out = scratch.run(decrypt);
        assert_success(&out, what);
        assert_eq!(out.stdout.len(), len, "{what}: decrypted length");
        out.stdout
            .chunks(CHUNK)
            .enumerate()
            .map(|(index, chunk)| {
                let at = index * CHUNK;
                let from: Vec<usize> = (0..ranks)
                    .filter(|&r| plains[r][at..at + chunk.len()] == *chunk)
                    .collect();
                assert_eq!(
                    from.len(),
                    1,
                    "{what}: chunk {index} is no one rank's plaintext (ranks {from:?})"
                );
                from[0]
            })
            .collect()
    }

    /// Asserts that `owners` (each 16 KiB chunk's rank) is a split at the boundaries of
    /// `batch_chunks`-chunk batches: one contiguous run per rank in rank order, each starting
    /// at a batch boundary, every rank with work (there are at least as many batches as
    /// ranks), shares that differ by at most one batch.
    fn assert_batch_split(owners: &[usize], ranks: usize, batch_chunks: usize, what: &str) {
        let batches = owners.len().div_ceil(batch_chunks);
        assert!(
            batches >= ranks,
            "{what}: a case with fewer batches than ranks"
        );
        let shares: Vec<usize> = (0..ranks)
            .map(|r| owners.iter().filter(|&&o| o == r).count())
            .collect();
        assert!(
            owners.windows(2).all(|w| w[0] <= w[1]),
            "{what}: the ranks' chunks are not contiguous runs in rank order: {owners:?}"
        );
        for (index, pair) in owners.windows(2).enumerate() {
            if pair[0] != pair[1] {
                assert_eq!(
                    (index + 1) % batch_chunks,
                    0,
                    "{what}: rank {} starts at chunk {}, not at a batch boundary: {owners:?}",
                    pair[1],
                    index + 1
                );
            }
        }
        let batch_shares: Vec<usize> = shares
            .iter()
            .map(|&chunks| chunks.div_ceil(batch_chunks))
            .collect();
        assert!(
            batch_shares.iter().all(|&b| b > 0),
            "{what}: a rank got no batch of the body (chunks by rank {shares:?}, each chunk's \
             rank {owners:?})"
        );
        let (least, most) = (
            batch_shares.iter().min().unwrap(),
            batch_shares.iter().max().unwrap(),
        );
        assert!(
            most - least <= 1,
            "{what}: unbalanced shares of batches {batch_shares:?}"
        );
    }

    /// Under direct I/O the ranks share a container's body at the boundaries of the pipeline
    /// batch that `--chunk-size` sets (a whole number of 16 KiB chunks), also for bodies far
    /// smaller than the default batch: every rank encrypts its own contiguous run of batches
    /// ([`chunk_owners`] tells which rank encrypted which chunk). A raw CTR stream, split the
    /// same way by its `--chunk-size`, is the control that the method sees a split.
    #[test]
    fn ranks_share_a_container_body_at_batch_boundaries() {
        let scratch = Scratch::new();
        scratch.key_file("k", 256, 21, true);
        for rank in 1..3 {
            std::fs::create_dir_all(scratch.path(&format!("r{rank}"))).unwrap();
            std::fs::copy(scratch.path("k"), scratch.path(&format!("r{rank}/k"))).unwrap();
        }
        let iv = "000102030405060708090a0b0c0d0e0f";
        for ranks in [2, 3] {
            // 5 chunks in 1-chunk batches; 9 chunks in 2-chunk batches (the last batch one
            // short chunk); 7 chunks in 3-chunk batches.
            for (len, batch) in [
                (4 * CHUNK + 5, CHUNK_ARG),
                (8 * CHUNK + 1, "32KiB"),
                (6 * CHUNK + 100, "48KiB"),
            ] {
                let batch_chunks = match batch {
                    "16KiB" => 1,
                    "32KiB" => 2,
                    "48KiB" => 3,
                    _ => unreachable!(),
                };
                let what = format!("raw CTR, {ranks} ranks, {len} B, batch {batch}");
                let owners = chunk_owners(
                    &scratch,
                    ranks,
                    len,
                    &["-k", "k", "--raw", "ctr", "--iv", iv, "--chunk-size", batch],
                    &[
                        "dec", "-q", "-k", "k", "--raw", "ctr", "--iv", iv, "mix", "-o", "-",
                    ],
                    &what,
                );
                assert_batch_split(&owners, ranks, batch_chunks, &what);

                let what = format!("container, {ranks} ranks, {len} B, batch {batch}");
                let owners = chunk_owners(
                    &scratch,
                    ranks,
                    len,
                    &["-k", "k", "--chunk-size", batch],
                    &["dec", "-q", "-k", "k", "mix", "-o", "-"],
                    &what,
                );
                assert_batch_split(&owners, ranks, batch_chunks, &what);
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

    /// Scatter streams from a named pipe to standard output (the way to pipe data into an
    /// MPI job, see README.md) and back; the piped container is a v3 file like any other.
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
        assert!(scratch.read("back") == plain, "piped back");
        assert_v3_container(&scratch, "sealed", &plain, 256, "the piped container");
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
    /// directory unchanged (no output, no temporary). The damaged containers hold seven of
    /// dec's batches (the last one short chunk), so that under direct I/O damage is found by
    /// whichever rank owns it: the rank that fails is named.
    #[test]
    fn failures_end_the_job_with_one_message_and_no_output() {
        let scratch = Scratch::new();
        scratch.key_file("k", 128, 1, true);
        scratch.key_file("other", 128, 2, true);
        // 6 default batches and 9 bytes: 6 * 64 full chunks and a 9-byte last chunk.
        scratch.write("plain", &seeded_bytes(3, 6 * DEC_BATCH + 9));
        let per_batch = DEC_BATCH / CHUNK;
        let last = 6 * per_batch;
        let mut args = MPI_ENC.to_vec();
        args.extend(["--bits", "128", "plain", "-o", "sealed"]);
        assert_success(&run_mpi(&scratch, 2, &args), "setup");
        let mut args = MPI_ENC[..6].to_vec();
        args.extend(["--chunk-size", "48KiB", "plain", "-o", "sealed-3"]);
        assert_success(&run_mpi(&scratch, 3, &args), "setup, 3 ranks");
        let sealed = scratch.read("sealed");
        let second = scratch.read("sealed-3");
        assert_eq!(sealed.len(), record_start(last) + 9 + TAG_LEN, "setup");
        assert_eq!(second.len(), sealed.len(), "setup");
        let flipped = |from: &[u8], at: usize| {
            let mut bytes = from.to_vec();
            bytes[at] ^= 1;
            bytes
        };
        // A byte inside chunk 4 * 64 + 3 (in batch 4), of chunk 0, of the last chunk.
        let in_batch_4 = 4 * per_batch + 3;
        scratch.write("tampered", &flipped(&sealed, record_start(in_batch_4) + 5));
        scratch.write("first-chunk", &flipped(&sealed, record_start(0) + 5));
        scratch.write("last-chunk", &flipped(&second, record_start(last) + 5));
        // Chunks 1 and 2 swapped.
        let mut reordered = sealed.clone();
        reordered[record_start(1)..record_start(3)].copy_from_slice(
            &[
                &sealed[record_start(2)..record_start(3)],
                &sealed[record_start(1)..record_start(2)],
            ]
            .concat(),
        );
        scratch.write("reordered", &reordered);
        // Cut after chunk 5 * 64 - 1 (which is not the last: a full chunk cannot be), inside
        // chunk 5 * 64; extended by a tag's length.
        let cut = 5 * per_batch;
        scratch.write("cut-at-chunk", &sealed[..record_start(cut)]);
        scratch.write("cut-in-chunk", &sealed[..record_start(cut) + 100]);
        scratch.write("extended", &[&sealed[..], &[0u8; TAG_LEN][..]].concat());
        // The message's prefix: a commitment byte, a salt byte; and a body from another file.
        let commitment = HEADER_LEN + 24;
        scratch.write("commitment", &flipped(&sealed, commitment + 7));
        scratch.write("salt", &flipped(&sealed, HEADER_LEN + 3));
        scratch.write(
            "other-body",
            &[&sealed[..HEADER_LEN], &second[HEADER_LEN..]].concat(),
        );
        let before = scratch.names();

        let commitment = "the body's key commitment does not match".to_string();
        let failed = |chunk: usize| format!("chunk {chunk} failed authentication");
        // (file, what the message says, the rank that finds it under direct I/O of 1, 2 and 3
        // ranks when one rank can be named: batch 4 of 7 is rank 0's of 1, rank 1's of 2
        // (3 + 4 batches), rank 2's of 3 (2 + 2 + 3)).
        let cases: [(&str, String, Option<[usize; 3]>); 10] = [
            ("tampered", failed(in_batch_4), Some([0, 1, 2])),
            ("first-chunk", failed(0), Some([0, 0, 0])),
            // The last chunk is checked when rank 0 opens the file, before any rank starts.
            ("last-chunk", failed(last), None),
            ("reordered", failed(1), Some([0, 0, 0])),
            // A length no writer makes is refused by rank 0 before any key is tried.
            (
                "cut-at-chunk",
                "the body was cut or extended".to_string(),
                None,
            ),
            ("cut-in-chunk", failed(cut), None),
            ("extended", failed(last), None),
            ("commitment", commitment.clone(), None),
            ("salt", commitment.clone(), None),
            ("other-body", commitment.clone(), None),
        ];
        for ranks in RANKS {
            for strategy in STRATEGIES {
                for (file, expected, finder) in &cases {
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
                    assert!(message.contains(expected.as_str()), "{what}: {message}");
                    if let (Some(finder), "direct", true) = (finder, strategy, ranks > 1) {
                        let rank = finder[ranks - 1];
                        assert!(
                            message.starts_with(&format!("rank {rank} of {ranks}: ")),
                            "{what}: rank {rank} owns the damaged chunk: {message}"
                        );
                    }
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
            skip(
                "a_rank_without_the_files_fails_direct_io_cleanly",
                &format!(
                    "cannot make a private mount namespace here (needs root and unshare): {}",
                    stderr(&probe).trim()
                ),
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
    /// Rank 1 is killed once rank 0's unfinished output holds 64 MiB: mid-job.
    #[test]
    fn a_rank_that_dies_leaves_no_output() {
        use std::os::unix::fs::MetadataExt;
        let scratch = Scratch::new();
        scratch.key_file("k", 128, 5, true);
        // Large enough that the job is still running when rank 1 is killed (a sparse file).
        let big = std::fs::File::create(scratch.path("big")).expect("create");
        big.set_len(2 << 30).expect("sparse file");
        let before = scratch.names();
        let dir = scratch.path("");
        let args = "enc --backend mpi --threads 1 -k k big -o out";
        let mut job = Command::new(mpiexec())
            .args(["-n", "2"])
            .args(paraes(&args.split(' ').collect::<Vec<_>>()))
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mpiexec runs");
        let (mut doomed, mut mid_job) = (None, false);
        wait_until(60, "64 MiB in rank 0's output, or the job's end", || {
            doomed = paraes_in(&dir, "PMI_RANK=1");
            let written = paraes_in(&dir, "PMI_RANK=0")
                .and_then(|rank0| unfinished_output_metadata(rank0, &dir))
                .map_or(0, |m| m.blocks() * 512); // on disk: a write far ahead fakes no length
            mid_job = doomed.is_some() && written >= 64 << 20;
            mid_job || job.try_wait().expect("mpiexec").is_some()
        });
        if !mid_job {
            let out = job.wait_with_output().expect("mpiexec ends");
            panic!("the job ended first: {}", stderr(&out));
        }
        send_signal(doomed.expect("rank 1 runs"), "KILL");
        let out = job.wait_with_output().expect("mpiexec ends");
        assert!(!out.status.success(), "the job must fail: {}", stderr(&out));
        let what = format!("no output left behind: {}", stderr(&out));
        wait_until(10, &what, || scratch.names() == before);
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

    /// Bare C2SP messages (`--format cobblestone`) under MPI: what 1 to 3 ranks write (direct
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
