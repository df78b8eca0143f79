//! Under `--backend mpi` with direct I/O, the ranks share a container's body (and a raw
//! stream) at the boundaries of the pipeline batch that `--chunk-size` sets: which rank
//! encrypted which chunk, told apart by giving each rank its own plaintext.

#[cfg(feature = "mpi")]
mod with_mpi {
    use crate::common::{assert_success, seeded_bytes, Scratch, CHUNK, CHUNK_ARG};
    use crate::mpi::with_mpi::{paraes, run_mpmd};

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
}
