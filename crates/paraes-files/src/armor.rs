//! ASCII armor: a container as PEM-style text (docs/FORMAT.md, "ASCII armor"), written and read
//! as streams in bounded memory. [`ArmorWriter`] encodes what is written to it; [`ArmorReader`]
//! decodes strictly (one begin line, lines of exactly 64 canonical base64 characters but the
//! last, one end line, nothing after it) and says in one line what is wrong ([`ArmorError`]).

mod read;
#[cfg(test)]
mod tests;

use std::io::{self, Write};

use base64ct::{Base64, Encoding};

pub use read::ArmorReader;

/// The first line of an armored container.
pub const BEGIN: &str = "-----BEGIN PARAES ENCRYPTED FILE-----";
/// The last line of an armored container.
pub const END: &str = "-----END PARAES ENCRYPTED FILE-----";
/// Base64 characters on every line but the last (which has 1 to 64).
pub const LINE_LEN: usize = 64;
/// The container bytes one full line holds.
const LINE_BYTES: usize = LINE_LEN / 4 * 3;
/// Encoded text gathered before it is written on (a pipe or file gets large writes).
const WRITE_BUFFER: usize = 64 * 1024;

/// Why armored text was refused. Lines are numbered from 1, the begin line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArmorError {
    /// The text starts with a PEM begin line of another kind (e.g. an age file).
    #[error("it is armored as \"{0}\", not as a paraes file (whose first line is {BEGIN})")]
    OtherLabel(String),
    /// The first line is not the begin line.
    #[error("its first line is not {BEGIN}")]
    NoBeginLine,
    /// A line is longer than a line may be.
    #[error("armor line {0} is longer than {LINE_LEN} characters: the text was changed after it was written")]
    LineTooLong(u64),
    /// A line shorter than 64 characters that is not the last before the end line.
    #[error("armor line {line} has {len} characters, but only the last line before the end line may have fewer than {LINE_LEN}: the text was re-wrapped or cut")]
    ShortLine {
        /// The line.
        line: u64,
        /// Its length.
        len: usize,
    },
    /// A line that ends in padding and is not the last before the end line.
    #[error("armor line {0} ends in padding (=) but is not the last line before the end line: the text was changed after it was written")]
    PaddingNotLast(u64),
    /// An empty line.
    #[error("armor line {0} is empty: an armored file has no blank lines")]
    EmptyLine(u64),
    /// A space, tab or carriage return inside a line.
    #[error("armor line {0} holds a space, tab or carriage return: base64 lines hold none")]
    Whitespace(u64),
    /// A line that is not canonical base64.
    #[error("armor line {0} is not canonical base64 (RFC 4648's standard alphabet, padded with =, unused bits zero)")]
    NotBase64(u64),
    /// A line that starts like a begin or end line but is not the end line.
    #[error("armor line {0} is not the end line {END}")]
    NotEndLine(u64),
    /// A line whose ending differs from the first line's.
    #[error("armor line {line} ends in {found} but the first line in {first}: an armored file keeps one kind of line ending")]
    MixedLineEndings {
        /// The line.
        line: u64,
        /// Its ending ("LF" or "CRLF").
        found: &'static str,
        /// The first line's.
        first: &'static str,
    },
    /// The text ends before the end line.
    #[error("the armor ends before its end line {END}: the text was cut")]
    NoEndLine,
    /// Something follows the end line (more than its one line ending).
    #[error("there is data after the end line {END}: an armored file ends with that line")]
    TrailingData,
}

impl From<ArmorError> for io::Error {
    fn from(e: ArmorError) -> Self {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// Whether `start`, the first bytes of an input, begin a PEM-style armor (`-----BEGIN `),
/// ours or another kind ([`ArmorReader::new`] tells them apart). A binary container starts
/// with its magic, never with this.
pub fn looks_armored(start: &[u8]) -> bool {
    start.starts_with(ARMOR_PREFIX)
}

/// What every PEM-style begin line starts with.
pub const ARMOR_PREFIX: &[u8] = b"-----BEGIN ";

/// Writes what is written to it as armored text into `inner`: the begin line first, then 64
/// base64 characters per line, and, on [`ArmorWriter::finish`], the last line and the end
/// line, LF line endings. Holds at most one line's bytes and [`WRITE_BUFFER`] of text.
pub struct ArmorWriter<W: Write> {
    inner: W,
    /// Bytes of the line being filled.
    group: [u8; LINE_BYTES],
    filled: usize,
    /// Encoded text not yet written to `inner`.
    text: Vec<u8>,
}

impl<W: Write> ArmorWriter<W> {
    /// An armor over `inner`; nothing is written to it before the first flush.
    pub fn new(inner: W) -> Self {
        let mut text = Vec::with_capacity(WRITE_BUFFER + LINE_LEN + 1);
        text.extend_from_slice(BEGIN.as_bytes());
        text.push(b'\n');
        ArmorWriter {
            inner,
            group: [0; LINE_BYTES],
            filled: 0,
            text,
        }
    }

    /// The writer the text goes to.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The writer the text goes to, to take what was written to it so far (the text goes on
    /// after it, in order).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Writes the last line and the end line, flushes, and gives back the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.filled > 0 {
            let filled = self.filled;
            let group = self.group;
            self.push_line(&group[..filled]);
        }
        self.text.extend_from_slice(END.as_bytes());
        self.text.push(b'\n');
        self.inner.write_all(&self.text)?;
        self.inner.flush()?;
        Ok(self.inner)
    }

    /// Encodes `bytes` (at most one line's) as one line of text.
    fn push_line(&mut self, bytes: &[u8]) {
        let mut line = [0u8; LINE_LEN];
        let encoded = Base64::encode(bytes, &mut line).expect("a line's bytes fit a line");
        self.text.extend_from_slice(encoded.as_bytes());
        self.text.push(b'\n');
    }

    /// Writes the gathered text on when there is enough of it.
    fn write_on_if_full(&mut self) -> io::Result<()> {
        if self.text.len() >= WRITE_BUFFER {
            self.inner.write_all(&self.text)?;
            self.text.clear();
        }
        Ok(())
    }
}

impl<W: Write> Write for ArmorWriter<W> {
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<usize> {
        let taken = bytes.len();
        while !bytes.is_empty() {
            if self.filled == 0 && bytes.len() >= LINE_BYTES {
                let (line, rest) = bytes.split_at(LINE_BYTES);
                self.push_line(line);
                bytes = rest;
            } else {
                let n = (LINE_BYTES - self.filled).min(bytes.len());
                self.group[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
                self.filled += n;
                bytes = &bytes[n..];
                if self.filled == LINE_BYTES {
                    let group = self.group;
                    self.push_line(&group);
                    self.filled = 0;
                }
            }
            self.write_on_if_full()?;
        }
        Ok(taken)
    }

    /// Writes on the whole lines so far (a partial line waits: lines are whole or last).
    fn flush(&mut self) -> io::Result<()> {
        self.inner.write_all(&self.text)?;
        self.text.clear();
        self.inner.flush()
    }
}
