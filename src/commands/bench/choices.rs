//! What `bench`'s options ask for: modes, key sizes, sizes, engines, CPU implementations,
//! the baseline and the output files, each checked before anything is measured (usage errors
//! exit 2).

use super::*;

/// A usage error of `bench` (exit status 2).
pub(super) fn usage(message: String) -> anyhow::Error {
    anyhow::Error::new(UsageError {
        message,
        command: "bench",
    })
}

pub(super) fn parse_modes(list: &str) -> Result<Vec<BenchMode>> {
    let mut modes = Vec::new();
    for item in list.split(',') {
        let mode: BenchMode = item.parse().map_err(|e| usage(format!("--mode: {e}")))?;
        if !modes.contains(&mode) {
            modes.push(mode);
        }
    }
    Ok(modes)
}

pub(super) fn parse_bits(list: &str) -> Result<Vec<u32>> {
    let mut all = Vec::new();
    for item in list.split(',').map(str::trim) {
        match item.parse::<u32>() {
            Ok(bits @ (128 | 192 | 256)) if !all.contains(&bits) => all.push(bits),
            Ok(128 | 192 | 256) => {}
            _ => {
                return Err(usage(format!(
                    "--bits takes 128, 192 or 256 (comma-separated), not '{item}'"
                )))
            }
        }
    }
    Ok(all)
}

/// The key sizes of `mode` among `bits`: all of them, except 192 for gcm (format v3's body,
/// C2SP Cobblestone-128 and -256, has no 192-bit key).
pub(super) fn mode_bits(mode: BenchMode, bits: &[u32]) -> Vec<u32> {
    bits.iter()
        .copied()
        .filter(|&b| mode.has_key_bits(b))
        .collect()
}

/// gcm with `--bits`: 192 is skipped for gcm (returns the note saying so) while gcm keeps 128
/// or 256; a `--bits` list that leaves gcm no key size is a usage error.
pub(super) fn check_gcm_bits(modes: &[BenchMode], bits: &[u32]) -> Result<Option<String>> {
    if !modes.contains(&BenchMode::Gcm) || !bits.contains(&192) {
        return Ok(None);
    }
    if mode_bits(BenchMode::Gcm, bits).is_empty() {
        return Err(usage(
            "--mode gcm has 128 and 256-bit keys only (format v3's body, C2SP Cobblestone), \
             and --bits 192 leaves it nothing to measure: add 128 or 256 to --bits, or take gcm \
             out of --mode"
                .to_string(),
        ));
    }
    let others: Vec<&str> = modes
        .iter()
        .filter(|m| **m != BenchMode::Gcm)
        .map(|m| m.lower())
        .collect();
    let rest = if others.is_empty() {
        String::new()
    } else {
        let verb = if others.len() == 1 { "is" } else { "are" };
        format!(" ({} {verb} measured at 192)", others.join(" and "))
    };
    Ok(Some(format!(
        "gcm: no 192-bit rows: GCM has 128 and 256-bit keys only{rest}"
    )))
}

/// A fixed key of `bits` (benchmarks need no secret).
pub(super) fn bench_key(bits: u32) -> Key {
    let bytes: Vec<u8> = (0u8..32)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    Key::new(&bytes[..bits as usize / 8]).expect("16, 24 or 32 bytes")
}

/// Whether and how the openssl reference is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Baseline {
    /// `--baseline openssl`: fail without openssl.
    Required,
    /// The default of a full run: take it when openssl is installed.
    IfInstalled,
    /// `--baseline none`, or the default of `--quick`.
    Off,
}

/// The `--impl` list: the CPU AES implementations to measure (empty: the default). Refused when
/// `--backend` has no cpu engine, or where this CPU lacks one.
pub(super) fn parse_impls(
    list: &[String],
    backends: &[&str],
    backend_arg: &str,
) -> Result<Vec<AesImpl>> {
    if list.is_empty() {
        return Ok(Vec::new());
    }
    if !backends.contains(&"cpu") {
        return Err(usage(format!(
            "--impl picks the CPU's AES implementation, but --backend {backend_arg} measures no \
             cpu engine: add cpu to --backend or drop --impl"
        )));
    }
    let available: Vec<&str> = AesImpl::available().iter().map(|i| i.name()).collect();
    let mut impls = Vec::new();
    for item in list.iter().map(|i| i.trim()) {
        let chosen = if item.eq_ignore_ascii_case("all") {
            AesImpl::available()
        } else {
            let imp = AesImpl::from_name(item).ok_or_else(|| {
                usage(format!(
                    "--impl: unknown AES implementation '{item}': choose aesni, vaes256, \
                     vaes512, portable or all"
                ))
            })?;
            if !imp.is_available() {
                let lacks = if cfg!(target_arch = "x86_64") {
                    format!("lacks {}", imp.missing_features().join(", "))
                } else {
                    "is not an x86-64 CPU".to_string()
                };
                return Err(usage(format!(
                    "--impl {imp}: this CPU {lacks}: use {}",
                    available.join(", ")
                )));
            }
            vec![imp]
        };
        for imp in chosen {
            if !impls.contains(&imp) {
                impls.push(imp);
            }
        }
    }
    Ok(impls)
}

