//! Reproduces the SW-AES paper's figures with the simulator: really runs every size through
//! the engine (data and timing), writes docs/sunway-fig6.svg, -fig7.svg, -fig8.svg and prints
//! the tables of docs/SUNWAY.md (parameters, Fig. 6/7/8 numbers, Table III, 1024 nodes, GCM
//! chunk counters, host simulation speed).
//!
//! `cargo run --release -p paraes-sunway-sim --example reproduce [-- OUT_DIR]` (default `docs`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use paraes_core::engine::GCM_CHUNK_LEN;
use paraes_core::Key;
use paraes_core::{Counters, Direction, Job, KeySize, Mode};
use paraes_sunway_sim::params::{
    Aliasing, Compilation, Params, Pipelining, P0_LATENCY_BRACKET, PARAMETER_TABLE,
};
use paraes_sunway_sim::{Buffering, SimConfig, SimReport, SunwaySimEngine, Variant};
use plotters::prelude::*;

type Plot = Result<(), Box<dyn std::error::Error>>;

/// Sizes of Figs. 6-8: 1 KiB to 256 MiB, powers of two.
fn sizes() -> Vec<usize> {
    (10..=28).map(|p| 1usize << p).collect()
}

fn label(size: usize) -> String {
    match size {
        s if s >= 1 << 20 => format!("{}M", s >> 20),
        s => format!("{}K", s >> 10),
    }
}

/// CPU seconds this process has used (user + system), from /proc/self/stat; None elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

struct Run {
    report: SimReport,
    host_seconds: f64,
    host_cpu_seconds: f64,
}

/// Really encrypts `size` bytes (AES-128 ECB, as the paper) in one offload.
fn run(engine: &SunwaySimEngine, buffer: &mut [u8]) -> Run {
    let key = Key::new(&[
        0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f,
        0x3c,
    ])
    .expect("a 16-byte key")
    .expand();
    let job = Job::ecb(&key, Direction::Encrypt);
    let cpu = cpu_seconds();
    let start = Instant::now();
    let report = engine.process_timed(&job, buffer).expect("simulation runs");
    let host_seconds = start.elapsed().as_secs_f64();
    let host_cpu_seconds = match (cpu, cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => f64::NAN,
    };
    Run {
        report,
        host_seconds,
        host_cpu_seconds,
    }
}

fn log_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    y_range: std::ops::Range<f64>,
    y_label: &str,
) -> Result<
    ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    Box<dyn std::error::Error>,
> {
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(9.5f64..28.5f64, y_range)?;
    chart
        .configure_mesh()
        .x_desc("input size (log2 scale)")
        .y_desc(y_label)
        .x_labels(10)
        .x_label_formatter(&|x| label(1usize << (x.round() as u32)))
        .draw()?;
    Ok(chart)
}

