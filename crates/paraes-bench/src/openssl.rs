//! The openssl reference: `openssl speed -mr -evp aes-BITS-MODE -bytes N [-multi T]` for the same
//! ciphers, sizes and thread counts as the sweep, in the same run, read from openssl's
//! machine-readable (`-mr`) output. GCM rows get `-evp aes-BITS-gcm`: without `-aead`, openssl
//! streams each buffer through one GCM context (CTR and GHASH over the bytes, no tag per
//! buffer).

use std::process::Command;

use crate::mode::BenchMode;

/// Why `openssl speed` gave no figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpensslError {
    /// No `openssl` on PATH.
    Missing,
    /// openssl ran but failed or printed nothing readable; the text says what.
    Failed(String),
}

impl std::fmt::Display for OpensslError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpensslError::Missing => f.write_str(
                "openssl is not installed (no `openssl` on PATH): install it for the baseline",
            ),
            OpensslError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for OpensslError {}

/// The `openssl speed` cipher name, e.g. `aes-128-ctr`, `aes-256-gcm`.
pub fn cipher_name(mode: impl Into<BenchMode>, bits: u32) -> String {
    format!("aes-{bits}-{}", mode.into().lower())
}

/// The arguments of the `openssl speed` run for `mode`, `bits`, `bytes` per call, `processes`
/// (`-multi` when more than one) and `seconds`: `speed -mr -seconds S -bytes N [-multi P] -evp
/// aes-BITS-MODE`.
pub fn speed_args(
    mode: impl Into<BenchMode>,
    bits: u32,
    bytes: usize,
    processes: usize,
    seconds: u32,
) -> Vec<String> {
    let mut args: Vec<String> = ["speed", "-mr", "-seconds"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    args.extend([
        seconds.max(1).to_string(),
        "-bytes".into(),
        bytes.to_string(),
    ]);
    if processes > 1 {
        args.extend(["-multi".into(), processes.to_string()]);
    }
    args.extend(["-evp".into(), cipher_name(mode, bits)]);
    args
}

fn run(args: &[&str]) -> Result<String, OpensslError> {
    let output = Command::new("openssl")
        .args(args)
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => OpensslError::Missing,
            _ => OpensslError::Failed(format!("could not run openssl: {e}")),
        })?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(OpensslError::Failed(format!(
            "openssl {} failed: {}",
            args.join(" "),
            first.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The implementation name of the openssl rows: `openssl-VERSION` (e.g. `openssl-3.0.20`), from
/// `openssl version`.
pub fn version() -> Result<String, OpensslError> {
    let text = run(&["version"])?;
    let mut words = text.split_whitespace();
    let (name, version) = (words.next(), words.next());
    match (name, version) {
        (Some(name), Some(version)) => Ok(format!("{}-{version}", name.to_ascii_lowercase())),
        _ => Err(OpensslError::Failed(format!(
            "could not read `openssl version`: '{}'",
            text.trim()
        ))),
    }
}

/// Runs `openssl speed -mr -evp aes-BITS-MODE -bytes BYTES -seconds SECONDS` (with
/// `-multi PROCESSES` when more than one) and returns the total throughput of all processes in
/// bytes per second.
pub fn speed(
    mode: impl Into<BenchMode>,
    bits: u32,
    bytes: usize,
    processes: usize,
    seconds: u32,
) -> Result<f64, OpensslError> {
    let mode = mode.into();
    let cipher = cipher_name(mode, bits);
    let args = speed_args(mode, bits, bytes, processes, seconds);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let stdout = run(&args)?;
    parse_speed(&stdout, &cipher).ok_or_else(|| {
        OpensslError::Failed(format!(
            "could not read the output of `openssl {}`: no +F line for {cipher}",
            args.join(" ")
        ))
    })
}

/// Reads the bytes per second of `cipher` from `openssl speed -mr` output: the last line
/// `+F:INDEX:NAME:RATE...` whose NAME is the cipher (any case). With `-multi` the children's
/// lines are echoed as `Got: +F:... from N` and the parent's own `+F` line (the sum) comes last;
/// with one size there is one rate, with several the last is taken.
pub fn parse_speed(stdout: &str, cipher: &str) -> Option<f64> {
    stdout.lines().rev().find_map(|line| {
        let rest = line.trim().strip_prefix("+F:")?;
        let mut fields = rest.split(':');
        let _index = fields.next()?;
        if !fields.next()?.trim().eq_ignore_ascii_case(cipher) {
            return None;
        }
        let rate: f64 = fields.next_back()?.trim().parse().ok()?;
        (rate.is_finite() && rate > 0.0).then_some(rate)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraes_core::Mode;

    #[test]
    fn parses_single_and_multi_process_output() {
        let single = "+DT:AES-128-CTR:1:16384\n+R:412130:AES-128-CTR:0.890000\n+H:16384\n\
                      +F:25:AES-128-CTR:7586896539.33\n";
        assert_eq!(parse_speed(single, "aes-128-ctr"), Some(7586896539.33));
        assert_eq!(parse_speed(single, "aes-256-ctr"), None);
        let multi = "Forked child 0\nForked child 1\nGot: +H:1024 from 0\n\
                     Got: +F:25:AES-128-ECB:4353863680.00 from 0\nGot: +H:1024 from 1\n\
                     Got: +F:25:AES-128-ECB:4352602112.00 from 1\n\
                     +F:25:AES-128-ECB:8706465792.00\n";
        assert_eq!(parse_speed(multi, "aes-128-ecb"), Some(8706465792.0));
        // Several sizes on one line: the last rate.
        assert_eq!(
            parse_speed("+F:3:aes-256-ctr:1.5:2.5\n", "AES-256-CTR"),
            Some(2.5)
        );
        assert_eq!(parse_speed("+F:3:aes-256-ctr:nan\n", "aes-256-ctr"), None);
        assert_eq!(parse_speed("garbage\n", "aes-256-ctr"), None);
        assert_eq!(cipher_name(Mode::Ecb, 256), "aes-256-ecb");
        let gcm = "+DT:aes-256-gcm:1:16384\n+R:230036:AES-256-GCM:0.970000\n+H:16384\n\
                   +F:25:AES-256-GCM:3885474045.36\n";
        assert_eq!(parse_speed(gcm, "aes-256-gcm"), Some(3885474045.36));
    }

    #[test]
    fn gcm_baseline_is_openssl_speed_evp_aes_gcm_at_the_size() {
        assert_eq!(cipher_name(BenchMode::Gcm, 256), "aes-256-gcm");
        assert_eq!(
            speed_args(BenchMode::Gcm, 256, 16384, 1, 1).join(" "),
            "speed -mr -seconds 1 -bytes 16384 -evp aes-256-gcm"
        );
        assert_eq!(
            speed_args(BenchMode::Gcm, 128, 1 << 20, 2, 3).join(" "),
            "speed -mr -seconds 3 -bytes 1048576 -multi 2 -evp aes-128-gcm"
        );
        assert_eq!(
            speed_args(Mode::Ctr, 192, 1024, 1, 0).join(" "),
            "speed -mr -seconds 1 -bytes 1024 -evp aes-192-ctr"
        );
    }

    #[test]
    fn gcm_is_measured_when_openssl_is_installed() {
        match speed(BenchMode::Gcm, 256, 16384, 1, 1) {
            Ok(rate) => assert!(rate > 1e6, "{rate} B/s"),
            Err(OpensslError::Missing) => {}
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn measures_when_openssl_is_installed() {
        match speed(Mode::Ctr, 128, 4096, 1, 1) {
            Ok(rate) => {
                assert!(rate > 1e6, "{rate} B/s");
                assert!(version().unwrap().starts_with("openssl-"));
            }
            Err(OpensslError::Missing) => assert_eq!(version(), Err(OpensslError::Missing)),
            Err(e) => panic!("{e}"),
        }
    }
}
