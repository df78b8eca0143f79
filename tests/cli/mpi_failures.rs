//! Failures under `--backend mpi`: refusals, damaged, cut or mixed-up containers and wrong
//! keys end the whole job with one message and no output; a rank that cannot see the files
//! fails direct I/O cleanly; a rank that dies leaves no output.

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::process::Stdio;

    use crate::bounded::{Launch, LAUNCH_DEADLINE};

    use crate::common::{
        assert_success, paraes_in, seeded_bytes, send_signal, skip, stderr,
        unfinished_output_metadata, wait_until, Scratch, CHUNK, HEADER_LEN, TAG_LEN,
    };
    use crate::mpi::with_mpi::{
        mpiexec, paraes, record_start, run_mpi, run_mpmd, Library, DEC_BATCH, MPI_ENC, RANKS,
        STRATEGIES,
    };

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
        // (file, what the message says, the rank that finds it under direct I/O of 1 to 4
        // ranks when one rank can be named: batch 4 of 7 is rank 0's of 1, rank 1's of 2
        // (3 + 4 batches), rank 2's of 3 (2 + 2 + 3) and of 4 (1 + 2 + 2 + 2)).
        let cases: [(&str, String, Option<[usize; 4]>); 10] = [
            ("tampered", failed(in_batch_4), Some([0, 1, 2, 2])),
            ("first-chunk", failed(0), Some([0, 0, 0, 0])),
            // The last chunk is checked when rank 0 opens the file, before any rank starts.
            ("last-chunk", failed(last), None),
            ("reordered", failed(1), Some([0, 0, 0, 0])),
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
        let mut command = mpiexec();
        command
            .args(["-n", "2"])
            .args(paraes(&args.split(' ').collect::<Vec<_>>()))
            .current_dir(&dir)
            .stdin(Stdio::null());
        let job = Launch::start(&mut command, LAUNCH_DEADLINE, args);
        let rank = |r: usize| format!("{}={r}", Library::under_test().rank_variable());
        let (mut doomed, mut mid_job) = (None, false);
        wait_until(60, "64 MiB in rank 0's output, or the job's end", || {
            doomed = paraes_in(&dir, &rank(1));
            let written = paraes_in(&dir, &rank(0))
                .and_then(|rank0| unfinished_output_metadata(rank0, &dir))
                .map_or(0, |m| m.blocks() * 512); // on disk: a write far ahead fakes no length
            mid_job = doomed.is_some() && written >= 64 << 20;
            mid_job || job.exited()
        });
        if !mid_job {
            let out = job.wait();
            panic!("the job ended first: {}", stderr(&out));
        }
        send_signal(doomed.expect("rank 1 runs"), "KILL");
        let out = job.wait();
        assert!(!out.status.success(), "the job must fail: {}", stderr(&out));
        let what = format!("no output left behind: {}", stderr(&out));
        wait_until(10, &what, || scratch.names() == before);
    }
}
