//! [`ArmorReader`]: armored text in, the container's bytes out, checked line by line as it
//! streams (memory: one input buffer, whatever the file's size).

use std::io::{self, Read};

use base64ct::{Base64, Encoding};

use super::{ArmorError, ARMOR_PREFIX, BEGIN, END, LINE_BYTES, LINE_LEN};

/// Text read from the inner reader at once.
const READ_BUFFER: usize = 64 * 1024;
/// The longest a line may be with its ending (CR LF): anything longer is refused unread.
const MAX_LINE: usize = LINE_LEN + 2;

/// A line as read: its text (without the LF), and whether an LF ended it.
struct Line {
    start: usize,
    end: usize,
    ended: bool,
}

/// Why a line must be the last before the end line.
#[derive(Clone, Copy)]
enum Last {
    Short { line: u64, len: usize },
    Padded(u64),
}

/// Reads the container that armored text from `inner` holds. Every line is checked before its
/// bytes are served: an error is an [`io::ErrorKind::InvalidData`] error wrapping an
/// [`ArmorError`], after the bytes of the lines before it.
pub struct ArmorReader<R> {
    inner: R,
    buf: Box<[u8]>,
    /// The unread text is `buf[start..end]`.
    start: usize,
    end: usize,
    inner_ended: bool,
    crlf: bool,
    /// The number of the last line read.
    line: u64,
    /// A line read that may only be followed by the end line.
    last: Option<Last>,
    /// A line's bytes not yet served.
    decoded: [u8; LINE_BYTES],
    served: usize,
    decoded_len: usize,
    /// The end line was read (and nothing after it).
    finished: bool,
    /// An error found after bytes were served in the same read: returned by the next read.
    deferred: Option<io::Error>,
    /// The text was refused: every later read says why again.
    refused: Option<ArmorError>,
    /// Bytes decoded so far.
    bytes: u64,
}

