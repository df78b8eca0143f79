//! `paraes bench`: the --quick JSON document is complete and sane (what measured, on what
//! machine, with which implementation per row), absent engines are reported, --impl measures
//! what this CPU has and refuses the rest, outputs that cannot be written fail before anything
//! is measured, the openssl baseline gives rows, and bad arguments fail with one clear line.

use std::time::{Duration, Instant};

use paraes_core::AesImpl;

use crate::common::{assert_error, assert_success, assert_usage_error, under_ci, Scratch};

const KEYS: [&str; 15] = [
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
    let doc: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("standard output is JSON");
    assert_eq!(doc.as_object().expect("an object").len(), 3, "{doc}");
    let commit = doc["paraes"]["commit"].as_str().expect("a commit");
    assert!(
        commit == "unknown" || commit.len() >= 12,
        "commit '{commit}'"
    );
    assert_eq!(doc["paraes"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(doc["paraes"]["date"].as_str().unwrap().ends_with('Z'));
    assert!(doc["paraes"]["command"]
        .as_str()
        .unwrap()
        .contains("bench --quick --json -"));
    let machine = &doc["machine"];
    for key in [
        "cpu",
        "logical_cpus",
        "cpu_flags",
        "os",
        "kernel",
        "load_before",
    ] {
        assert!(!machine[key].is_null(), "machine.{key} missing: {machine}");
    }
    let fastest = AesImpl::detect().name();
    assert_eq!(
        machine["aes_implementations"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        AesImpl::fastest().name()
    );
    let rows = doc["rows"].as_array().expect("rows: a JSON array");
    assert!(!rows.is_empty(), "no rows; stderr: {err}");
    let mut threads_seen = Vec::new();
    let mut simulated = 0;
    let mut bounds = 0;
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
        let implementation = row["implementation"].as_str().expect("implementation");
        match row["engine"].as_str().expect("engine") {
            "cpu" => {
                // Without --impl: the implementation paraes picks on this CPU.
                assert_eq!(implementation, fastest, "{row}");
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
                assert_eq!(implementation, "sunway-sim/pipelined", "{row}");
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
            "gpu" | "hybrid" => assert!(
                paraes_gpu::probe().is_ok(),
                "a {} row without a GPU: {row}",
                row["engine"]
            ),
            // The machine's bound beside them, on the same thread counts.
            "bound" => {
                assert_eq!(implementation, "memory-copy", "{row}");
                bounds += 1;
            }
            "bound-e2e" => assert_eq!(implementation, "parallel-read", "{row}"),
            other => panic!("unexpected engine {other}: {row}"),
        }
    }
    assert!(bounds > 0, "no bound rows: {err}");
    assert!(
        threads_seen.contains(&1),
        "the one-thread baseline is missing"
    );
    assert!(simulated > 0, "no sunway-sim rows: {err}");
    // JSON went to stdout, so the readable table went to stderr, with the absent engines: mpi
    // (never an in-memory engine), and gpu and hybrid where this machine has no GPU.
    assert!(err.contains("| engine |"), "no table on stderr: {err}");
    let mut absent = vec!["mpi"];
    if paraes_gpu::probe().is_err() {
        absent.extend(["gpu", "hybrid"]);
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
        table.contains(&format!(
            "| cpu | {} | ecb | 128 | 64 KiB | 1 |",
            AesImpl::detect()
        )),
        "{table}"
    );
    let csv = String::from_utf8(scratch.read("rows.csv")).unwrap();
    // The document facts first, as `# key: value` lines, then the header and the rows.
    let facts: Vec<&str> = csv.lines().take_while(|l| l.starts_with("# ")).collect();
    for key in [
        "paraes_version",
        "paraes_commit",
        "date",
        "command",
        "cpu",
        "cpu_flags",
        "kernel",
    ] {
        assert!(
            facts.iter().any(|l| l.starts_with(&format!("# {key}: "))),
            "no {key} in {facts:?}"
        );
    }
    let lines: Vec<&str> = csv.lines().skip(facts.len()).collect();
    assert_eq!(lines[0], KEYS.join(","));
    // Two modes at two sizes: the engine's rows and the machine's bound (a memory copy) beside
    // each.
    assert_eq!(lines.len(), 1 + 4 + 4, "{csv}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("bound,")).count(),
        4,
        "{csv}"
    );
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
        (
            &["bench", "--impl", "aes-ni"][..],
            "aesni, vaes256, vaes512, portable",
        ),
        (
            &["bench", "--backend", "sunway-sim", "--impl", "portable"][..],
            "no cpu engine",
        ),
        (&["bench", "--mode", "ecb", "--sizes", "100"][..], "16"),
    ] {
        let what = args.join(" ");
        let message = assert_usage_error(&scratch.run(args), &what);
        assert!(message.contains(needle), "{what}: {message}");
    }
}

/// The JSON document of a short CPU-only run (4 KiB, one sample, no openssl unless `extra`
/// asks) with `extra` arguments; and its standard error.
fn cpu_run(scratch: &Scratch, extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec!["bench", "--backend", "cpu", "--repeat", "1", "--json", "-"];
    if !extra.contains(&"--sizes") {
        args.extend(["--sizes", "4KiB"]);
    }
    if !extra.contains(&"--baseline") {
        args.extend(["--baseline", "none"]);
    }
    args.extend_from_slice(extra);
    let output = scratch.run(&args);
    let err = assert_success(&output, &args.join(" "));
    let doc = serde_json::from_slice(&output.stdout).expect("standard output is JSON");
    (doc, err)
}

#[test]
fn impl_measures_each_implementation_this_cpu_has_and_refuses_the_others() {
    let scratch = Scratch::new();
    for imp in AesImpl::ALL {
        let name = imp.name();
        let args = [
            "bench",
            "--backend",
            "cpu",
            "--sizes",
            "4KiB",
            "--repeat",
            "1",
        ];
        if imp.is_available() {
            let (doc, _) = cpu_run(&scratch, &["--impl", name, "--threads", "1"]);
            let rows = doc["rows"].as_array().unwrap();
            // The engine's row, and the machine's bound beside it.
            assert_eq!(rows.len(), 2, "{doc}");
            assert_eq!(rows[0]["implementation"], name, "{doc}");
            assert_eq!(rows[1]["engine"], "bound", "{doc}");
        } else {
            let output = scratch.run(&[&args[..], &["--impl", name]].concat());
            let message = assert_usage_error(&output, &format!("--impl {name}"));
            assert!(
                message.contains(&format!("--impl {name}: this CPU")),
                "{message}"
            );
            let missing = imp.missing_features();
            assert!(message.contains(missing[0]), "{message}");
            assert!(message.contains("use portable"), "{message}");
        }
    }
    // The whole ladder in one run, each implementation with its own one-thread speedup base.
    let (doc, _) = cpu_run(&scratch, &["--impl", "all", "--threads", "1"]);
    let measured: Vec<&str> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["engine"] == "cpu")
        .map(|r| r["implementation"].as_str().unwrap())
        .collect();
    let available: Vec<&str> = AesImpl::available().iter().map(|i| i.name()).collect();
    assert_eq!(measured, available);
}

#[test]
fn unwritable_outputs_fail_before_measuring() {
    let scratch = Scratch::new();
    std::fs::create_dir(scratch.path("a-folder")).unwrap();
    for (flag, path) in [
        ("--plot", "no-such-folder/plot.svg"),
        ("--csv", "a-folder"),
        ("--json", "no-such-folder/rows.json"),
    ] {
        // The default sweep (up to 256 MiB, every engine) would take minutes: a quick failure
        // shows that nothing was measured.
        let start = Instant::now();
        let output = scratch.run(&["bench", flag, path]);
        let message = assert_error(&output, &format!("bench {flag} {path}"));
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{flag}: took {:?}",
            start.elapsed()
        );
        assert!(
            message.contains(flag) && message.contains("nothing was measured"),
            "{message}"
        );
        assert!(output.stdout.is_empty(), "{flag}: a table was printed");
    }
    assert!(!scratch.exists("no-such-folder"));
    // A good path next to a bad one: the check leaves no empty file behind.
    let output = scratch.run(&[
        "bench",
        "--csv",
        "rows.csv",
        "--plot",
        "no-such-folder/p.svg",
    ]);
    assert_error(&output, "--csv good --plot bad");
    assert!(
        !scratch.exists("rows.csv"),
        "the check left rows.csv behind"
    );
}

