//! Leak check: many small encrypt/decrypt round trips through the library in ONE process, watching
//! the process's own resident memory, open file descriptors and threads.
//!
//! Each round trip does what `paraes enc` and `paraes dec` do (see `src/commands.rs`), on real
//! files: a fresh random key (AES-128/192/256 in turn), a fresh [`CpuEngine`] (its own rayon pool),
//! a header made by [`container::seal`], [`pipeline::run`] from the plaintext file to a
//! container file, then [`UnverifiedHeader::read`] + [`UnverifiedHeader::open`] and [`pipeline::run`]
//! back to a third file, which must equal the plaintext byte for byte. Sizes are random in
//! `0..=max-size` bytes; modes alternate CTR/ECB and chunk sizes cycle 4 KiB / 16 KiB / 1 MiB so
//! that multi-chunk streams, ECB padding and empty inputs all occur. The files are removed after
//! each trip.
//!
//! It samples `VmRSS`, `VmHWM` and `Threads` from `/proc/self/status` and counts
//! `/proc/self/fd` at the start, after every 1,000 trips, and at the end (waiting up to half a
//! second for the workers of dropped rayon pools to exit), prints them as a table, and exits
//! non-zero when
//!
//! * a round trip fails or does not match,
//! * the open fd count at the end differs from the start (tolerance: 0),
//! * the thread count at the end differs from the start (tolerance: 0),
//! * VmRSS at the end exceeds VmRSS after the first sample point (1,000 trips, once allocator
//!   arenas and caches are warm) by more than `--rss-tolerance-kib` (default 2048 KiB), or
//! * files are left behind in the work directory.
//!
//! ```text
//! cargo run --release -p paraes-core --example leak_loop -- \
//!     [--iterations 10000] [--max-size 65536] [--dir DIR] [--seed N] [--rss-tolerance-kib 2048]
//! ```
//!
//! `--dir` defaults to a fresh directory under the system temporary directory (removed at the
//! end). Linux only (it reads `/proc/self`).
//!
//! [`UnverifiedHeader::open`]: paraes_core::container::UnverifiedHeader::open

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use paraes_core::container::{self, BodyAccess, Identity, Recipient, Unlock, UnverifiedHeader};
use paraes_core::pipeline;
use paraes_core::seeded::SplitMix64;
use paraes_core::{CpuEngine, Direction, Key, KeySize, Mode};

/// Options from the command line.
struct Options {
    iterations: usize,
    max_size: usize,
    dir: Option<PathBuf>,
    seed: u64,
    rss_tolerance_kib: u64,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        iterations: 10_000,
        max_size: 64 << 10,
        dir: None,
        seed: 0,
        rss_tolerance_kib: 2048,
    };
    let mut seed_given = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |text: String| {
            text.parse::<u64>()
                .map_err(|e| format!("{flag}: {text}: {e}"))
        };
        match flag.as_str() {
            "--iterations" => options.iterations = number(value()?)? as usize,
            "--max-size" => options.max_size = number(value()?)? as usize,
            "--dir" => options.dir = Some(PathBuf::from(value()?)),
            "--seed" => {
                options.seed = number(value()?)?;
                seed_given = true;
            }
            "--rss-tolerance-kib" => options.rss_tolerance_kib = number(value()?)?,
            "-h" | "--help" => {
                return Err(
                    "usage: leak_loop [--iterations N] [--max-size BYTES] [--dir DIR] \
                            [--seed N] [--rss-tolerance-kib KIB]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other} (try --help)")),
        }
    }
    if !seed_given {
        let mut bytes = [0u8; 8];
        container::random_bytes(&mut bytes).map_err(|e| e.to_string())?;
        options.seed = u64::from_le_bytes(bytes);
    }
    Ok(options)
}

/// One reading of the process's resources.
#[derive(Clone, Copy)]
struct Sample {
    trips: usize,
    rss_kib: u64,
    hwm_kib: u64,
    threads: u64,
    fds: usize,
}

