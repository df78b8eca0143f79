//! paraes-bench: measures engines through the [`paraes_core::Engine`] seam (and, optionally, the
//! whole file pipeline) and reports the figures as a table, CSV, JSON and an SVG plot.
#![deny(missing_docs)]

pub mod measure;
pub mod openssl;
pub mod plot;
pub mod report;
pub mod sizes;
pub mod stats;

pub use measure::{measure_e2e, measure_engine, Timing};
pub use report::{fill_speedups, Row};
pub use sizes::parse_sizes;
pub use stats::Stats;
