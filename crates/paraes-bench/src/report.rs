//! One row per measurement, and its renderings: a readable table, CSV and JSON (same columns;
//! schema in docs/BENCH.md).

use paraes_core::Mode;
use serde::{Deserialize, Serialize};

use crate::mode::BenchMode;
use crate::stats::Stats;

/// The engine label of the single-thread CPU engine, the baseline of `speedup`.
pub const BASELINE_ENGINE: &str = "cpu";

/// The engine label of the `openssl speed` reference rows.
pub const OPENSSL_ENGINE: &str = "openssl";

/// One measurement: an engine on one mode, key size and buffer size (a `gcm` row: format v3's
/// body of that many plaintext bytes sealed in memory, see [`crate::measure::measure_gcm`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Engine label (`cpu`, `gpu`, `sunway-sim`, `openssl`; `cpu-e2e` for the whole file
    /// pipeline).
    pub engine: String,
    /// What did the work: the CPU AES implementation (`vaes512`, `vaes256`, `aesni`,
    /// `portable`), the GPU kernel variant, `sunway-sim/<variant>`, `openssl-<version>`.
    pub implementation: String,
    /// `ctr` or `ecb` (the engine seam), or `gcm` (format v3's body: 16 KiB AES-GCM chunks
    /// with their tags, sealed through the pipeline); see [`BenchMode`].
    pub mode: String,
    /// AES key size: 128, 192 or 256.
    pub bits: u32,
    /// Bytes per call (buffer or file size).
    pub bytes: u64,
    /// Parallel workers of the engine (threads, ranks, simulated cores).
    pub threads: usize,
    /// Median seconds per call.
    pub seconds: f64,
    /// Fastest sample, seconds per call.
    pub seconds_min: f64,
    /// Slowest sample, seconds per call.
    pub seconds_max: f64,
    /// Throughput at the median, 1e9 bytes per second.
    pub gb_per_s: f64,
    /// Throughput at the median, 1e9 bits per second (8 x `gb_per_s`).
    pub gbps: f64,
    /// Throughput over the single-thread CPU engine's on the same mode, bits and bytes
    /// (`None` when that baseline was not measured).
    pub speedup: Option<f64>,
    /// Parallel efficiency: `speedup / threads`.
    pub efficiency: Option<f64>,
    /// Simulated seconds per call (sunway-sim only).
    pub sim_seconds: Option<f64>,
    /// Simulated throughput, 1e9 bits per second (sunway-sim only).
    pub sim_gbps: Option<f64>,
}

/// The column names, in order, of the CSV (and the keys of each JSON object).
pub const COLUMNS: [&str; 15] = [
    "engine",
    "implementation",
    "mode",
    "bits",
    "bytes",
    "threads",
    "seconds",
    "seconds_min",
    "seconds_max",
    "gb_per_s",
    "gbps",
    "speedup",
    "efficiency",
    "sim_seconds",
    "sim_gbps",
];

/// The lowercase name of `mode` used in rows (`gcm` rows: [`BenchMode::lower`]).
pub fn mode_name(mode: Mode) -> &'static str {
    BenchMode::from(mode).lower()
}

impl Row {
    /// A row for `stats` (seconds per call of `bytes`), without speedup (see [`fill_speedups`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: &str,
        implementation: &str,
        mode: impl Into<BenchMode>,
        bits: u32,
        bytes: u64,
        threads: usize,
        stats: Stats,
    ) -> Row {
        let mode: BenchMode = mode.into();
        let throughput = paraes_core::Throughput::new(bytes, stats.median);
        Row {
            engine: engine.to_string(),
            implementation: implementation.to_string(),
            mode: mode.lower().to_string(),
            bits,
            bytes,
            threads,
            seconds: stats.median,
            seconds_min: stats.min,
            seconds_max: stats.max,
            gb_per_s: throughput.gb_per_s(),
            gbps: throughput.gbps(),
            speedup: None,
            efficiency: None,
            sim_seconds: None,
            sim_gbps: None,
        }
    }

    /// The row's mode, `None` for a name this version does not know.
    pub fn bench_mode(&self) -> Option<BenchMode> {
        self.mode.parse().ok()
    }
}

