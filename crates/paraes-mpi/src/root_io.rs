//! Rank 0's ends of the stream, handed to the runner by the caller: a leaf module, so the
//! strategies and the job runner share it without importing each other.

use std::io::{Read, Write};

/// Rank 0's ends of the stream for [`crate::IoStrategy::Scatter`]: the input positioned after any
/// container header, and the output after any header written. Other ranks pass `None`s.
#[derive(Default)]
pub struct RootIo<'a> {
    /// Where rank 0 reads the stream.
    pub input: Option<&'a mut (dyn Read + Send)>,
    /// Where rank 0 writes the result.
    pub output: Option<&'a mut (dyn Write + Send)>,
}
