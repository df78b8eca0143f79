//! The SVG plot: throughput vs buffer size, log-log, one line per engine, implementation and
//! thread count, with the spread of the samples (min-max band) around each median line.
//! Simulated engines are drawn at their simulated throughput; the legend sits right of the plot.

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::report::{format_size, Row};

/// An axis tick: exact binary sizes as `1 KiB`, `4 MiB`; powers of ten as `100 B`, `10 kB`,
/// `1 GB`; any other whole number of bytes as it is (`23000 B`).
fn axis_bytes(x: f64) -> String {
    let n = x.round() as u64;
    if n >= 1024 && format_size(n) != format!("{n} B") {
        return format_size(n);
    }
    let power_of_ten = n >= 1000 && 10f64.powi((n as f64).log10().round() as i32) as u64 == n;
    if power_of_ten {
        for (unit, scale) in [("GB", 1e9), ("MB", 1e6), ("kB", 1e3)] {
            if x >= scale {
                return format!("{} {unit}", (x / scale).round());
            }
        }
    }
    format!("{n} B")
}

/// The x ticks for `sizes` shown on `lo..hi`: powers of two (every second one, or every one
/// on short ranges, so 1 KiB, 4 KiB, ... 1 GiB) when every size is a power of two; otherwise
/// the sizes themselves when there are at most 12, else the powers of ten.
fn x_ticks(sizes: &[u64], lo: f64, hi: f64) -> Vec<f64> {
    if sizes.iter().all(|s| s.is_power_of_two()) {
        let (first, last) = (lo.log2().ceil() as i32, hi.log2().floor() as i32);
        let step = if last - first < 12 { 1 } else { 2 };
        return (first..=last)
            .filter(|e| e % step == 0)
            .map(|e| 2f64.powi(e))
            .collect();
    }
    let mut distinct: Vec<u64> = sizes.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() <= 12 {
        return distinct.into_iter().map(|s| s as f64).collect();
    }
    (lo.log10().ceil() as i32..=hi.log10().floor() as i32)
        .map(|e| 10f64.powi(e))
        .collect()
}

/// The y ticks on `lo..hi` (GB/s): 1, 2, 5 x 10^k, or only the powers of ten when that gives
/// more than 12; with the range at least 6.25-fold wide, there are at least two.
fn y_ticks(lo: f64, hi: f64) -> Vec<(f64, usize)> {
    let ladder = |mantissas: &[f64]| {
        let mut ticks = Vec::new();
        for e in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
            for &m in mantissas {
                let v = m * 10f64.powi(e);
                if v >= lo && v <= hi {
                    ticks.push((v, (-e).max(0) as usize));
                }
            }
        }
        ticks
    };
    let fine = ladder(&[1.0, 2.0, 5.0]);
    if fine.len() <= 12 {
        fine
    } else {
        ladder(&[1.0])
    }
}

/// A line of the plot: engine, implementation, threads, mode, bits.
type SeriesKey = (String, String, usize, String, u32);

/// One plotted point: bytes, median GB/s, and the spread (fastest and slowest sample).
#[derive(Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
    low: f64,
    high: f64,
}

/// The point of `row`: a simulated engine at its simulated throughput (no spread: the model's
/// time does not vary), any other at its measured one, spread from the slowest to the fastest
/// sample.
fn point(row: &Row) -> Point {
    let x = row.bytes as f64;
    match row.sim_gbps {
        Some(gbps) => Point {
            x,
            y: gbps / 8.0,
            low: gbps / 8.0,
            high: gbps / 8.0,
        },
        None => Point {
            x,
            y: row.gb_per_s,
            low: x / row.seconds_max / 1e9,
            high: x / row.seconds_min / 1e9,
        },
    }
}

fn series_label(key: &SeriesKey, many_ciphers: bool, simulated: bool) -> String {
    let (engine, implementation, threads, mode, bits) = key;
    let name = if implementation.starts_with(engine.as_str()) {
        implementation.clone()
    } else {
        format!("{engine} {implementation}")
    };
    let mut label = if simulated {
        format!("{name}, {threads} simulated cores (model time)")
    } else {
        let unit = match (engine == crate::report::OPENSSL_ENGINE, *threads == 1) {
            (true, true) => "process",
            (true, false) => "processes",
            (false, true) => "thread",
            (false, false) => "threads",
        };
        format!("{name}, {threads} {unit}")
    };
    if many_ciphers {
        label.push_str(&format!(", {mode}-{bits}"));
    }
    label
}

