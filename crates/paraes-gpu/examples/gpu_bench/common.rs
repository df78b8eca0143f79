//! What every section uses: sizes, medians, rates, pseudo-random data and keys, the host's
//! CPU, and saving the JSON report.

use std::path::Path;
use std::process::Command;

use paraes_core::seeded::SplitMix64;
use paraes_core::{ExpandedKey, Key, KeySize};
use rayon::prelude::*;
use serde_json::Value;

use crate::args::Args;

pub(crate) const MIB: usize = 1 << 20;
pub(crate) const GIB: usize = 1 << 30;

/// The median (NaN of none).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Pseudo-random bytes (never time on zeros), filled on all cores.
pub(crate) fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    buf.par_chunks_mut(MIB).enumerate().for_each(|(i, chunk)| {
        SplitMix64::new(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)).fill(chunk);
    });
    buf
}

/// A pseudo-random key of `size`.
pub(crate) fn make_key(size: KeySize, seed: u64) -> ExpandedKey {
    let bytes = random(32, seed);
    Key::new(&bytes[..size.bytes()]).unwrap().expand()
}

/// The host CPU's model name (/proc/cpuinfo).
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Gbit/s of `bytes` in `seconds`.
pub(crate) fn gbps(bytes: usize, seconds: f64) -> f64 {
    paraes_core::Throughput::new(bytes as u64, seconds).gbps()
}

/// GB/s of `bytes` in `seconds`.
pub(crate) fn gb_s(bytes: usize, seconds: f64) -> f64 {
    paraes_core::Throughput::new(bytes as u64, seconds).gb_per_s()
}

/// Writes the report so far (each section, and each row of the tool table, saves, so a run cut
/// off by its time limit still leaves every finished figure). A failed write is reported and
/// the run goes on: the printed tables still hold the figures.
pub(crate) fn save(args: &Args, report: &Value) {
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(report).unwrap_or_else(|e| e.to_string());
        if let Err(e) = std::fs::write(path, text) {
            say!("gpu_bench: could not save {path}: {e} (the figures above are all there is)");
        }
    }
}

/// Free bytes in the file system of `dir` (`df`; None where it cannot tell).
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    let out = Command::new("df")
        .args(["-P", "-k"])
        .arg(dir)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}
