//! One vocabulary for speed: bytes over seconds, read as GB/s (1e9 bytes per second) or as
//! Gbps (1e9 bits per second, the unit of the seed papers). Every crate's report uses it, so
//! the formula is written once.

/// `bytes` processed in `seconds`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Throughput {
    /// Bytes processed.
    pub bytes: u64,
    /// Seconds taken.
    pub seconds: f64,
}

impl Throughput {
    /// `bytes` in `seconds`.
    pub fn new(bytes: u64, seconds: f64) -> Self {
        Throughput { bytes, seconds }
    }

    /// 1e9 bytes per second; 0 when no time has passed (an empty job).
    pub fn gb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds / 1e9
        } else {
            0.0
        }
    }

    /// 1e9 bits per second (8 x [`Throughput::gb_per_s`]); 0 when no time has passed.
    pub fn gbps(&self) -> f64 {
        8.0 * self.gb_per_s()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        let t = Throughput::new(2_000_000_000, 4.0);
        assert_eq!(t.gb_per_s(), 0.5);
        assert_eq!(t.gbps(), 4.0);
        assert_eq!(Throughput::new(5, 0.0).gbps(), 0.0);
    }
}