#[test]
fn openssl_baseline_gives_rows_at_each_size_and_thread_count() {
    let scratch = Scratch::new();
    let has_openssl = std::process::Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_openssl {
        let output = scratch.run(&["bench", "--backend", "cpu", "--baseline", "openssl"]);
        let message = assert_error(&output, "--baseline openssl without openssl");
        assert!(message.contains("openssl is not installed"), "{message}");
        // That is all that can be checked here; under CI (where scripts/test.sh installs
        // openssl) the rows themselves must be checked.
        assert!(
            !under_ci(),
            "openssl is not installed under CI: the openssl baseline's rows went unchecked"
        );
        return;
    }
    let (doc, err) = cpu_run(
        &scratch,
        &[
            "--sizes",
            "1KiB,16KiB",
            "--threads",
            "2",
            "--baseline",
            "openssl",
        ],
    );
    let rows = doc["rows"].as_array().unwrap();
    let openssl: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["engine"] == "openssl").collect();
    let cpu_threads: std::collections::BTreeSet<u64> = rows
        .iter()
        .filter(|r| r["engine"] == "cpu")
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(openssl.len(), 2 * cpu_threads.len(), "{doc}");
    for row in &openssl {
        assert!(
            row["implementation"]
                .as_str()
                .unwrap()
                .starts_with("openssl-"),
            "{row}"
        );
        assert!(number(row, "gb_per_s") > 0.01, "{row}");
        assert!(row["speedup"].is_null(), "{row}");
        assert!(
            cpu_threads.contains(&row["threads"].as_u64().unwrap()),
            "{row}"
        );
    }
    assert!(
        err.contains("paraes / openssl"),
        "no comparison table: {err}"
    );
}

