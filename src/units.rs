//! Sizes as people write them (`4MiB` = 4 x 2^20, `4MB` = 4 x 10^6, `1.5GiB`, `65536`), parsed
//! and printed with the `bytesize` crate.

use bytesize::ByteSize;

/// Parses a size: a number of bytes, optionally with a decimal fraction and a unit (B, KB,
/// MB, GB, TB: powers of 10; KiB, MiB, GiB, TiB: powers of 2).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let refuse = |why: &str| {
        format!("'{text}' is not a size{why}: write e.g. 4MiB (4 x 2^20 bytes), 4MB (4 x 10^6), 1.5GiB or 65536")
    };
    if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(refuse(""));
    }
    let size: ByteSize = trimmed.parse().map_err(|_| refuse(""))?;
    // bytesize saturates: a result at the top of u64 was too large to write down.
    if size.as_u64() == u64::MAX {
        return Err(refuse(" (too large)"));
    }
    Ok(size.as_u64())
}

/// A byte count for people: `1.5 GiB`, `512 B`.
pub fn format_bytes(bytes: u64) -> String {
    ByteSize(bytes).display().iec().to_string()
}

/// A count with thousands separators: `1,000`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_their_units() {
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("4MB"), Ok(4_000_000));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size(" 2 KiB "), Ok(2048));
        for bad in ["", "MiB", "4XB", "-1", "x4", "1e3"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("99999999999999EiB").is_err());
    }

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn sizes_print_in_binary_units() {
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
    }
}