/// Fails unless `path` (of option `flag`) can be written, before anything is measured: an
/// existing file is opened for writing without truncating it, a new one is created and removed
/// again, so a failed check leaves nothing behind.
pub(super) fn check_output(flag: &str, path: &Path) -> Result<()> {
    // Through its links as the report will be written: a planted one is refused before any
    // measuring.
    let path = &crate::plan::output_through_links(flag, path)?;
    let existed = path.symlink_metadata().is_ok();
    let opened = if existed {
        OpenOptions::new().write(true).open(path)
    } else {
        OpenOptions::new().write(true).create_new(true).open(path)
    };
    match opened {
        Ok(file) => {
            drop(file);
            if !existed {
                std::fs::remove_file(path).with_context(|| {
                    format!("{flag}: could not remove the test file {}", path.display())
                })?;
            }
            Ok(())
        }
        Err(e) => bail!(
            "{flag}: cannot write {} ({e}): choose a path in a writable folder; nothing was \
             measured",
            path.display()
        ),
    }
}

/// What `bench`'s options ask for, checked (usage errors exit 2).
pub(super) struct Choices {
    pub(super) modes: Vec<BenchMode>,
    pub(super) bits: Vec<u32>,
    /// Why gcm has no 192-bit rows, when 192 was asked for beside other sizes.
    pub(super) gcm_192_note: Option<String>,
    pub(super) sizes: Vec<usize>,
    pub(super) names: Vec<&'static str>,
    pub(super) impls: Vec<AesImpl>,
    pub(super) baseline: Baseline,
    pub(super) timing: Timing,
    pub(super) json_to_stdout: bool,
}

impl Choices {
    pub(super) fn from_args(args: &BenchArgs) -> Result<Self> {
        let modes = parse_modes(&args.mode)?;
        let bits = parse_bits(&args.bits)?;
        let gcm_192_note = check_gcm_bits(&modes, &bits)?;
        let default_sizes = if args.quick {
            QUICK_SIZES
        } else {
            DEFAULT_SIZES
        };
        let sizes =
            paraes_bench::parse_sizes(args.sizes.as_deref().unwrap_or(default_sizes), |text| {
                crate::units::parse_size(text).map(|n| n as usize)
            })
            .map_err(|e| usage(format!("--sizes: {e}")))?;
        if modes.contains(&BenchMode::Ecb) {
            if let Some(bad) = sizes.iter().find(|s| !s.is_multiple_of(16)) {
                return Err(usage(format!("ECB works on whole 16-byte blocks, but --sizes has {bad} bytes: use multiples of 16")));
            }
        }
        let names = engines::bench_engine_names(&args.backend)?;
        let impls = parse_impls(&args.aes_impl, &names, &args.backend)?;
        // clap accepts only "openssl" and "none".
        let baseline = match args.baseline.as_deref() {
            Some("openssl") => Baseline::Required,
            Some(_) => Baseline::Off,
            None if args.quick => Baseline::Off,
            None => Baseline::IfInstalled,
        };
        let mut timing = if args.quick {
            Timing::QUICK
        } else {
            Timing::FULL
        };
        if let Some(repeat) = args.repeat {
            timing.repeats = repeat as usize;
        }
        let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
        for (flag, path) in [
            ("--json", &args.json),
            ("--csv", &args.csv),
            ("--plot", &args.plot),
        ] {
            match path {
                Some(path) if !(flag == "--json" && json_to_stdout) => check_output(flag, path)?,
                _ => {}
            }
        }
        Ok(Choices {
            modes,
            bits,
            gcm_192_note,
            sizes,
            names,
            impls,
            baseline,
            timing,
            json_to_stdout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn usage_message(err: anyhow::Error) -> String {
        err.downcast::<UsageError>().expect("a usage error").message
    }

    #[test]
    pub(super) fn modes_take_lists_with_gcm() {
        assert_eq!(
            parse_modes("ctr,ecb,gcm").unwrap(),
            [BenchMode::Ctr, BenchMode::Ecb, BenchMode::Gcm]
        );
        assert_eq!(parse_modes("GCM,gcm").unwrap(), [BenchMode::Gcm]);
        let message = usage_message(parse_modes("ctr,cbc").unwrap_err());
        assert!(message.contains("'cbc' is not a mode"), "{message}");
        assert!(message.contains("gcm"), "{message}");
    }

    /// 192 is skipped for gcm with a note while gcm keeps a key size, and refused when it
    /// would leave gcm none.
    #[test]
    pub(super) fn gcm_skips_192_bits_or_refuses_a_list_of_192_alone() {
        let (ctr, gcm) = (BenchMode::Ctr, BenchMode::Gcm);
        assert_eq!(mode_bits(gcm, &[128, 192, 256]), [128, 256]);
        assert_eq!(mode_bits(ctr, &[128, 192, 256]), [128, 192, 256]);
        assert_eq!(check_gcm_bits(&[ctr], &[192]).unwrap(), None);
        assert_eq!(check_gcm_bits(&[gcm], &[128, 256]).unwrap(), None);
        let note = check_gcm_bits(&[ctr, gcm], &[192, 256]).unwrap().unwrap();
        assert!(note.contains("no 192-bit rows") && note.contains("(ctr is measured at 192)"));
        let note = check_gcm_bits(&[gcm], &[128, 192]).unwrap().unwrap();
        assert!(!note.contains("measured at 192"), "{note}");
        for modes in [&[gcm][..], &[ctr, gcm]] {
            let message = usage_message(check_gcm_bits(modes, &[192]).unwrap_err());
            assert!(message.contains("128 and 256-bit keys only"), "{message}");
            assert!(message.contains("--bits"), "{message}");
        }
    }
}
