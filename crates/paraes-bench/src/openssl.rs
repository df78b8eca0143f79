//! The `--baseline openssl` reference: `openssl speed -evp` for the same cipher, in the same run.

use std::process::Command;

use paraes_core::Mode;

/// The `openssl speed` cipher name, e.g. `aes-128-ctr`.
pub fn cipher_name(mode: Mode, bits: u32) -> String {
    let mode = match mode {
        Mode::Ctr => "ctr",
        Mode::Ecb => "ecb",
    };
    format!("aes-{bits}-{mode}")
}

/// Runs `openssl speed -evp aes-BITS-MODE -bytes BYTES -seconds SECONDS` and returns its
/// throughput in GB/s (1e9 bytes/s). The error is one line, e.g. when openssl is absent.
pub fn speed(mode: Mode, bits: u32, bytes: usize, seconds: u32) -> Result<f64, String> {
    let cipher = cipher_name(mode, bits);
    let output = Command::new("openssl")
        .args(["speed", "-evp", &cipher, "-bytes", &bytes.to_string()])
        .args(["-seconds", &seconds.to_string()])
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                "openssl is not installed (no `openssl` on PATH): no baseline".to_string()
            }
            _ => format!("could not run openssl: {e}"),
        })?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let first = err.lines().next().unwrap_or("").trim();
        return Err(format!("openssl speed -evp {cipher} failed: {first}"));
    }
    parse_speed(&String::from_utf8_lossy(&output.stdout), &cipher)
        .ok_or_else(|| format!("could not read the openssl speed output for {cipher}"))
}

/// Reads the GB/s of `cipher` from `openssl speed` output: the line that starts with the cipher
/// name ends with the throughput in thousands of bytes per second, e.g. `9450123.45k`.
pub fn parse_speed(stdout: &str, cipher: &str) -> Option<f64> {
    stdout.lines().rev().find_map(|line| {
        let mut fields = line.split_whitespace();
        let name = fields.next()?;
        if !name.eq_ignore_ascii_case(cipher) {
            return None;
        }
        let last = fields.last()?;
        let kilo: f64 = last.strip_suffix('k')?.parse().ok()?;
        Some(kilo * 1e3 / 1e9)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_openssl_3_output() {
        let out = "version: 3.0.19\nThe 'numbers' are in 1000s of bytes per second processed.\n\
                   type          16384 bytes\nAES-128-CTR    9450123.45k\n";
        let gb = parse_speed(out, "aes-128-ctr").unwrap();
        assert!((gb - 9.45012345).abs() < 1e-9, "{gb}");
        assert_eq!(parse_speed(out, "aes-256-ctr"), None);
        assert_eq!(cipher_name(Mode::Ecb, 256), "aes-256-ecb");
    }
}
