//! paraes-files: the file layer every paraes front end shares (the CLI, its MPI runner and
//! the Python package), so that each gets the same rails: inputs opened by one rule set
//! ([`Input`], [`InputKinds`]), outputs that take their name only when whole ([`Output`],
//! [`OutputOptions`]), the leftovers a killed run can leave ([`leftovers`]), and the guards of
//! a change in place ([`guard`], [`lease`]), containers as ASCII armor read and written as
//! streams ([`armor`]), the files a job reads, never its output
//! ([`FilesRead`]), a stream's chunks between an input and an output, many in flight at offsets
//! where the files allow ([`run_stream`]), and key material read by one set of text rules
//! ([`keys`]: key files, identity files, recipients files). Errors are typed ([`FileError`],
//! [`keys::KeyFileError`]) and name no command-line flag or keyword argument: each front end
//! adds its own advice by the error's type. Entries another user planted in a shared
//! directory are refused where paraes itself would follow or open them ([`shared_dirs`]).
#![deny(missing_docs)]

pub mod armor;
mod error;
pub mod guard;
mod input;
pub mod keys;
pub mod lease;
mod leftovers;
mod output;
pub mod page_aligned;
pub mod pending;
mod positioned;
mod reads;
pub mod replace;
pub mod shared_dirs;
mod spread;

pub use error::{one_line, FileError};
pub use input::{check_regular, file_looks_armored, open_regular_file, Input, InputKinds};
pub use leftovers::{leftovers, leftovers_warning};
pub use output::{fd_path, sync_directory, Output, OutputOptions, Reach, Temporary};
pub use page_aligned::PageAlignedLarge;
pub use positioned::widen_pipe;
pub use reads::{fd_id, file_id, path_id, FilesRead};
pub use spread::{chunk_workers, run_stream, IoMode, Moved, OutputEnd, Spread, SpreadError};