/// Draws `rows` as SVG text (the caller writes it where it goes): x = bytes, y = GB/s, both
/// log-scaled, one line per engine, implementation and thread count (and mode/bits when the
/// rows hold more than one), with a min-max band from the samples. The error is one line.
pub fn svg(rows: &[Row]) -> Result<String, String> {
    if rows.is_empty() {
        return Err("nothing to plot: no rows were measured".into());
    }
    let many_ciphers = rows
        .iter()
        .any(|r| r.mode != rows[0].mode || r.bits != rows[0].bits);
    let mut series: BTreeMap<SeriesKey, (bool, Vec<Point>)> = BTreeMap::new();
    for r in rows {
        let key = (
            r.engine.clone(),
            r.implementation.clone(),
            r.threads,
            r.mode.clone(),
            r.bits,
        );
        let entry = series.entry(key).or_default();
        entry.0 |= r.sim_gbps.is_some();
        entry.1.push(point(r));
    }
    let points = series.values().flat_map(|(_, p)| p.iter());
    let x_min = points.clone().map(|p| p.x).fold(f64::INFINITY, f64::min);
    let x_max = points.clone().map(|p| p.x).fold(0.0, f64::max);
    let y_min = points
        .clone()
        .map(|p| p.low.min(p.y))
        .fold(f64::INFINITY, f64::min)
        .max(1e-6);
    let y_max = points
        .map(|p| p.high.max(p.y))
        .fold(0.0, f64::max)
        .max(y_min);
    let (x_lo, x_hi) = (x_min / 1.5, x_max * 1.5);
    let (y_lo, y_hi) = (y_min / 2.5, y_max * 2.5);
    let sizes: Vec<u64> = rows.iter().map(|r| r.bytes).collect();
    let xs = x_ticks(&sizes, x_lo, x_hi);
    let ys = y_ticks(y_lo, y_hi);
    let y_decimals: Vec<(f64, usize)> = ys.clone();

    let labels: Vec<String> = series
        .iter()
        .map(|(key, (simulated, _))| series_label(key, many_ciphers, *simulated))
        .collect();
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let legend_width = (longest as u32 * 7 + 60).clamp(160, 520);
    let (width, height) = (720 + legend_width, 600u32);

    let err = |e: &dyn std::fmt::Display| format!("could not draw the plot: {e}");
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (plot_area, legend_area) = root.split_horizontally(width - legend_width);
        let caption = if many_ciphers {
            "paraes bench: throughput vs buffer size".to_string()
        } else {
            format!(
                "paraes bench: AES-{}-{}, throughput vs buffer size",
                rows[0].bits,
                rows[0].mode.to_ascii_uppercase()
            )
        };
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(caption, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (x_lo..x_hi).log_scale().with_key_points(xs),
                (y_lo..y_hi)
                    .log_scale()
                    .with_key_points(ys.iter().map(|(v, _)| *v).collect()),
            )
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("buffer size (bytes per call)")
            .y_desc("throughput (GB/s, 1e9 bytes/s)")
            .x_label_formatter(&|x| axis_bytes(*x))
            .y_label_formatter(&|y| {
                let decimals = y_decimals
                    .iter()
                    .find(|(v, _)| (v - y).abs() <= 1e-9 * v.abs())
                    .map_or(3, |(_, d)| *d);
                format!("{y:.decimals$}")
            })
            .draw()
            .map_err(|e| err(&e))?;

        let mut legend = Vec::new();
        for (i, ((_, (_, mut points)), label)) in series.into_iter().zip(labels).enumerate() {
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            let color = Palette99::pick(i).to_rgba();
            // The spread: a band between the slowest and fastest samples, and a bar at each point.
            if points.len() > 1 {
                let band: Vec<(f64, f64)> = points
                    .iter()
                    .map(|p| (p.x, p.high))
                    .chain(points.iter().rev().map(|p| (p.x, p.low)))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        band,
                        color.mix(0.15).filled(),
                    )))
                    .map_err(|e| err(&e))?;
            }
            chart
                .draw_series(points.iter().filter(|p| p.high > p.low).map(|p| {
                    PathElement::new(vec![(p.x, p.low), (p.x, p.high)], color.stroke_width(1))
                }))
                .map_err(|e| err(&e))?;
            chart
                .draw_series(
                    LineSeries::new(points.iter().map(|p| (p.x, p.y)), color.stroke_width(2))
                        .point_size(3),
                )
                .map_err(|e| err(&e))?;
            legend.push((label, color));
        }

        // The legend, right of the plot area so it never covers data.
        let font = ("sans-serif", 13).into_font();
        legend_area
            .draw(&Text::new(
                "median; band: min-max of the samples",
                (8, 40),
                font.clone().color(&BLACK.mix(0.7)),
            ))
            .map_err(|e| err(&e))?;
        for (i, (label, color)) in legend.iter().enumerate() {
            let y = 66 + 20 * i as i32;
            legend_area
                .draw(&PathElement::new(
                    vec![(8, y), (32, y)],
                    color.stroke_width(2),
                ))
                .map_err(|e| err(&e))?;
            legend_area
                .draw(&Circle::new((20, y), 3, color.filled()))
                .map_err(|e| err(&e))?;
            legend_area
                .draw(&Text::new(label.as_str(), (40, y - 7), font.clone()))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mode::BenchMode;
    use crate::stats::Stats;
    use paraes_core::Mode;

    fn s(m: f64) -> Stats {
        Stats {
            median: m,
            min: m * 0.9,
            max: m * 1.2,
        }
    }

    #[test]
    fn writes_a_non_empty_svg_with_bands_and_a_legend_outside() {
        let mut rows: Vec<Row> = [1usize, 4, 16]
            .iter()
            .flat_map(|k| {
                let bytes = (k << 10) as u64;
                [
                    Row::new(
                        "cpu",
                        "aesni",
                        Mode::Ctr,
                        128,
                        bytes,
                        1,
                        s(bytes as f64 / 1e10),
                    ),
                    Row::new(
                        "cpu",
                        "aesni",
                        Mode::Ctr,
                        128,
                        bytes,
                        2,
                        s(bytes as f64 / 1.8e10),
                    ),
                ]
            })
            .collect();
        // A simulator row: slow on the host (1 MB/s), 100 Gbps in the model.
        let mut sim = Row::new(
            "sunway-sim",
            "sunway-sim/pipelined",
            Mode::Ctr,
            128,
            4096,
            256,
            s(4096.0 / 1e6),
        );
        sim.sim_gbps = Some(100.0);
        sim.sim_seconds = Some(4096.0 * 8.0 / 100e9);
        rows.push(sim);
        let text = svg(&rows).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..text.len().min(80)]);
        assert!(text.contains("cpu aesni, 2 threads"));
        assert!(text.contains("sunway-sim/pipelined, 256 simulated cores"));
        assert!(text.contains("<polygon"), "no spread band");
        for tick in ["1 KiB", "2 KiB", "4 KiB", "16 KiB"] {
            assert!(text.contains(&format!("\n{tick}\n")), "no {tick} tick");
        }
        // The y axis reaches the simulated 12.5 GB/s, not only the host's 0.001 GB/s.
        assert!(text.contains("\n10\n"), "no 10 GB/s tick");
    }

    /// CTR and GCM rows in one plot: one line each, the legend naming the mode and bits.
    #[test]
    fn ctr_and_gcm_lines_are_told_apart() {
        let rows: Vec<Row> = [16usize, 64]
            .iter()
            .flat_map(|k| {
                let bytes = (k << 10) as u64;
                [
                    Row::new(
                        "cpu",
                        "vaes512",
                        Mode::Ctr,
                        256,
                        bytes,
                        1,
                        s(bytes as f64 / 1.5e10),
                    ),
                    Row::new(
                        "cpu",
                        "vaes512",
                        BenchMode::Gcm,
                        256,
                        bytes,
                        1,
                        s(bytes as f64 / 8e9),
                    ),
                    Row::new(
                        "openssl",
                        "openssl-3",
                        BenchMode::Gcm,
                        256,
                        bytes,
                        1,
                        s(bytes as f64 / 4e9),
                    ),
                ]
            })
            .collect();
        let text = svg(&rows).unwrap();
        assert!(
            text.contains("cpu vaes512, 1 thread, ctr-256"),
            "no ctr line"
        );
        assert!(
            text.contains("cpu vaes512, 1 thread, gcm-256"),
            "no gcm line"
        );
        assert!(
            text.contains("openssl-3, 1 process, gcm-256"),
            "no openssl gcm line"
        );
        let gcm_only: Vec<Row> = rows.into_iter().filter(|r| r.mode == "gcm").collect();
        let text = svg(&gcm_only).unwrap();
        assert!(
            text.contains("AES-256-GCM, throughput vs buffer size"),
            "no gcm caption"
        );
    }

    #[test]
    fn one_size_still_has_labelled_axes() {
        let rows = [Row::new(
            "cpu",
            "portable",
            Mode::Ctr,
            128,
            23000,
            1,
            s(23000.0 / 1e9),
        )];
        let text = svg(&rows).unwrap();
        assert!(text.contains("\n23000 B\n"), "no x tick");
        assert!(
            text.contains("\n1\n") && text.contains("\n0.5\n"),
            "no y ticks"
        );
    }

    #[test]
    fn ticks() {
        assert_eq!(axis_bytes(1e6), "1 MB");
        assert_eq!(axis_bytes(100.0), "100 B");
        assert_eq!(axis_bytes(4096.0), "4 KiB");
        assert_eq!(axis_bytes(23000.0), "23000 B");
        assert_eq!(axis_bytes(1e9), "1 GB");
        let ladder = x_ticks(&[16, 1 << 30], 16.0 / 1.5, (1u64 << 30) as f64 * 1.5);
        assert_eq!(ladder.len(), 14);
        assert_eq!(ladder[3], 1024.0);
        assert_eq!(*ladder.last().unwrap(), (1u64 << 30) as f64);
        assert_eq!(x_ticks(&[2048], 2048.0 / 1.5, 3072.0), vec![2048.0]);
        assert_eq!(x_ticks(&[23000, 100], 60.0, 40000.0), vec![100.0, 23000.0]);
        let y = y_ticks(0.4, 2.5);
        assert!(y.len() >= 2, "{y:?}");
        assert!(y_ticks(1e-3, 1e3).len() <= 12);
    }

    #[test]
    fn no_rows_is_an_error() {
        assert!(svg(&[]).is_err());
    }
}
