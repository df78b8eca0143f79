//! Section 3: pinned host<->device bandwidth one way and both ways at once, and
//! device<->device bandwidth.

use paraes_gpu::{CopyDirection, GpuEngine};
use serde_json::{json, Value};

use crate::args::Args;
use crate::common::{gb_s, median, save, MIB};

/// Times the copies, prints them, records them in `report` (saved), and returns the pinned
/// (H2D, D2H) rates in GB/s (NaN where one failed).
pub(crate) fn bandwidth(
    args: &Args,
    report: &mut Value,
    gpu: &GpuEngine,
    kernel_bytes: usize,
) -> (f64, f64) {
    let copy_bytes = if args.quick { 64 * MIB } else { 256 * MIB };
    let mut bandwidth = serde_json::Map::new();
    say!("\ncopies, median of {}:", args.reps);
    for (name, direction, bytes, factor) in [
        ("h2d_pinned", CopyDirection::HostToDevice, copy_bytes, 1.0),
        ("d2h_pinned", CopyDirection::DeviceToHost, copy_bytes, 1.0),
        ("d2d", CopyDirection::DeviceToDevice, kernel_bytes, 2.0),
    ] {
        match gpu.time_copy(direction, bytes, args.reps) {
            Ok(times) => {
                let t = median(times);
                let rate = factor * gb_s(bytes, t);
                say!(
                    "{name:<11} {:>6} MiB: {rate:>8.1} GB/s{}",
                    bytes / MIB,
                    if factor > 1.0 { " (read + write)" } else { "" }
                );
                bandwidth.insert(
                    name.into(),
                    json!({ "bytes": bytes, "median_s": t, "gb_s": rate }),
                );
            }
            Err(e) => say!("{name}: {e}"),
        }
    }
    match gpu.time_copy_both_ways(copy_bytes, args.reps) {
        Ok(times) => {
            let t = median(times);
            let rate = gb_s(2 * copy_bytes, t);
            say!(
                "h2d+d2h at once {:>3} MiB each way: {rate:>8.1} GB/s total ({:.1} GB/s per direction)",
                copy_bytes / MIB,
                rate / 2.0
            );
            bandwidth.insert(
                "h2d_d2h_simultaneous".into(),
                json!({ "bytes_each_way": copy_bytes, "median_s": t, "gb_s_total": rate, "gb_s_per_direction": rate / 2.0 }),
            );
        }
        Err(e) => say!("h2d+d2h at once: {e}"),
    }
    let rate = |name: &str| {
        bandwidth
            .get(name)
            .and_then(|v| v["gb_s"].as_f64())
            .unwrap_or(f64::NAN)
    };
    let (h2d, d2h) = (rate("h2d_pinned"), rate("d2h_pinned"));
    report["bandwidth"] = Value::Object(bandwidth.clone());
    save(args, report);
    (h2d, d2h)
}