fn fig6(path: &Path, runs: &[(usize, Run)]) -> Plot {
    let root = SVGBackend::new(path, (760, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = log_chart(
        &root,
        "Fig. 6 (simulated): SW-AES on one SW26010, AES-128 ECB",
        0.0..240.0,
        "Gbps",
    )?;
    let points: Vec<(f64, f64)> = runs
        .iter()
        .map(|(s, r)| ((*s as f64).log2(), r.report.gbps()))
        .collect();
    chart
        .draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(2)))?
        .label("simulated (pipelined, double buffering, 4 CGs)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE));
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))?;
    chart
        .draw_series(LineSeries::new(
            [(10.0, 107.9), (28.0, 107.9)],
            RED.stroke_width(1),
        ))?
        .label("paper peak 107.9 Gbps")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn fig7(path: &Path, runs: &[(usize, Run)]) -> Plot {
    let root = SVGBackend::new(path, (760, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = log_chart(
        &root,
        "Fig. 7 (simulated): where the time goes",
        0.0..135.0,
        "% of simulated time",
    )?;
    let parts: [(&str, RGBColor); 4] = [
        ("computation", BLUE),
        ("overlapped by double buffering", GREEN),
        ("DMA transfer", RED),
        ("thread start-up", RGBColor(120, 120, 120)),
    ];
    for (index, &(name, color)) in parts.iter().enumerate() {
        let bars = runs.iter().map(|(size, run)| {
            let r = &run.report;
            let values = [
                r.compute_seconds,
                r.overlapped_seconds,
                r.dma_seconds,
                r.startup_seconds,
            ]
            .map(|v| 100.0 * v / r.seconds);
            let below: f64 = values[..index].iter().sum();
            let x = (*size as f64).log2();
            Rectangle::new(
                [(x - 0.4, below), (x + 0.4, below + values[index])],
                color.filled(),
            )
        });
        chart
            .draw_series(bars)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn fig8(path: &Path, ladder: &[(Variant, Vec<(usize, Run)>)]) -> Plot {
    let root = SVGBackend::new(path, (760, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let peak = ladder
        .iter()
        .flat_map(|(_, runs)| runs.iter().map(|(_, r)| r.report.gbps()))
        .fold(0.0, f64::max);
    let mut chart = log_chart(
        &root,
        "Fig. 8 (simulated): the optimisation ladder on one CG",
        0.0..peak * 1.15,
        "Gbps",
    )?;
    let colors = [BLACK, RED, BLUE, GREEN];
    for ((variant, runs), color) in ladder.iter().zip(colors) {
        let points: Vec<(f64, f64)> = runs
            .iter()
            .map(|(s, r)| ((*s as f64).log2(), r.report.gbps()))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(variant.name())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn sweep(config: SimConfig, buffer: &mut [u8]) -> Vec<(usize, Run)> {
    let engine = SunwaySimEngine::new(config).expect("valid configuration");
    sizes()
        .into_iter()
        .map(|size| (size, run(&engine, &mut buffer[..size])))
        .collect()
}

/// One row of the sensitivity table: the headline figures under `params`.
fn sensitivity_row(params: &Params, labels: [String; 3]) {
    let with = |variant: Variant, cgs: usize| {
        let mut config = SimConfig::new(variant, Buffering::Double, cgs);
        config.params = params.clone();
        SunwaySimEngine::new(config).expect("valid configuration")
    };
    let at = |engine: &SunwaySimEngine, bytes: u64| {
        engine.predict(Mode::Ecb, Direction::Encrypt, KeySize::Aes128, bytes)
    };
    let chip = with(Variant::Pipelined, 4);
    let peak = at(&chip, 1 << 28);
    let first = sizes()
        .into_iter()
        .find(|&size| at(&chip, size as u64).gbps() > 100.0)
        .map_or_else(|| "none".into(), label);
    let rung = |variant| at(&with(variant, 1), 1 << 28).gbps();
    let original = rung(Variant::Original);
    let [p0, reading, pipelining] = labels;
    println!(
        "| {p0} | {reading} | {pipelining} | {:.0} | {:.1} | {:+.0}% | {first} | {:.2}x | {:.2}x |",
        peak.cycles_per_batch,
        peak.gbps(),
        100.0 * (peak.gbps() / 107.9 - 1.0),
        rung(Variant::Selldw) / original,
        rung(Variant::Pipelined) / original,
    );
}

/// The headline figures across the P0 latency bracket, the readings of Sec. III-B2 and Fig. 5 vs
/// the list scheduler, and under the previous model's latencies.
fn sensitivity() {
    println!("\n## Sensitivity: P0 latency bracket, the readings of Sec. III-B2, Fig. 5 vs list scheduler\n");
    println!("| P0 latency | selldw reading | pipelining | cycles/batch | peak Gbps (256 MiB) | vs 107.9 | first > 100 Gbps | selldw x (4.6) | pipelined x (6.9) |\n|---|---|---|---|---|---|---|---|---|");
    let defaults = Params::DEFAULT;
    let mut bracket = P0_LATENCY_BRACKET;
    bracket.sort_unstable();
    for p0 in bracket {
        let readings = [
            (
                "1 temporary, merge link (1 cycle)",
                1,
                defaults.selldw_link_latency,
            ),
            (
                "1 temporary, whole-lookup link",
                1,
                defaults.vector_load_latency,
            ),
            (
                "no temporary (independent)",
                0,
                defaults.selldw_link_latency,
            ),
        ];
        for (reading, temporaries, link) in readings {
            for pipelining in [Pipelining::Fig5Steps, Pipelining::ListScheduler] {
                let params = Params {
                    p0_latency: p0,
                    selldw_temporaries: temporaries,
                    selldw_link_latency: link,
                    pipelining,
                    ..defaults.clone()
                };
                let scheduler = match pipelining {
                    Pipelining::Fig5Steps => "Fig. 5 steps",
                    Pipelining::ListScheduler => "list scheduler",
                };
                sensitivity_row(&params, [p0.to_string(), reading.into(), scheduler.into()]);
            }
        }
    }
    // The original rung's other compiled readings (the ratios' denominators): how the compiler
    // orders each basic block, then how far it unrolls the C loops, the rest at the defaults.
    let orders = [
        (Compilation::SourceOrder, "issued in source order"),
        (
            Compilation::Scheduled(Aliasing::Undistinguished),
            "scheduled, no accesses told apart",
        ),
        (
            Compilation::Scheduled(Aliasing::Exact),
            "scheduled, exact bytes told apart",
        ),
    ]
    .map(|(compilation, name)| {
        let params = Params {
            original_compilation: compilation,
            ..defaults.clone()
        };
        (params, format!("original {name}"))
    });
    let unrolls = [
        (1, "kept"),
        (2, "unrolled 2 times"),
        (16, "unrolled completely"),
    ]
    .map(|(unroll, name)| {
        let params = Params {
            original_unroll: unroll,
            ..defaults.clone()
        };
        (params, format!("original's loops {name}"))
    });
    for (params, reading) in orders.into_iter().chain(unrolls) {
        sensitivity_row(
            &params,
            [
                defaults.p0_latency.to_string(),
                format!("default; {reading}"),
                "Fig. 5 steps".into(),
            ],
        );
    }
    // The previous model: every LDM load 2 cycles (inferred from the paper's peak), the whole
    // lookup as the link, P0 1 cycle.
    let previous = Params {
        p0_latency: 1,
        vector_load_latency: 2,
        scalar_load_latency: 2,
        selldw_link_latency: 2,
        ..defaults
    };
    sensitivity_row(
        &previous,
        [
            "1".into(),
            "previous model: all loads 2 cycles, whole-lookup link".into(),
            "Fig. 5 steps".into(),
        ],
    );
    original_grid(&defaults);
}

/// The original rung's cycles per batch under every compiled reading (the ladder's
/// denominator), with the ladder ratios they give.
fn original_grid(defaults: &Params) {
    let cycles = |variant, params: &Params| {
        let mut config = SimConfig::new(variant, Buffering::Double, 1);
        config.params = params.clone();
        let engine = SunwaySimEngine::new(config).expect("valid configuration");
        engine
            .predict(Mode::Ecb, Direction::Encrypt, KeySize::Aes128, 1 << 28)
            .cycles_per_batch
    };
    let selldw = cycles(Variant::Selldw, defaults);
    let pipelined = cycles(Variant::Pipelined, defaults);
    println!("\n## The original rung as compiled C: cycles per 8-block batch at 256 MiB (selldw x / pipelined x; Fig. 8 implies ~24,300 and 4.6x / 6.9x)\n");
    println!("| C loops | source order | no accesses told apart | arrays told apart by offset | exact bytes |\n|---|---|---|---|---|");
    for (unroll, name) in [
        (1, "kept (1 iteration per body)"),
        (2, "unrolled 2 times"),
        (4, "unrolled 4 times"),
        (16, "unrolled completely"),
    ] {
        let cells: Vec<String> = [
            Compilation::SourceOrder,
            Compilation::Scheduled(Aliasing::Undistinguished),
            Compilation::Scheduled(Aliasing::ByArray),
            Compilation::Scheduled(Aliasing::Exact),
        ]
        .into_iter()
        .map(|compilation| {
            let params = Params {
                original_compilation: compilation,
                original_unroll: unroll,
                ..defaults.clone()
            };
            let original = cycles(Variant::Original, &params);
            let cell = format!(
                "{original:.0} ({:.2}x / {:.2}x)",
                original / selldw,
                original / pipelined
            );
            if params == *defaults {
                format!("**{cell}** (default)")
            } else {
                cell
            }
        })
        .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
}

/// GCM chunk counters (format v3 bodies) against stream CTR: the same model, predicted
/// (`predict_job`, which gives what a run reports) for AES-128 CTR on 4 CGs, double buffering.
fn gcm_chunks() {
    println!("\n## GCM chunk counters (AES-128 CTR, 4 CGs, double buffering)\n\n| rung | cycles per batch: stream / GCM chunks | 1 MiB Gbps: stream / back to back / with tags | 256 MiB Gbps: stream / back to back / with tags |\n|---|---|---|---|");
    let key = Key::new(&[0; 16]).expect("a 16-byte key").expand();
    let layouts = [
        Counters::Stream,
        Counters::GcmChunks {
            base_nonce: [0; 12],
            stride: GCM_CHUNK_LEN,
        },
        Counters::GcmChunks {
            base_nonce: [0; 12],
            stride: GCM_CHUNK_LEN + 16,
        },
    ];
    for variant in Variant::ALL {
        let engine = SunwaySimEngine::new(SimConfig::new(variant, Buffering::Double, 4))
            .expect("the default parameters");
        let reports = |len: u64| {
            layouts.map(|counters| {
                let job = Job::ctr(&key, [0; 16], 0).with_counters(counters);
                engine.predict_job(&job, len).expect("a valid job")
            })
        };
        let (small, large) = (reports(1 << 20), reports(256 << 20));
        let gbps = |r: &[SimReport; 3]| {
            format!(
                "{:.2} / {:.2} / {:.2}",
                r[0].gbps(),
                r[1].gbps(),
                r[2].gbps()
            )
        };
        println!(
            "| {variant} | {} / {} | {} | {} |",
            small[0].cycles_per_batch,
            small[1].cycles_per_batch,
            gbps(&small),
            gbps(&large)
        );
    }
}

fn main() -> Plot {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "docs".into()));
    std::fs::create_dir_all(&out)?;
    let mut buffer: Vec<u8> = (0..1usize << 28).map(|i| (i * 131 + 7) as u8).collect();

    println!("## Parameters\n\n| parameter | value | source |\n|---|---|---|");
    for row in PARAMETER_TABLE {
        println!("| {} | {} | {} |", row.name, row.value, row.source);
    }

    let chip = sweep(SimConfig::default(), &mut buffer);
    println!("\n## Fig. 6 and 7 (pipelined, double buffering, 4 CGs, AES-128 ECB)\n");
    println!("| size | simulated s | Gbps | compute % | overlapped % | DMA % | start-up % | host s | host CPU s |\n|---|---|---|---|---|---|---|---|---|");
    for (size, run) in &chip {
        let r = &run.report;
        let pct = |v: f64| 100.0 * v / r.seconds;
        println!(
            "| {} | {:.3e} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.3} | {:.3} |",
            label(*size),
            r.seconds,
            r.gbps(),
            pct(r.compute_seconds),
            pct(r.overlapped_seconds),
            pct(r.dma_seconds),
            pct(r.startup_seconds),
            run.host_seconds,
            run.host_cpu_seconds
        );
    }
    fig6(&out.join("sunway-fig6.svg"), &chip)?;
    fig7(&out.join("sunway-fig7.svg"), &chip)?;
    let peak = chip
        .iter()
        .map(|(_, r)| r.report.gbps())
        .fold(0.0, f64::max);
    let first_above_100 = chip
        .iter()
        .find(|(_, r)| r.report.gbps() > 100.0)
        .map(|(s, _)| label(*s));
    println!("\npeak {peak:.1} Gbps ({:.2} GB/s) vs paper 107.9 Gbps: {:+.0}%; first size above 100 Gbps: {}", peak / 8.0, 100.0 * (peak / 107.9 - 1.0), first_above_100.unwrap_or_else(|| "none".into()));
    let r = &chip.last().expect("sizes").1.report;
    println!("steady state: {:.0} cycles per 8-block batch per CPE (paper: ~3,520 implied by 107.9 Gbps), {:.0} simulated instructions per batch", r.cycles_per_batch, r.instructions_per_batch);
    sensitivity();

    let single = sweep(
        SimConfig {
            buffering: Buffering::Single,
            ..SimConfig::default()
        },
        &mut buffer,
    );
    println!("\n## Single vs double buffering (4 CGs, pipelined)\n\n| size | single Gbps | double Gbps | gain |\n|---|---|---|---|");
    for ((size, s), (_, d)) in single
        .iter()
        .zip(&chip)
        .filter(|((size, _), _)| size.trailing_zeros() % 3 == 1)
    {
        println!(
            "| {} | {:.2} | {:.2} | {:.3}x |",
            label(*size),
            s.report.gbps(),
            d.report.gbps(),
            d.report.gbps() / s.report.gbps()
        );
    }

    let ladder: Vec<(Variant, Vec<(usize, Run)>)> = Variant::ALL
        .into_iter()
        .map(|variant| {
            (
                variant,
                sweep(
                    SimConfig {
                        variant,
                        cgs: 1,
                        ..SimConfig::default()
                    },
                    &mut buffer,
                ),
            )
        })
        .collect();
    fig8(&out.join("sunway-fig8.svg"), &ladder)?;
    println!("\n## Fig. 8 (one CG, double buffering): Gbps and speedup over original\n");
    println!("| size | original | simd | selldw | pipelined | simd x | selldw x | pipelined x |\n|---|---|---|---|---|---|---|---|");
    for (index, size) in sizes().into_iter().enumerate() {
        let g: Vec<f64> = ladder
            .iter()
            .map(|(_, runs)| runs[index].1.report.gbps())
            .collect();
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            label(size),
            g[0],
            g[1],
            g[2],
            g[3],
            g[1] / g[0],
            g[2] / g[0],
            g[3] / g[0]
        );
    }
    let ratio_range = |v: usize| {
        let ratios: Vec<f64> = (0..sizes().len())
            .map(|i| ladder[v].1[i].1.report.gbps() / ladder[0].1[i].1.report.gbps())
            .collect();
        (
            ratios.iter().cloned().fold(f64::MAX, f64::min),
            ratios.iter().cloned().fold(0.0, f64::max),
        )
    };
    for (v, paper) in [(1, "~1x"), (2, "1.4x-4.6x"), (3, "2.3x-6.9x")] {
        let (lo, hi) = ratio_range(v);
        println!(
            "{} over original: {lo:.2}x-{hi:.2}x (paper {paper})",
            Variant::ALL[v]
        );
    }
    let last = sizes().len() - 1;
    for (v, paper) in [(2, 4.6), (3, 6.9)] {
        let ratio = ladder[v].1[last].1.report.gbps() / ladder[0].1[last].1.report.gbps();
        println!(
            "{} over original at 256 MiB: {ratio:.2}x vs paper {paper}x: {:+.0}%",
            Variant::ALL[v],
            100.0 * (ratio / paper - 1.0)
        );
    }
    println!("\ncycles per batch on one CPE:");
    for (variant, runs) in &ladder {
        let r = &runs.last().expect("sizes").1.report;
        println!(
            "- {variant}: {:.0} cycles, {:.0} instructions per 8-block batch",
            r.cycles_per_batch, r.instructions_per_batch
        );
    }

    println!("\n## Table III\n\n| device | Gbps | SW26010 paper speedup | simulated SW26010 speedup | residual |\n|---|---|---|---|---|");
    for (device, gbps) in [
        ("FPGA XC7VX690T [22]", 66.1),
        ("FPGA XC6VLX240T [21]", 78.2),
        ("GeForce GTX 285 [15]", 35.2),
        ("Tesla C2050 [17]", 50.6),
        ("NVIDIA GT200 [16]", 31.7),
        ("GeForce GTX 480 [19]", 78.6),
    ] {
        println!(
            "| {device} | {gbps} | {:.2}x | {:.2}x | {:+.1}% |",
            107.9 / gbps,
            peak / gbps,
            100.0 * (peak / 107.9 - 1.0)
        );
    }
    println!("| SW26010 (this model) | {peak:.1} | - | - |");
    println!("\n## 1024 nodes\n\n1024 x {:.2} GB/s = {:.0} GB/s (paper: 13,819 GB/s, {:+.1}%; no network modelled: each node encrypts its own share)", peak / 8.0, 1024.0 * peak / 8.0, 100.0 * (1024.0 * peak / 8.0 / 13_819.0 - 1.0));

    gcm_chunks();

    let all_runs: Vec<&Run> = chip
        .iter()
        .chain(&single)
        .map(|(_, r)| r)
        .chain(
            ladder
                .iter()
                .flat_map(|(_, runs)| runs.iter().map(|(_, r)| r)),
        )
        .collect();
    let bytes: f64 = all_runs.iter().map(|r| r.report.bytes as f64).sum();
    let wall: f64 = all_runs.iter().map(|r| r.host_seconds).sum();
    let cpu: f64 = all_runs.iter().map(|r| r.host_cpu_seconds).sum();
    println!("\n## Host simulation speed\n\n{:.0} MB simulated in {wall:.1} s wall, {cpu:.1} s CPU on {} host threads: {:.0} MB/s wall, {:.0} MB/s per host core (CPU time)", bytes / 1e6, rayon::current_num_threads(), bytes / 1e6 / wall, bytes / 1e6 / cpu);
    for (variant, runs) in &ladder {
        let b: f64 = runs.iter().map(|(_, r)| r.report.bytes as f64).sum();
        let c: f64 = runs.iter().map(|(_, r)| r.host_cpu_seconds).sum();
        println!("- {variant}: {:.0} MB/s per host core", b / 1e6 / c);
    }
    Ok(())
}
