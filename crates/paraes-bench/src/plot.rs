//! The SVG plot: throughput vs buffer size, one line per engine and thread count, log-log axes.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use crate::report::{format_size, Row};

/// An axis tick (decimal powers on a log axis) as `100 B`, `10 kB`, `1 GB`; exact binary sizes
/// read as `1 KiB` etc.
fn axis_bytes(x: f64) -> String {
    let n = x.round() as u64;
    if n >= 1024 && format_size(n) != format!("{n} B") {
        return format_size(n);
    }
    for (unit, scale) in [("GB", 1e9), ("MB", 1e6), ("kB", 1e3)] {
        if x >= scale {
            return format!("{} {unit}", (x / scale * 10.0).round() / 10.0);
        }
    }
    format!("{n} B")
}

/// A line of the plot: engine, threads, mode, bits.
type SeriesKey = (String, usize, String, u32);

/// Draws `rows` as an SVG at `path`: x = bytes, y = GB/s, both log-scaled, one line per engine
/// and thread count (and mode/bits when the rows hold more than one). The error is one line.
pub fn svg(rows: &[Row], path: &Path) -> Result<(), String> {
    if rows.is_empty() {
        return Err("nothing to plot: no rows were measured".into());
    }
    let many_ciphers = rows
        .iter()
        .any(|r| r.mode != rows[0].mode || r.bits != rows[0].bits);
    let mut series: BTreeMap<SeriesKey, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        series
            .entry((r.engine.clone(), r.threads, r.mode.clone(), r.bits))
            .or_default()
            .push((r.bytes as f64, r.gb_per_s));
    }
    let fold = |f: fn(f64, f64) -> f64, init: f64, pick: fn(&Row) -> f64| {
        rows.iter().map(pick).fold(init, f)
    };
    let x_min = fold(f64::min, f64::INFINITY, |r| r.bytes as f64);
    let x_max = fold(f64::max, 0.0, |r| r.bytes as f64);
    let y_min = fold(f64::min, f64::INFINITY, |r| r.gb_per_s).max(1e-6);
    let y_max = fold(f64::max, 0.0, |r| r.gb_per_s).max(y_min);
    let (x_lo, x_hi) = (x_min / 1.5, x_max * 1.5);
    let (y_lo, y_hi) = (y_min / 1.5, y_max * 1.5);

    let err = |e: &dyn std::fmt::Display| format!("could not draw {}: {e}", path.display());
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "paraes bench: throughput vs buffer size",
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("buffer size")
        .y_desc("throughput (GB/s, 1e9 bytes/s)")
        .x_label_formatter(&|x| axis_bytes(*x))
        .y_label_formatter(&|y| format!("{}", (y * 1000.0).round() / 1000.0))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, ((engine, threads, mode, bits), mut points)) in series.into_iter().enumerate() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = Palette99::pick(i).to_rgba();
        let s = if threads == 1 { "" } else { "s" };
        let mut label = format!("{engine}, {threads} thread{s}");
        if many_ciphers {
            label.push_str(&format!(", {mode}-{bits}"));
        }
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)).point_size(3))
            .map_err(|e| err(&e))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;
    use paraes_core::Mode;

    #[test]
    fn writes_a_non_empty_svg() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plot.svg");
        let s = |m: f64| Stats {
            median: m,
            min: m,
            max: m,
        };
        let rows: Vec<Row> = [1usize, 4, 16]
            .iter()
            .flat_map(|k| {
                let bytes = (k << 10) as u64;
                [
                    Row::new("cpu", Mode::Ctr, 128, bytes, 1, s(bytes as f64 / 1e10)),
                    Row::new("cpu", Mode::Ctr, 128, bytes, 2, s(bytes as f64 / 1.8e10)),
                ]
            })
            .collect();
        svg(&rows, &path).unwrap();
        assert_eq!(axis_bytes(1e6), "1 MB");
        assert_eq!(axis_bytes(100.0), "100 B");
        assert_eq!(axis_bytes(4096.0), "4 KiB");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..text.len().min(80)]);
        assert!(text.contains("cpu, 2 threads"));
        assert!(text.len() > 1000);
    }

    #[test]
    fn no_rows_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(svg(&[], &dir.path().join("p.svg")).is_err());
    }
}
