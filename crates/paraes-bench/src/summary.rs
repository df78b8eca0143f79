//! A markdown summary of a [`Document`] for docs/RESULTS.md: the run and machine facts, then
//! per cipher the throughput of every line by size (median and the samples' spread), the
//! parallel speedups, and paraes beside openssl.

use std::collections::BTreeSet;

use crate::document::Document;
use crate::mode::{BenchMode, GCM_NOTE};
use crate::report::{self, format_size, Row, BASELINE_ENGINE, OPENSSL_ENGINE};

/// Three significant digits, without exponent: `0.0123`, `1.23`, `12.3`, `123`.
pub fn sig3(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// A line of the summary tables: engine, implementation, threads.
type Line = (String, String, usize);

fn line_name((engine, implementation, threads): &Line, simulated: bool) -> String {
    let name = if implementation.starts_with(engine.as_str()) {
        implementation.clone()
    } else {
        format!("{engine} {implementation}")
    };
    if simulated {
        format!("{name} (simulated)")
    } else {
        format!("{name} x{threads}")
    }
}

/// Median GB/s and its spread in one cell: `18.4 (17.9-18.6)` (just `18.4` for a single
/// figure); simulated rows give the simulated GB/s, marked `sim`.
fn cell(row: &Row) -> String {
    match row.sim_gbps {
        Some(gbps) => format!("{} sim", sig3(gbps / 8.0)),
        // One figure (openssl): no spread to show.
        None if row.seconds_min == row.seconds_max => sig3(row.gb_per_s),
        None => {
            let bytes = row.bytes as f64;
            format!(
                "{} ({}-{})",
                sig3(row.gb_per_s),
                sig3(bytes / row.seconds_max / 1e9),
                sig3(bytes / row.seconds_min / 1e9)
            )
        }
    }
}

fn facts(doc: &Document) -> String {
    let m = &doc.machine;
    let load = |l: Option<[f64; 3]>| {
        l.map_or_else(
            || "-".to_string(),
            |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"),
        )
    };
    let mut out = String::from("| | |\n|---|---|\n");
    let mut fact = |k: &str, v: String| out.push_str(&format!("| {k} | {v} |\n"));
    fact(
        "paraes",
        format!("{}, commit {}", doc.paraes.version, doc.paraes.commit),
    );
    fact("command", format!("`{}`", doc.paraes.command));
    fact("date (UTC)", doc.paraes.date.clone());
    fact(
        "CPU",
        format!(
            "{}, {} logical CPUs ({} usable){}",
            m.cpu,
            m.logical_cpus,
            m.available_threads,
            if m.hypervisor {
                ", virtual machine"
            } else {
                ""
            }
        ),
    );
    fact(
        "AES-related CPU flags",
        format!(
            "present: {}; absent: {}",
            m.cpu_flags.join(" "),
            if m.cpu_flags_absent.is_empty() {
                "none".to_string()
            } else {
                m.cpu_flags_absent.join(" ")
            }
        ),
    );
    fact(
        "AES implementations",
        format!(
            "{} (default: {})",
            m.aes_implementations.join(", "),
            m.aes_implementations.last().map_or("-", String::as_str)
        ),
    );
    fact("OS", format!("{}, kernel {}, {}", m.os, m.kernel, m.arch));
    fact(
        "memory",
        m.memory_bytes.map_or_else(
            || "-".into(),
            |b| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        ),
    );
    if let Some(gpu) = &m.gpu {
        fact("GPU", gpu.clone());
    }
    fact(
        "load average (1, 5, 15 min)",
        format!(
            "{} at the start, {} at the end",
            load(m.load_before),
            load(m.load_after)
        ),
    );
    out
}

/// The markdown summary of `doc`, its headings at `level` (e.g. 3 for `###`).
pub fn markdown(doc: &Document, level: usize) -> String {
    let h = "#".repeat(level.clamp(1, 6));
    let mut out = facts(doc);
    let ciphers: Vec<(String, u32)> = {
        let mut seen = Vec::new();
        for r in &doc.rows {
            if !seen.contains(&(r.mode.clone(), r.bits)) {
                seen.push((r.mode.clone(), r.bits));
            }
        }
        seen
    };
    for (mode, bits) in ciphers {
        let cipher = format!("AES-{bits}-{}", mode.to_ascii_uppercase());
        if mode == BenchMode::Gcm.lower() {
            out.push_str(&format!("\n{GCM_NOTE}\n"));
        }
        let rows: Vec<&Row> = doc
            .rows
            .iter()
            .filter(|r| r.mode == mode && r.bits == bits)
            .collect();
        let mut lines: Vec<(Line, bool)> = Vec::new();
        for r in &rows {
            let line = (r.engine.clone(), r.implementation.clone(), r.threads);
            if !lines.iter().any(|(l, _)| *l == line) {
                lines.push((line, r.sim_gbps.is_some()));
            }
        }
        let sizes: BTreeSet<u64> = rows.iter().map(|r| r.bytes).collect();
        let find = |line: &Line, size: u64| {
            rows.iter().find(|r| {
                r.engine == line.0
                    && r.implementation == line.1
                    && r.threads == line.2
                    && r.bytes == size
            })
        };

        out.push_str(&format!(
            "\n{h} {cipher}: throughput, GB/s (median, and min-max of the samples)\n\n| size |"
        ));
        for (line, simulated) in &lines {
            out.push_str(&format!(" {} |", line_name(line, *simulated)));
        }
        out.push_str(&format!("\n|---:|{}\n", "---:|".repeat(lines.len())));
        for &size in &sizes {
            out.push_str(&format!("| {} |", format_size(size)));
            for (line, _) in &lines {
                let text = find(line, size).map_or_else(|| "-".to_string(), |r| cell(r));
                out.push_str(&format!(" {text} |"));
            }
            out.push('\n');
        }

        let parallel: Vec<&Line> = lines
            .iter()
            .filter(|(l, simulated)| !simulated && l.2 > 1 && l.0 != OPENSSL_ENGINE)
            .map(|(l, _)| l)
            .collect();
        let has_speedup = parallel.iter().any(|l| {
            sizes
                .iter()
                .any(|&s| find(l, s).is_some_and(|r| r.speedup.is_some()))
        });
        if has_speedup {
            out.push_str(&format!(
                "\n{h} {cipher}: speedup over one thread of the same implementation (efficiency = speedup / threads)\n\n| size |"
            ));
            for line in &parallel {
                out.push_str(&format!(" {} |", line_name(line, false)));
            }
            out.push_str(&format!("\n|---:|{}\n", "---:|".repeat(parallel.len())));
            for &size in &sizes {
                out.push_str(&format!("| {} |", format_size(size)));
                for line in &parallel {
                    let text = find(line, size)
                        .and_then(|r| Some((r.speedup?, r.efficiency?)))
                        .map_or_else(|| "-".to_string(), |(s, e)| format!("{s:.2}x ({e:.2})"));
                    out.push_str(&format!(" {text} |"));
                }
                out.push('\n');
            }
        }

        let cipher_rows: Vec<Row> = rows.iter().map(|r| (*r).clone()).collect();
        let baseline = report::baseline_table(&cipher_rows);
        if !baseline.is_empty() {
            out.push_str(&format!(
                "\n{h} {cipher}: paraes ({BASELINE_ENGINE}, fastest implementation) beside `openssl speed` at the same size and parallelism\n\n{baseline}"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Paraes;
    use crate::machine::Machine;
    use crate::mode::BenchMode;
    use crate::stats::Stats;
    use paraes_core::Mode;

    #[test]
    fn summary_has_facts_pivot_speedups_and_baseline() {
        let s = |m: f64| Stats {
            median: m,
            min: m * 0.9,
            max: m * 1.1,
        };
        let mut rows = vec![
            Row::new("cpu", "aesni", Mode::Ctr, 128, 1024, 1, s(1e-7)),
            Row::new("cpu", "aesni", Mode::Ctr, 128, 1024, 2, s(0.5e-7)),
            Row::new(
                OPENSSL_ENGINE,
                "openssl-3.0.20",
                Mode::Ctr,
                128,
                1024,
                1,
                Stats {
                    median: 2e-7,
                    min: 2e-7,
                    max: 2e-7,
                },
            ),
        ];
        let mut sim = Row::new(
            "sunway-sim",
            "sunway-sim/simd",
            Mode::Ctr,
            128,
            4096,
            256,
            s(1e-3),
        );
        sim.sim_gbps = Some(80.0);
        rows.push(sim);
        report::fill_speedups(&mut rows);
        let doc = Document {
            paraes: Paraes {
                version: "0.1.0".into(),
                commit: "abc".into(),
                date: "2026-11-24T00:00:00Z".into(),
                command: "paraes bench".into(),
            },
            machine: Machine::detect(),
            rows,
        };
        let text = markdown(&doc, 3);
        assert!(text.contains("| paraes | 0.1.0, commit abc |"), "{text}");
        assert!(text.contains("| size | cpu aesni x1 | cpu aesni x2 | openssl-3.0.20 x1 | sunway-sim/simd (simulated) |"), "{text}");
        assert!(
            text.contains("| 1 KiB | 10.2 (9.31-11.4) | 20.5 (18.6-22.8) | 5.12 | - |"),
            "{text}"
        );
        assert!(text.contains("| 4 KiB | - | - | - | 10.0 sim |"), "{text}");
        assert!(text.contains("| 1 KiB | 2.00x (1.00) |"), "{text}");
        assert!(
            text.contains("| AES-128-CTR | 1 KiB | 1 | 5.12 | 10.24 | aesni | 2.00x |"),
            "{text}"
        );
        assert!(!text.contains("gcm rows"), "{text}");
        assert_eq!(sig3(0.012345), "0.0123");
        assert_eq!(sig3(123.4), "123");
    }

    /// GCM rows get their own cipher (AES-256-GCM), the note saying what they measure, and
    /// openssl's gcm figure beside them.
    #[test]
    fn gcm_rows_are_a_cipher_with_a_note() {
        let s = |m: f64| Stats {
            median: m,
            min: m,
            max: m,
        };
        let mut rows = vec![
            Row::new("cpu", "vaes512", Mode::Ctr, 256, 16384, 1, s(1e-6)),
            Row::new("cpu", "vaes512", BenchMode::Gcm, 256, 16384, 1, s(2e-6)),
            Row::new(
                OPENSSL_ENGINE,
                "openssl-3",
                BenchMode::Gcm,
                256,
                16384,
                1,
                s(4e-6),
            ),
        ];
        report::fill_speedups(&mut rows);
        let doc = Document {
            paraes: Paraes {
                version: "0.1.0".into(),
                commit: "abc".into(),
                date: "2026-11-24T00:00:00Z".into(),
                command: "paraes bench --mode ctr,gcm --bits 256".into(),
            },
            machine: Machine::detect(),
            rows,
        };
        let text = markdown(&doc, 4);
        let ctr = text.find("#### AES-256-CTR: throughput").expect(&text);
        let note = text.find(GCM_NOTE).expect(&text);
        let gcm = text.find("#### AES-256-GCM: throughput").expect(&text);
        assert!(ctr < note && note < gcm, "{text}");
        assert_eq!(text.matches(GCM_NOTE).count(), 1, "{text}");
        assert!(
            text.contains("| AES-256-GCM | 16 KiB | 1 | 4.10 | 8.19 | vaes512 | 2.00x |"),
            "{text}"
        );
    }
}
