//! `paraes bench`: the --quick JSON is complete and sane, absent engines are reported, and bad
//! arguments fail with one clear line.

use crate::common::{assert_success, assert_usage_error, Scratch};

const KEYS: [&str; 14] = [
    "engine",
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

fn number(row: &serde_json::Value, key: &str) -> f64 {
    row[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {row}"))
}

#[test]
fn quick_json_is_complete_and_sane() {
    let scratch = Scratch::new();
    let output = scratch.run(&["bench", "--quick", "--json", "-"]);
    let err = assert_success(&output, "bench --quick --json -");
    let rows: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("standard output is JSON");
    let rows = rows.as_array().expect("a JSON array");
    assert!(!rows.is_empty(), "no rows; stderr: {err}");
    let mut threads_seen = Vec::new();
    let mut simulated = 0;
    for row in rows {
        let object = row.as_object().expect("rows are objects");
        for key in KEYS {
            assert!(object.contains_key(key), "{key} missing from {row}");
        }
        assert_eq!(object.len(), KEYS.len(), "unexpected keys in {row}");
        assert_eq!(row["mode"], "ctr");
        assert_eq!(row["bits"], 128);
        assert!(row["bytes"].as_u64().unwrap() >= 1024);
        let threads = row["threads"].as_u64().expect("threads") as usize;
        let (median, min, max) = (
            number(row, "seconds"),
            number(row, "seconds_min"),
            number(row, "seconds_max"),
        );
        assert!(min > 0.0 && min <= median && median <= max, "{row}");
        let gb = number(row, "gb_per_s");
        assert!(gb > 0.0, "{row}");
        let expected = row["bytes"].as_f64().unwrap() / median / 1e9;
        assert!((gb - expected).abs() <= 1e-9 * expected, "{row}");
        assert!((number(row, "gbps") - 8.0 * gb).abs() <= 1e-9 * gb, "{row}");
        match row["engine"].as_str().expect("engine") {
            "cpu" => {
                threads_seen.push(threads);
                let speedup = number(row, "speedup");
                let efficiency = number(row, "efficiency");
                assert!(speedup > 0.0 && efficiency > 0.0, "{row}");
                assert!(
                    (efficiency - speedup / threads as f64).abs() <= 1e-9 * speedup,
                    "{row}"
                );
                if threads == 1 {
                    assert!((speedup - 1.0).abs() < 1e-12, "{row}");
                }
                assert!(row["sim_seconds"].is_null() && row["sim_gbps"].is_null());
            }
            // The simulator: the modelled SW26010's time beside the host's, no host speedup.
            "sunway-sim" => {
                simulated += 1;
                assert_eq!(threads, 256, "4 core groups x 64 CPEs: {row}");
                let (sim_seconds, sim_gbps) = (number(row, "sim_seconds"), number(row, "sim_gbps"));
                assert!(sim_seconds > 0.0 && sim_gbps > 0.0, "{row}");
                let bits = row["bytes"].as_f64().unwrap() * 8.0;
                assert!(
                    (sim_gbps - bits / sim_seconds / 1e9).abs() <= 1e-6 * sim_gbps,
                    "{row}"
                );
                assert!(
                    row["speedup"].is_null() && row["efficiency"].is_null(),
                    "{row}"
                );
            }
            "gpu" => assert!(
                paraes_gpu::probe().is_ok(),
                "a gpu row without a GPU: {row}"
            ),
            other => panic!("unexpected engine {other}: {row}"),
        }
    }
    assert!(
        threads_seen.contains(&1),
        "the one-thread baseline is missing"
    );
    assert!(simulated > 0, "no sunway-sim rows: {err}");
    // JSON went to stdout, so the readable table went to stderr, with the absent engines: mpi
    // (never an in-memory engine) and gpu where this machine has none.
    assert!(err.contains("| engine |"), "no table on stderr: {err}");
    let mut absent = vec!["mpi"];
    if paraes_gpu::probe().is_err() {
        absent.push("gpu");
    }
    for engine in absent {
        assert!(
            err.contains(&format!("paraes: bench: {engine}: absent")),
            "{engine} not reported absent: {err}"
        );
        assert!(err.contains(&format!("| {engine} | absent")), "{err}");
    }
}

#[test]
fn csv_and_plot_files_are_written() {
    let scratch = Scratch::new();
    let output = scratch.run(&[
        "bench",
        "--quick",
        "--backend",
        "cpu",
        "--threads",
        "1",
        "--mode",
        "ctr,ecb",
        "--sizes",
        "4KiB,64KiB",
        "--repeat",
        "3",
        "--csv",
        "rows.csv",
        "--plot",
        "plot.svg",
    ]);
    let err = assert_success(&output, "bench --csv --plot");
    assert!(!err.contains("absent"), "only cpu was asked for: {err}");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("| cpu | ecb | 128 | 64 KiB | 1 |"),
        "{table}"
    );
    let csv = String::from_utf8(scratch.read("rows.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], KEYS.join(","));
    assert_eq!(lines.len(), 1 + 4, "{csv}");
    let svg = String::from_utf8(scratch.read("plot.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.len() > 1000);
}

#[test]
fn bad_arguments_are_usage_errors_in_one_line() {
    let scratch = Scratch::new();
    for (args, needle) in [
        (
            &["bench", "--backend", "cpu,tpu"][..],
            "unknown engine 'tpu'",
        ),
        (&["bench", "--sizes", "1MiB..1KiB"][..], "empty"),
        (&["bench", "--repeat", "0"][..], "--repeat"),
        (&["bench", "--threads", "0"][..], "--threads"),
        (&["bench", "--mode", "cbc"][..], "'cbc' is not a mode"),
        (&["bench", "--bits", "512"][..], "--bits"),
        (&["bench", "--baseline", "libsodium"][..], "openssl"),
        (&["bench", "--mode", "ecb", "--sizes", "100"][..], "16"),
    ] {
        let what = args.join(" ");
        let message = assert_usage_error(&scratch.run(args), &what);
        assert!(message.contains(needle), "{what}: {message}");
    }
}
