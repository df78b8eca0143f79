//! Buffer sizes for a sweep: `FROM..TO` (powers of 4 from FROM up to TO, inclusive) or a
//! comma-separated list.

/// Parses `FROM..TO` or `A,B,C`, each item read by `parse_one` (e.g. `16B`, `1KiB`, `65536`).
///
/// A range yields FROM, 4 x FROM, 16 x FROM, ... while at most TO. Errors (one line each): an
/// item that does not parse, a zero size, a range whose FROM is above its TO, an empty list.
pub fn parse_sizes(
    text: &str,
    parse_one: impl Fn(&str) -> Result<usize, String>,
) -> Result<Vec<usize>, String> {
    let text = text.trim();
    let sizes = if let Some((from, to)) = text.split_once("..") {
        let (from, to) = (parse_one(from)?, parse_one(to)?);
        if from == 0 {
            return Err("sizes must be at least 1 byte".into());
        }
        if from > to {
            return Err(format!(
                "the size range {text} is empty ({from} bytes is more than {to}): write it \
                 smallest first, e.g. 1KiB..256MiB"
            ));
        }
        let mut sizes = Vec::new();
        let mut size = from;
        while size <= to {
            sizes.push(size);
            match size.checked_mul(4) {
                Some(next) => size = next,
                None => break,
            }
        }
        sizes
    } else {
        let sizes = text
            .split(',')
            .map(|item| parse_one(item.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if sizes.contains(&0) {
            return Err("sizes must be at least 1 byte".into());
        }
        sizes
    };
    if sizes.is_empty() {
        return Err("no sizes given: write e.g. 1KiB..256MiB or 4KiB,1MiB".into());
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small stand-in for the binary's size parser: digits with an optional K/M/G suffix.
    fn parse(text: &str) -> Result<usize, String> {
        let (digits, mult) = match text.trim().to_ascii_uppercase() {
            t if t.ends_with("KIB") => (t[..t.len() - 3].to_string(), 1 << 10),
            t if t.ends_with("MIB") => (t[..t.len() - 3].to_string(), 1 << 20),
            t if t.ends_with("GIB") => (t[..t.len() - 3].to_string(), 1 << 30),
            t if t.ends_with('B') => (t[..t.len() - 1].to_string(), 1),
            t => (t, 1),
        };
        digits
            .parse::<usize>()
            .map(|n| n * mult)
            .map_err(|_| format!("bad size {text}"))
    }

    #[test]
    fn ranges_step_by_four_inclusive() {
        assert_eq!(
            parse_sizes("1KiB..1MiB", parse).unwrap(),
            vec![1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
        );
        assert_eq!(parse_sizes("16B..1GiB", parse).unwrap().len(), 14);
        assert_eq!(parse_sizes("16B..16B", parse).unwrap(), vec![16]);
        // TO need not be on the ladder: the last step at most TO is kept.
        assert_eq!(parse_sizes("16..100", parse).unwrap(), vec![16, 64]);
    }

    #[test]
    fn lists() {
        assert_eq!(
            parse_sizes("4KiB, 1MiB,100", parse).unwrap(),
            vec![4096, 1 << 20, 100]
        );
    }

    #[test]
    fn bad_ranges_and_items_are_refused() {
        let err = parse_sizes("1MiB..1KiB", parse).unwrap_err();
        assert!(err.contains("empty"), "{err}");
        assert!(parse_sizes("0..1KiB", parse).is_err());
        assert!(parse_sizes("1KiB,0", parse).is_err());
        assert!(parse_sizes("1KiB..x", parse).is_err());
        assert!(parse_sizes("", parse).is_err());
    }
}