/// Sets `speedup` and `efficiency` of every row that has a baseline row: the one-thread `cpu`
/// row of the same mode, bits and bytes, and of the same implementation for rows of a CPU
/// implementation (`cpu`, `cpu-e2e`), the fastest such row for other engines. Simulator rows
/// (those with `sim_seconds`), `openssl` rows and the machine's bound rows (`bound`,
/// `bound-e2e`) get none.
pub fn fill_speedups(rows: &mut [Row]) {
    let baselines: Vec<(String, String, u32, u64, f64)> = rows
        .iter()
        .filter(|r| r.engine == BASELINE_ENGINE && r.threads == 1)
        .map(|r| {
            let imp = r.implementation.clone();
            (imp, r.mode.clone(), r.bits, r.bytes, r.seconds)
        })
        .collect();
    // A simulator's host time says nothing about the machine it models, and openssl is the
    // reference, not a parallel engine of paraes: no speedup for them.
    for row in rows.iter_mut().filter(|r| {
        r.sim_seconds.is_none()
            && r.engine != OPENSSL_ENGINE
            && !r.engine.starts_with(crate::bounds::BOUND_ENGINE)
    }) {
        let same_cell = baselines
            .iter()
            .filter(|(_, m, b, n, _)| *m == row.mode && *b == row.bits && *n == row.bytes);
        let cpu_row = baselines.iter().any(|(imp, ..)| *imp == row.implementation);
        let base = if cpu_row {
            same_cell
                .filter(|(imp, ..)| *imp == row.implementation)
                .map(|(.., s)| *s)
                .next()
        } else {
            same_cell.map(|(.., s)| *s).reduce(f64::min)
        };
        if let Some(base_seconds) = base {
            let speedup = base_seconds / row.seconds;
            row.speedup = Some(speedup);
            row.efficiency = Some(speedup / row.threads.max(1) as f64);
        }
    }
}

/// `1 KiB`, `256 MiB`, `23000 B`: binary units where the size is a whole multiple.
pub fn format_size(bytes: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} B")
}

/// Seconds with three significant digits in a readable unit: `812 ns`, `12.3 us`, `4.56 ms`.
pub fn format_seconds(seconds: f64) -> String {
    let (value, unit) = if seconds < 1e-6 {
        (seconds * 1e9, "ns")
    } else if seconds < 1e-3 {
        (seconds * 1e6, "us")
    } else if seconds < 1.0 {
        (seconds * 1e3, "ms")
    } else {
        (seconds, "s")
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {unit}")
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

/// A markdown table of `rows`, then a note line for each absent engine (`label`, `reason`).
pub fn table(rows: &[Row], absent: &[(String, String)]) -> String {
    let mut out = String::from(
        "| engine | implementation | mode | bits | size | threads | median | min | max | GB/s | Gbps | speedup | efficiency | simulated | sim Gbps |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {} | {} | {} | {} |\n",
            r.engine,
            r.implementation,
            r.mode,
            r.bits,
            format_size(r.bytes),
            r.threads,
            format_seconds(r.seconds),
            format_seconds(r.seconds_min),
            format_seconds(r.seconds_max),
            r.gb_per_s,
            r.gbps,
            opt(r.speedup, 2),
            opt(r.efficiency, 2),
            r.sim_seconds
                .map_or_else(|| "-".to_string(), format_seconds),
            opt(r.sim_gbps, 2),
        ));
    }
    for (label, reason) in absent {
        out.push_str(&format!("| {label} | absent: {reason} |\n"));
    }
    out
}

