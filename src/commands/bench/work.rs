//! The measurements of one `bench` run: every engine on every mode, key size and size, then
//! the openssl reference, with a progress bar on a terminal.

use super::*;

/// The measurements of one run: which engines measure which mode, sizes, and the baseline.
pub(super) struct Work<'a> {
    choices: &'a Choices,
    present: &'a [(&'a str, &'a str, &'a dyn Engine)],
    /// Engines that model another machine (no gcm rows: a GCM body's tags run on this host).
    modelled: Vec<&'a str>,
    e2e_sizes: Vec<usize>,
    openssl_version: Option<&'a str>,
    /// openssl runs as many processes as each CPU engine has threads.
    openssl_threads: Vec<usize>,
}

impl<'a> Work<'a> {
    pub(super) fn new(
        args: &BenchArgs,
        choices: &'a Choices,
        present: &'a [(&'a str, &'a str, &'a dyn Engine)],
        openssl_version: Option<&'a str>,
    ) -> Self {
        // An engine that models another machine (the simulator) times the engine's CTR in that
        // machine's time, but a GCM body's tags run on this host: no time of one machine covers
        // a gcm row, so such engines have none.
        let modelled: Vec<&str> = present
            .iter()
            .filter(|(.., engine)| engine.modelled().is_some())
            .map(|(label, ..)| *label)
            .collect();
        if choices.modes.contains(&BenchMode::Gcm) {
            for label in &modelled {
                eprintln!(
                    "paraes: bench: {label}: no gcm rows: it models another machine's AES, while \
                     a GCM body's tags run on this host"
                );
            }
        }
        let e2e_sizes: Vec<usize> = if args.e2e {
            choices
                .sizes
                .iter()
                .copied()
                .filter(|&s| s >= E2E_MIN)
                .collect()
        } else {
            Vec::new()
        };
        if args.e2e && e2e_sizes.is_empty() {
            eprintln!("paraes: bench: --e2e: no size of at least 1 MiB, so no whole-pipeline rows");
        }
        let mut openssl_threads: Vec<usize> = present
            .iter()
            .filter(|(label, ..)| *label == report::BASELINE_ENGINE)
            .map(|(.., engine)| engine.workers())
            .collect();
        openssl_threads.sort_unstable();
        openssl_threads.dedup();
        if openssl_threads.is_empty() {
            openssl_threads.push(1);
        }
        Work {
            choices,
            present,
            modelled,
            e2e_sizes,
            openssl_version,
            openssl_threads,
        }
    }

    /// The engines that measure `mode`.
    pub(super) fn engines_for(&self, mode: BenchMode) -> Vec<(&'a str, &'a str, &'a dyn Engine)> {
        self.present
            .iter()
            .copied()
            .filter(|(label, ..)| mode != BenchMode::Gcm || !self.modelled.contains(label))
            .collect()
    }

    /// The whole-file sizes of `mode` at `bits`: `paraes enc` of a v3 container, whose body is
    /// AES-CTR with GHASH at 128 or 256 bits, listed under CTR only.
    pub(super) fn e2e_sizes(&self, mode: BenchMode, bits: u32) -> &[usize] {
        if mode == BenchMode::Ctr && bits != 192 {
            &self.e2e_sizes
        } else {
            &[]
        }
    }

    /// Every row of the run, with a progress bar on a terminal.
    pub(super) fn measure(&self) -> Result<Vec<Row>> {
        let choices = self.choices;
        let openssl_steps = if self.openssl_version.is_some() {
            choices.sizes.len() * self.openssl_threads.len()
        } else {
            0
        };
        let steps: usize = choices
            .modes
            .iter()
            .flat_map(|&mode| {
                mode_bits(mode, &choices.bits)
                    .into_iter()
                    .map(move |b| (mode, b))
            })
            .map(|(mode, bits)| {
                self.engines_for(mode).len()
                    * (choices.sizes.len() + self.e2e_sizes(mode, bits).len())
                    + openssl_steps
            })
            .sum();
        let bar = progress_bar(steps);
        let mut rows = Vec::new();
        for &mode in &choices.modes {
            for bits in mode_bits(mode, &choices.bits) {
                self.engine_rows(mode, bits, &bar, &mut rows)?;
                // The reference, after the engines so that they do not share the CPU with it.
                if let Some(version) = self.openssl_version {
                    self.openssl_rows(version, mode, bits, &bar, &mut rows)?;
                }
            }
        }
        bar.finish_and_clear();
        fill_speedups(&mut rows);
        Ok(rows)
    }

    /// The engines' rows of `mode` at `bits`: every size, then the whole-file sizes. The rows of
    /// one size (each engine, and the machine's bound on each thread count) are timed together,
    /// their samples interleaved ([`time_interleaved`]), so that the speedup of one row over
    /// another is not a slow spell of the machine that fell on one of them.
    pub(super) fn engine_rows(
        &self,
        mode: BenchMode,
        bits: u32,
        bar: &ProgressBar,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        let key = bench_key(bits);
        let expanded = key.expand();
        let cipher = mode.cipher(bits);
        let timing = &self.choices.timing;
        let runs = self.choices.sizes.iter().map(|&size| (size, false));
        let e2e_runs = self.e2e_sizes(mode, bits).iter().map(|&size| (size, true));
        for (size, e2e) in runs.chain(e2e_runs) {
            let engines = self.engines_for(mode);
            // What the rows of this size work on, made once and shared by their ops (which run
            // one at a time): one buffer or body for every engine, one pair of copy buffers for
            // every thread count.
            let buffer = (!e2e && mode.engine_mode().is_some()).then(|| EngineBuffer::new(size));
            let body = match (e2e, mode.engine_mode()) {
                (false, None) => Some(
                    GcmBody::new(&key, size, pipeline::WINDOW)
                        .map_err(|e| anyhow!("gcm body of {cipher}: {e}"))?,
                ),
                _ => None,
            };
            let copy_buffers = (!e2e).then(|| bounds::CopyBuffers::new(size));
            let mut ops = Vec::new();
            let mut shapes = Vec::new();
            for &(label, implementation, engine) in &engines {
                let label = if e2e {
                    format!("{label}-e2e")
                } else {
                    label.to_string()
                };
                bar.set_message(format!(
                    "{label} {implementation} x{} {cipher} {}",
                    engine.workers(),
                    format_size(size as u64)
                ));
                let op = if e2e {
                    e2e_op(engine, &key, size, DEFAULT_CHUNK_SIZE)
                        .map_err(|e| anyhow!("{label} on {cipher}: {e}"))?
                } else if let (Some(engine_mode), Some(buffer)) = (mode.engine_mode(), &buffer) {
                    engine_op(engine, engine_mode, &expanded, buffer)
                        .with_context(|| format!("{} on {cipher}", engine.name()))?
                } else {
                    // gcm: format v3's body sealed in memory as the pipeline seals it, in
                    // `paraes enc`'s pipeline chunks, CTR on the engine.
                    let body = body.as_ref().expect("a gcm body for a gcm row");
                    gcm_op(engine, body)
                        .map_err(|e| anyhow!("{} on {cipher}: {e}", engine.name()))?
                };
                ops.push(op);
                shapes.push((label, implementation, engine.workers(), Some(engine)));
            }
            for (label, implementation, threads, op) in
                self.bound_ops(mode, size, copy_buffers.as_ref())?
            {
                ops.push(op);
                shapes.push((label, implementation, threads, None));
            }
            bar.set_message(format!(
                "{cipher} {}: {} rows, samples interleaved",
                format_size(size as u64),
                ops.len()
            ));
            // A simulator also reports the modelled machine's time: its work in this group.
            let before: Vec<_> = shapes
                .iter()
                .map(|(.., engine)| engine.and_then(|e| e.modelled()))
                .collect();
            let stats = time_interleaved(timing, ops).map_err(|(index, e)| {
                let (label, implementation, threads, _) = &shapes[index];
                anyhow!("{label} {implementation} x{threads} on {cipher}: {e}")
            })?;
            for ((shape, stats), before) in shapes.into_iter().zip(stats).zip(before) {
                let (label, implementation, threads, engine) = shape;
                let mut row = Row::new(
                    &label,
                    implementation,
                    mode,
                    bits,
                    size as u64,
                    threads,
                    stats,
                );
                if let (Some(before), Some(after)) = (before, engine.and_then(|e| e.modelled())) {
                    let work = after.since(&before);
                    if work.bytes > 0 {
                        row.sim_seconds = Some(work.seconds * size as f64 / work.bytes as f64);
                        row.sim_gbps = Some(work.gbps());
                    }
                }
                rows.push(row);
            }
            bar.inc(engines.len() as u64);
        }
        Ok(())
    }

    /// The machine's bound for `size`, prepared, on each thread count the engines of `mode` run
    /// on: a copy of the buffer in memory (`copy_buffers`), or for a whole file (`None`) the
    /// file read by that many readers at their own offsets ([`paraes_bench::bounds`]). Each
    /// with its row's label, implementation and thread count.
    #[allow(clippy::type_complexity)]
    fn bound_ops<'b>(
        &self,
        mode: BenchMode,
        size: usize,
        copy_buffers: Option<&'b bounds::CopyBuffers>,
    ) -> Result<Vec<(String, &'static str, usize, Op<'b>)>> {
        let mut threads: Vec<usize> = self
            .engines_for(mode)
            .iter()
            .map(|(_, _, engine)| engine.workers())
            .collect();
        threads.sort_unstable();
        threads.dedup();
        let mut ops = Vec::new();
        for threads in threads {
            let (label, implementation, op) = match copy_buffers {
                None => {
                    let op = bounds::parallel_read_op(size, threads);
                    let label = format!("{}-e2e", bounds::BOUND_ENGINE);
                    (label, bounds::PARALLEL_READ, op)
                }
                Some(buffers) => {
                    let op = bounds::memory_copy_op(buffers, threads);
                    let label = bounds::BOUND_ENGINE.to_string();
                    (label, bounds::MEMORY_COPY, op)
                }
            };
            let op = op.map_err(|e| anyhow!("{label} {implementation}: {e}"))?;
            ops.push((label, implementation, threads, op));
        }
        Ok(ops)
    }

    /// openssl's rows of `mode` at `bits`: every size and process count.
    pub(super) fn openssl_rows(
        &self,
        version: &str,
        mode: BenchMode,
        bits: u32,
        bar: &ProgressBar,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        let cipher = mode.cipher(bits);
        for &size in &self.choices.sizes {
            for &processes in &self.openssl_threads {
                bar.set_message(format!(
                    "openssl x{processes} {cipher} {}",
                    format_size(size as u64)
                ));
                match openssl::speed(mode, bits, size, processes, OPENSSL_SECONDS) {
                    Ok(rate) => {
                        let seconds = size as f64 / rate;
                        let stats = Stats {
                            median: seconds,
                            min: seconds,
                            max: seconds,
                        };
                        rows.push(Row::new(
                            report::OPENSSL_ENGINE,
                            version,
                            mode,
                            bits,
                            size as u64,
                            processes,
                            stats,
                        ));
                    }
                    Err(e) if self.choices.baseline == Baseline::Required => {
                        bail!("--baseline openssl: {e}")
                    }
                    Err(e) => bar.suspend(|| eprintln!("paraes: bench: {e}")),
                }
                bar.inc(1);
            }
        }
        Ok(())
    }
}

/// A progress bar of `steps` on a terminal, hidden otherwise.
pub(super) fn progress_bar(steps: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() || steps == 0 {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(steps as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    bar
}