#[test]
fn without_openssl_the_default_goes_on_and_an_explicit_baseline_fails() {
    let scratch = Scratch::new();
    let empty = scratch.path("empty-bin");
    std::fs::create_dir(&empty).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--backend",
            "cpu",
            "--sizes",
            "1KiB",
            "--repeat",
            "1",
        ];
        args.extend_from_slice(extra);
        scratch.command(&args).env("PATH", &empty).output().unwrap()
    };
    let output = run(&["--json", "-"]);
    let err = assert_success(&output, "bench without openssl on PATH");
    assert!(
        err.contains("paraes: bench: openssl is not installed"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["engine"] == "cpu" || r["engine"] == "bound"));
    let message = assert_error(
        &run(&["--baseline", "openssl"]),
        "--baseline openssl, no openssl",
    );
    assert!(message.contains("openssl is not installed"), "{message}");
}

#[test]
fn from_json_summarises_and_redraws_an_earlier_run() {
    let scratch = Scratch::new();
    let output = scratch.run(&[
        "bench",
        "--backend",
        "cpu",
        "--sizes",
        "1KiB,4KiB",
        "--repeat",
        "2",
        "--threads",
        "2",
        "--baseline",
        "none",
        "--json",
        "run.json",
    ]);
    assert_success(&output, "bench --json run.json");
    let output = scratch.run(&["bench", "--from-json", "run.json", "--plot", "again.svg"]);
    assert_success(&output, "bench --from-json");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("| paraes | "), "{text}");
    assert!(text.contains("AES-128-CTR: throughput, GB/s"), "{text}");
    assert!(
        text.contains(&format!("| size | cpu {} x1 |", AesImpl::detect())),
        "{text}"
    );
    assert!(text.contains("| 4 KiB | "), "{text}");
    assert!(String::from_utf8(scratch.read("again.svg"))
        .unwrap()
        .starts_with("<svg"));
    scratch.write("bad.json", b"[]");
    let message = assert_error(
        &scratch.run(&["bench", "--from-json", "bad.json"]),
        "bad json",
    );
    assert!(message.contains("paraes bench --json"), "{message}");
}

/// `--mode ctr,gcm` measures format v3's body beside CTR in one run: a gcm row per CTR row at
/// 128 and 256 bits, 192 skipped for gcm with a note (and `--bits 192` alone with gcm is a
/// usage error), each with a positive throughput; with the openssl baseline, an
/// `openssl speed -evp aes-N-gcm` row beside each gcm row.
#[test]
fn gcm_rows_measure_the_v3_body_beside_ctr() {
    let scratch = Scratch::new();
    let (doc, err) = cpu_run(
        &scratch,
        &[
            "--mode",
            "ctr,gcm",
            "--bits",
            "128,192,256",
            "--sizes",
            "64KiB",
        ],
    );
    let rows = doc["rows"].as_array().unwrap();
    let count = |mode: &str, bits: u64| {
        rows.iter()
            .filter(|r| r["mode"] == mode && r["bits"] == bits)
            .inspect(|r| assert!(number(r, "gb_per_s") > 0.0, "{r}"))
            .count()
    };
    for bits in [128, 256] {
        assert!(count("gcm", bits) >= 1, "no gcm {bits} row: {doc}");
        assert!(count("ctr", bits) >= 1, "no ctr {bits} row");
    }
    assert_eq!(count("gcm", 192), 0, "gcm has no 192-bit rows");
    assert!(count("ctr", 192) >= 1);
    assert!(err.contains("192"), "the skip is said: {err}");
    crate::common::assert_usage_error(
        &scratch.run(&["bench", "--mode", "gcm", "--bits", "192"]),
        "gcm at 192 bits only",
    );
}