/// A sample taken once the thread count has settled to at most `threads`: a dropped rayon pool
/// tells its workers to stop but does not wait for them, so they may take a moment to exit
/// (waits at most half a second, then reports what it sees).
fn settled_sample(trips: usize, threads: u64) -> Sample {
    let mut s = sample(trips);
    for _ in 0..50 {
        if s.threads <= threads {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        s = sample(trips);
    }
    s
}

fn sample(trips: usize) -> Sample {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    // read_dir holds one fd on /proc/self/fd itself while it lists: don't count it.
    let fds = fs::read_dir("/proc/self/fd")
        .map(|dir| dir.count().saturating_sub(1))
        .unwrap_or(0);
    Sample {
        trips,
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
        threads: field("Threads:"),
        fds,
    }
}

/// One encrypt/decrypt round trip of `plain` through files in `dir`.
fn round_trip(dir: &Path, trip: usize, plain: &[u8], rng: &mut SplitMix64) -> Result<(), String> {
    let err = |what: &str, e: &dyn std::fmt::Display| format!("trip {trip}: {what}: {e}");
    let size = KeySize::ALL[trip % 3];
    let mode = if trip.is_multiple_of(2) {
        Mode::Ctr
    } else {
        Mode::Ecb
    };
    let chunk_size = [4 << 10, 16 << 10, pipeline::DEFAULT_CHUNK_SIZE][(trip / 2) % 3];
    let mut key_bytes = [0u8; 32];
    rng.fill(&mut key_bytes);
    let key = Key::new(&key_bytes[..size.bytes()]).map_err(|e| err("key", &e))?;

    let plain_path = dir.join(format!("trip{trip}.bin"));
    let sealed_path = dir.join(format!("trip{trip}.bin.paraes"));
    let opened_path = dir.join(format!("trip{trip}.out"));
    fs::write(&plain_path, plain).map_err(|e| err("write plaintext", &e))?;

    // Encrypt: like `paraes enc`.
    {
        let engine = CpuEngine::new(None).map_err(|e| err("engine", &e))?;
        // paraes writes v3 (CTR/GHASH, 128 or 256 bits); ECB and 192-bit trips go through a
        // v2 container, which paraes still reads.
        let recipients = [Recipient::Key(key.clone())];
        let (header_bytes, sealed) = if mode == Mode::Ctr && size != KeySize::Aes192 {
            container::seal(size, &recipients).map(|(header, mut sealed)| {
                sealed.set_batch(chunk_size);
                (header, sealed)
            })
        } else {
            let params = container::BodyParams {
                mode,
                key_size: size,
                chunk_size,
            };
            container::seal_v2(params, &recipients)
        }
        .map_err(|e| err("seal", &e))?;
        let mut input = BufReader::new(File::open(&plain_path).map_err(|e| err("open", &e))?);
        let mut output = BufWriter::new(File::create(&sealed_path).map_err(|e| err("create", &e))?);
        output
            .write_all(&header_bytes)
            .map_err(|e| err("write header", &e))?;
        let spec = sealed.stream_spec(&engine, Direction::Encrypt);
        pipeline::run(&spec, &mut input, &mut output, &|_| {}).map_err(|e| err("enc", &e))?;
        output.flush().map_err(|e| err("flush", &e))?;
    }

    // Decrypt: like `paraes dec`.
    {
        let engine = CpuEngine::new(None).map_err(|e| err("engine", &e))?;
        let file = File::open(&sealed_path).map_err(|e| err("open", &e))?;
        let mut input = BufReader::new(&file);
        let unverified = UnverifiedHeader::read(&mut input).map_err(|e| err("read header", &e))?;
        let opened = unverified
            .open(
                &Unlock::new(vec![Identity::Key(key.clone())]),
                BodyAccess::File(&file),
            )
            .map_err(|e| err("open", &e))?;
        let mut output = BufWriter::new(File::create(&opened_path).map_err(|e| err("create", &e))?);
        let spec = opened.stream_spec(&engine, Direction::Decrypt);
        pipeline::run(&spec, &mut input, &mut output, &|_| {}).map_err(|e| err("dec", &e))?;
        output.flush().map_err(|e| err("flush", &e))?;
    }

    let mut back = Vec::with_capacity(plain.len());
    File::open(&opened_path)
        .and_then(|mut f| f.read_to_end(&mut back))
        .map_err(|e| err("read back", &e))?;
    if back != plain {
        return Err(format!(
            "trip {trip}: decrypted {} bytes differ from the {} plaintext bytes",
            back.len(),
            plain.len()
        ));
    }
    for path in [&plain_path, &sealed_path, &opened_path] {
        fs::remove_file(path).map_err(|e| err("remove", &e))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("leak_loop: {message}");
            return ExitCode::from(2);
        }
    };
    let start = sample(0);
    let (dir, owned) = match &options.dir {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("paraes-leak-loop-{}", std::process::id())),
            true,
        ),
    };
    if let Err(e) = fs::create_dir_all(&dir) {
        eprintln!("leak_loop: cannot create {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    let before: usize = fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    println!(
        "leak_loop: {} round trips, sizes 0..={} bytes, seed {}, dir {}",
        options.iterations,
        options.max_size,
        options.seed,
        dir.display()
    );

    let mut rng = SplitMix64::new(options.seed);
    let mut plain = vec![0u8; options.max_size];
    let mut samples = vec![start];
    let mut total_bytes = 0u64;
    let mut failures = 0usize;
    let clock = Instant::now();
    for trip in 0..options.iterations {
        let len = (rng.next_u64() % (options.max_size as u64 + 1)) as usize;
        rng.fill(&mut plain[..len]);
        total_bytes += len as u64;
        if let Err(message) = round_trip(&dir, trip, &plain[..len], &mut rng) {
            eprintln!("leak_loop: {message}");
            failures += 1;
            if failures >= 10 {
                eprintln!("leak_loop: stopping after 10 failures");
                break;
            }
        }
        if (trip + 1) % 1000 == 0 || trip + 1 == options.iterations {
            samples.push(settled_sample(trip + 1, start.threads));
        }
    }
    let seconds = clock.elapsed().as_secs_f64();
    let after: usize = fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    if owned {
        let _ = fs::remove_dir(&dir);
    }

    println!(
        "{:>8} {:>10} {:>10} {:>8} {:>5}",
        "trips", "VmRSS KiB", "VmHWM KiB", "threads", "fds"
    );
    for s in &samples {
        println!(
            "{:>8} {:>10} {:>10} {:>8} {:>5}",
            s.trips, s.rss_kib, s.hwm_kib, s.threads, s.fds
        );
    }
    let end = *samples.last().expect("the start sample");
    // The reference for memory: the first sample after warm-up (1,000 trips), or the start.
    let warm = samples.get(1).copied().unwrap_or(start);
    println!(
        "{} round trips ({} failed), {:.1} MiB of plaintext, {:.1} s ({:.0} trips/s)",
        options.iterations,
        failures,
        total_bytes as f64 / (1 << 20) as f64,
        seconds,
        options.iterations as f64 / seconds
    );
    println!(
        "VmRSS: start {} KiB, after {} trips {} KiB, end {} KiB (growth after warm-up {} KiB, \
         tolerance {} KiB); fds: start {}, end {}; threads: start {}, end {}; files left: {}",
        start.rss_kib,
        warm.trips,
        warm.rss_kib,
        end.rss_kib,
        end.rss_kib as i64 - warm.rss_kib as i64,
        options.rss_tolerance_kib,
        start.fds,
        end.fds,
        start.threads,
        end.threads,
        after.saturating_sub(before)
    );

    let mut problems = Vec::new();
    if failures > 0 {
        problems.push(format!("{failures} round trips failed"));
    }
    if end.rss_kib > warm.rss_kib + options.rss_tolerance_kib {
        problems.push(format!(
            "VmRSS grew by {} KiB after warm-up (tolerance {} KiB)",
            end.rss_kib - warm.rss_kib,
            options.rss_tolerance_kib
        ));
    }
    if end.fds != start.fds {
        problems.push(format!("open fds went from {} to {}", start.fds, end.fds));
    }
    if end.threads != start.threads {
        problems.push(format!(
            "threads went from {} to {}",
            start.threads, end.threads
        ));
    }
    if after != before {
        problems.push(format!(
            "{} files left in {}",
            after - before,
            dir.display()
        ));
    }
    if problems.is_empty() {
        println!("leak_loop: PASS");
        ExitCode::SUCCESS
    } else {
        for problem in &problems {
            eprintln!("leak_loop: FAIL: {problem}");
        }
        ExitCode::FAILURE
    }
}