impl<R: Read> ArmorReader<R> {
    /// Reads and checks the begin line from `inner`; its line ending (LF or CRLF) is the one
    /// every line must have.
    pub fn new(inner: R) -> io::Result<Self> {
        let mut reader = ArmorReader {
            inner,
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            inner_ended: false,
            crlf: false,
            line: 0,
            last: None,
            decoded: [0; LINE_BYTES],
            served: 0,
            decoded_len: 0,
            finished: false,
            deferred: None,
            refused: None,
            bytes: 0,
        };
        let first = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => return Err(ArmorError::NoBeginLine.into()),
            Err(e) if is_armor_error(&e) => return Err(reader.label_error().into()),
            Err(e) => return Err(e),
        };
        let mut text = &reader.buf[first.start..first.end];
        if let Some(without_cr) = text.strip_suffix(b"\r") {
            reader.crlf = true;
            text = without_cr;
        }
        if text != BEGIN.as_bytes() {
            return Err(reader.label_error().into());
        }
        if !first.ended {
            return Err(ArmorError::NoEndLine.into());
        }
        Ok(reader)
    }

    /// The reader the text comes from.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The container bytes decoded so far (all of them once a read returned 0).
    pub fn bytes_decoded(&self) -> u64 {
        self.bytes
    }

    /// What is wrong with a first line that is not ours: another kind of armor, or none.
    fn label_error(&self) -> ArmorError {
        let text = &self.buf[..self.end];
        let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
        let label = line
            .strip_prefix(ARMOR_PREFIX)
            .and_then(|rest| rest.strip_suffix(b"\r").or(Some(rest)))
            .and_then(|rest| rest.strip_suffix(b"-----"));
        match label {
            Some(label) if label.len() <= LINE_LEN && label.is_ascii() => {
                ArmorError::OtherLabel(String::from_utf8_lossy(label).escape_default().to_string())
            }
            _ => ArmorError::NoBeginLine,
        }
    }

    /// The next line (`None` at the end of the text), at most [`MAX_LINE`] long.
    fn next_line(&mut self) -> io::Result<Option<Line>> {
        loop {
            let window_end = self.end.min(self.start + MAX_LINE);
            let window = &self.buf[self.start..window_end];
            if let Some(lf) = window.iter().position(|&b| b == b'\n') {
                let line = Line {
                    start: self.start,
                    end: self.start + lf,
                    ended: true,
                };
                self.start += lf + 1;
                self.line += 1;
                return Ok(Some(line));
            }
            if window.len() == MAX_LINE {
                return Err(ArmorError::LineTooLong(self.line + 1).into());
            }
            if self.inner_ended {
                if self.start == self.end {
                    return Ok(None);
                }
                let line = Line {
                    start: self.start,
                    end: self.end,
                    ended: false,
                };
                self.start = self.end;
                self.line += 1;
                return Ok(Some(line));
            }
            self.fill()?;
        }
    }

    /// Reads more text, moving what is unread to the front when the room behind it is short.
    fn fill(&mut self) -> io::Result<()> {
        if self.buf.len() - self.end < MAX_LINE {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.inner_ended = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            return Ok(());
        }
    }

    /// Reads the next line into `decoded`, or finds the end line and that nothing follows it.
    fn next_body_line(&mut self) -> Result<(), io::Error> {
        let Some(line) = self.next_line()? else {
            return Err(ArmorError::NoEndLine.into());
        };
        let number = self.line;
        let mut text = &self.buf[line.start..line.end];
        if line.ended {
            let cr = text.last() == Some(&b'\r');
            if cr != self.crlf {
                let name = |crlf| if crlf { "CRLF" } else { "LF" };
                return Err(ArmorError::MixedLineEndings {
                    line: number,
                    found: name(cr),
                    first: name(self.crlf),
                }
                .into());
            }
            if cr {
                text = &text[..text.len() - 1];
            }
        }
        if text == END.as_bytes() {
            if line.ended && (self.start < self.end || self.read_more()?) {
                return Err(ArmorError::TrailingData.into());
            }
            self.finished = true;
            return Ok(());
        }
        if !line.ended {
            return Err(ArmorError::NoEndLine.into());
        }
        if let Some(last) = self.last {
            return Err(match last {
                Last::Short { line, len } => ArmorError::ShortLine { line, len },
                Last::Padded(line) => ArmorError::PaddingNotLast(line),
            }
            .into());
        }
        let refused = if text.starts_with(b"-----") {
            Some(ArmorError::NotEndLine(number))
        } else if text.is_empty() {
            Some(ArmorError::EmptyLine(number))
        } else if text.len() > LINE_LEN {
            Some(ArmorError::LineTooLong(number))
        } else if text.iter().any(|&b| matches!(b, b' ' | b'\t' | b'\r')) {
            Some(ArmorError::Whitespace(number))
        } else {
            None
        };
        if let Some(refused) = refused {
            return Err(refused.into());
        }
        let len = text.len();
        let decoded = Base64::decode(text, &mut self.decoded)
            .map_err(|_| ArmorError::NotBase64(number))?
            .len();
        if len < LINE_LEN {
            self.last = Some(Last::Short { line: number, len });
        } else if decoded < LINE_BYTES {
            self.last = Some(Last::Padded(number));
        }
        self.served = 0;
        self.decoded_len = decoded;
        self.bytes += decoded as u64;
        Ok(())
    }

    /// Whether the inner reader holds more text (read into the buffer).
    fn read_more(&mut self) -> io::Result<bool> {
        while !self.inner_ended && self.start == self.end {
            self.fill()?;
        }
        Ok(self.start < self.end)
    }
}

/// Whether `e` is an armor refusal (not a failure of the reader beneath).
fn is_armor_error(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<ArmorError>())
}

impl<R: Read> Read for ArmorReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        if let Some(refused) = &self.refused {
            return Err(refused.clone().into());
        }
        let mut written = 0;
        while written < buf.len() {
            if self.served < self.decoded_len {
                let n = (self.decoded_len - self.served).min(buf.len() - written);
                buf[written..written + n]
                    .copy_from_slice(&self.decoded[self.served..self.served + n]);
                self.served += n;
                written += n;
                continue;
            }
            if self.finished {
                break;
            }
            if let Err(e) = self.next_body_line() {
                if let Some(refused) = e.get_ref().and_then(|e| e.downcast_ref::<ArmorError>()) {
                    self.refused = Some(refused.clone());
                }
                if written == 0 {
                    return Err(e);
                }
                self.deferred = Some(e);
                break;
            }
        }
        Ok(written)
    }
}