/// A markdown table of paraes beside openssl: for each `openssl` row, the fastest `cpu` row of
/// the same mode, bits, bytes and threads, and the ratio. Empty when there are no openssl rows.
pub fn baseline_table(rows: &[Row]) -> String {
    let mut out = String::new();
    for o in rows.iter().filter(|r| r.engine == OPENSSL_ENGINE) {
        if out.is_empty() {
            out.push_str(
                "| cipher | size | threads | openssl GB/s | paraes cpu GB/s | implementation | paraes / openssl |\n\
                 |---|---:|---:|---:|---:|---|---:|\n",
            );
        }
        let ours = rows
            .iter()
            .filter(|r| {
                r.engine == BASELINE_ENGINE
                    && r.mode == o.mode
                    && r.bits == o.bits
                    && r.bytes == o.bytes
                    && r.threads == o.threads
            })
            .max_by(|a, b| a.gb_per_s.total_cmp(&b.gb_per_s));
        let cipher = format!("AES-{}-{}", o.bits, o.mode.to_ascii_uppercase());
        let (gb, imp, ratio) = match ours {
            Some(r) => (
                format!("{:.2}", r.gb_per_s),
                r.implementation.as_str(),
                format!("{:.2}x", r.gb_per_s / o.gb_per_s),
            ),
            None => ("-".into(), "-", "-".into()),
        };
        out.push_str(&format!(
            "| {cipher} | {} | {} | {:.2} | {gb} | {imp} | {ratio} |\n",
            format_size(o.bytes),
            o.threads,
            o.gb_per_s
        ));
    }
    out
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn csv_opt(value: Option<f64>) -> String {
    value.map_or_else(String::new, |v| v.to_string())
}

/// The rows as CSV: a header line of [`COLUMNS`], then one line per row; absent optional values
/// are empty fields. (A whole document adds `# key: value` lines first: see
/// [`crate::document::Document::csv`].)
pub fn csv(rows: &[Row]) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        let fields = [
            csv_field(&r.engine),
            csv_field(&r.implementation),
            csv_field(&r.mode),
            r.bits.to_string(),
            r.bytes.to_string(),
            r.threads.to_string(),
            r.seconds.to_string(),
            r.seconds_min.to_string(),
            r.seconds_max.to_string(),
            r.gb_per_s.to_string(),
            r.gbps.to_string(),
            csv_opt(r.speedup),
            csv_opt(r.efficiency),
            csv_opt(r.sim_seconds),
            csv_opt(r.sim_gbps),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_rows() -> Vec<Row> {
        let s = |m| Stats {
            median: m,
            min: m * 0.9,
            max: m * 1.1,
        };
        let mut rows = vec![
            Row::new("cpu", "vaes512", Mode::Ctr, 128, 1 << 20, 1, s(1e-4)),
            Row::new("cpu", "vaes512", Mode::Ctr, 128, 1 << 20, 2, s(0.5e-4)),
            Row::new("gpu", "t-tables", Mode::Ecb, 256, 1 << 20, 1, s(1e-4)),
        ];
        fill_speedups(&mut rows);
        rows
    }

    #[test]
    fn throughput_speedup_and_efficiency() {
        let rows = sample_rows();
        assert!((rows[0].gb_per_s - 10.48576).abs() < 1e-9);
        assert_eq!(rows[0].gbps, 8.0 * rows[0].gb_per_s);
        assert_eq!(rows[0].speedup, Some(1.0));
        assert_eq!(rows[1].speedup, Some(2.0));
        assert_eq!(rows[1].efficiency, Some(1.0));
        // No single-thread CPU row for ECB-256: no speedup.
        assert_eq!(rows[2].speedup, None);
    }

    #[test]
    fn csv_has_the_columns_and_one_line_per_row() {
        let text = csv(&sample_rows());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], COLUMNS.join(","));
        for line in &lines[1..] {
            assert_eq!(line.split(',').count(), COLUMNS.len(), "{line}");
        }
        assert!(lines[1].starts_with("cpu,vaes512,ctr,128,1048576,1,"));
        assert!(lines[3].ends_with(",,,,"), "{}", lines[3]);
    }

    #[test]
    fn speedups_compare_like_with_like() {
        let s = |m: f64| Stats {
            median: m,
            min: m,
            max: m,
        };
        let mut rows = vec![
            Row::new("cpu", "aesni", Mode::Ctr, 128, 4096, 1, s(4e-6)),
            Row::new("cpu", "aesni", Mode::Ctr, 128, 4096, 2, s(2e-6)),
            Row::new("cpu", "vaes512", Mode::Ctr, 128, 4096, 1, s(1e-6)),
            Row::new("cpu", "vaes512", Mode::Ctr, 128, 4096, 2, s(1e-6)),
            Row::new("gpu", "t-tables", Mode::Ctr, 128, 4096, 100, s(0.5e-6)),
            Row::new(
                OPENSSL_ENGINE,
                "openssl-3",
                Mode::Ctr,
                128,
                4096,
                1,
                s(2e-6),
            ),
        ];
        fill_speedups(&mut rows);
        // Each implementation against its own one-thread row; others against the fastest.
        assert_eq!(rows[1].speedup, Some(2.0));
        assert_eq!(rows[3].speedup, Some(1.0));
        assert_eq!(rows[4].speedup, Some(2.0));
        assert_eq!(rows[5].speedup, None);
        let text = baseline_table(&rows);
        assert!(
            text.contains("| AES-128-CTR | 4 KiB | 1 | 2.05 | 4.10 | vaes512 | 2.00x |"),
            "{text}"
        );
        assert_eq!(baseline_table(&rows[..5]), "");
    }

    /// GCM rows are rows of their own: named `gcm`, each against the one-thread `cpu` gcm row
    /// (never the CTR row of the same size), beside the openssl gcm row in the baseline table.
    #[test]
    fn gcm_rows_have_their_own_mode_baseline_and_openssl_line() {
        let s = |m: f64| Stats {
            median: m,
            min: m,
            max: m,
        };
        let n = 16 << 10;
        let mut rows = vec![
            Row::new("cpu", "vaes512", Mode::Ctr, 256, n, 1, s(1e-6)),
            Row::new("cpu", "vaes512", BenchMode::Gcm, 256, n, 1, s(2e-6)),
            Row::new("cpu", "vaes512", BenchMode::Gcm, 256, n, 2, s(1.6e-6)),
            Row::new(
                OPENSSL_ENGINE,
                "openssl-3",
                BenchMode::Gcm,
                256,
                n,
                1,
                s(4e-6),
            ),
        ];
        fill_speedups(&mut rows);
        assert_eq!(rows[1].mode, "gcm");
        assert_eq!(rows[1].bench_mode(), Some(BenchMode::Gcm));
        assert_eq!(rows[0].bench_mode(), Some(BenchMode::Ctr));
        assert_eq!(rows[1].speedup, Some(1.0));
        assert_eq!(rows[2].speedup, Some(1.25));
        assert_eq!(rows[3].speedup, None);
        let text = baseline_table(&rows);
        assert!(
            text.contains("| AES-256-GCM | 16 KiB | 1 | 4.10 | 8.19 | vaes512 | 2.00x |"),
            "{text}"
        );
        assert!(!text.contains("AES-256-CTR"), "{text}");
        let text = table(&rows, &[]);
        assert!(
            text.contains("| cpu | vaes512 | gcm | 256 | 16 KiB | 2 |"),
            "{text}"
        );
        let text = csv(&rows);
        assert!(text.contains("\ncpu,vaes512,gcm,256,16384,1,"), "{text}");
        assert!(
            text.contains("\nopenssl,openssl-3,gcm,256,16384,1,"),
            "{text}"
        );
        assert_eq!(mode_name(Mode::Ecb), "ecb");
    }

    #[test]
    fn table_lists_rows_and_absent_engines() {
        let text = table(&sample_rows(), &[("mpi".into(), "not built".into())]);
        assert!(
            text.contains("| cpu | vaes512 | ctr | 128 | 1 MiB | 2 |"),
            "{text}"
        );
        assert!(text.contains("| mpi | absent: not built |"), "{text}");
    }

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(format_size(16), "16 B");
        assert_eq!(format_size(23000), "23000 B");
        assert_eq!(format_size(1 << 30), "1 GiB");
        assert_eq!(format_size(256 << 20), "256 MiB");
        assert_eq!(format_seconds(1.234e-5), "12.3 us");
        assert_eq!(format_seconds(4.5e-7), "450 ns");
        assert_eq!(format_seconds(2.0), "2.00 s");
    }
}
