//! paraes-bench: measures engines through the [`paraes_core::Engine`] seam (CTR, ECB, and format
//! v3's AES-GCM body sealed by the pipeline on the engine; optionally the whole file pipeline),
//! takes the openssl reference, and reports the figures with what measured them: a table, CSV,
//! JSON, a markdown summary and an SVG plot.
#![deny(missing_docs)]

pub mod bounds;
pub mod document;
pub mod machine;
pub mod measure;
pub mod mode;
pub mod openssl;
pub mod plot;
pub mod report;
pub mod sizes;
pub mod stats;
pub mod summary;
pub mod timing;

pub use document::{Document, Paraes};
pub use machine::Machine;
pub use measure::{measure_e2e, measure_engine, measure_gcm};
pub use mode::BenchMode;
pub use report::{fill_speedups, Row};
pub use sizes::parse_sizes;
pub use stats::Stats;
pub use timing::Timing;
