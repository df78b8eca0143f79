//! The armor codec against the rules of docs/FORMAT.md, "ASCII armor".

use std::io::{Read, Write};

use super::*;

fn armor(bytes: &[u8]) -> Vec<u8> {
    let mut writer = ArmorWriter::new(Vec::new());
    // In uneven pieces, as a pipeline writes.
    for piece in bytes.chunks(37) {
        writer.write_all(piece).unwrap();
    }
    writer.finish().unwrap()
}

fn dearmor(text: &[u8]) -> Result<Vec<u8>, ArmorError> {
    let unwrap = |e: io::Error| {
        e.get_ref()
            .and_then(|e| e.downcast_ref::<ArmorError>())
            .cloned()
            .unwrap_or_else(|| panic!("not an armor error: {e}"))
    };
    let mut reader = ArmorReader::new(text).map_err(unwrap)?;
    let mut out = Vec::new();
    // Small reads too, so a line is served across reads.
    let mut buf = [0u8; 100];
    loop {
        let n = reader.read(&mut buf).map_err(unwrap)?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    assert_eq!(reader.bytes_decoded(), out.len() as u64);
    Ok(out)
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn every_size_round_trips_in_64_column_lines_with_the_begin_and_end_lines() {
    for len in [0, 1, 2, 3, 47, 48, 49, 95, 96, 97, 4096, 100_000] {
        let bytes = data(len);
        let text = armor(&bytes);
        let text_str = std::str::from_utf8(&text).unwrap();
        assert!(text_str.ends_with('\n') && !text_str.ends_with("\n\n"));
        let lines: Vec<&str> = text_str.lines().collect();
        assert_eq!(lines[0], BEGIN);
        assert_eq!(*lines.last().unwrap(), END);
        let body = &lines[1..lines.len() - 1];
        assert_eq!(body.len(), len.div_ceil(LINE_BYTES), "{len} bytes");
        for (i, line) in body.iter().enumerate() {
            if i + 1 < body.len() {
                assert_eq!(line.len(), LINE_LEN);
            } else {
                assert!((1..=LINE_LEN).contains(&line.len()));
            }
        }
        assert_eq!(dearmor(&text).unwrap(), bytes, "{len} bytes");
    }
}

#[test]
fn crlf_is_read_when_every_line_has_it_and_a_final_line_ending_may_be_missing() {
    let bytes = data(200);
    let text = armor(&bytes);
    let crlf = String::from_utf8(text.clone())
        .unwrap()
        .replace('\n', "\r\n");
    assert_eq!(dearmor(crlf.as_bytes()).unwrap(), bytes);
    assert_eq!(dearmor(&text[..text.len() - 1]).unwrap(), bytes);
    assert_eq!(dearmor(&crlf.as_bytes()[..crlf.len() - 2]).unwrap(), bytes);
}

/// Replaces line `n` (0: the begin line) of `text`.
fn with_line(text: &[u8], n: usize, line: &str) -> Vec<u8> {
    let text = std::str::from_utf8(text).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[n] = line.to_owned();
    (lines.join("\n") + "\n").into_bytes()
}

#[test]
fn each_strictness_rule_refuses_with_its_own_error() {
    let bytes = data(200); // 5 lines: 4 of 64 characters, one of 12.
    let text = armor(&bytes);
    let lines: Vec<String> = std::str::from_utf8(&text)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let mut cases: Vec<(Vec<u8>, ArmorError)> = vec![
        ([&text[..], b"x"].concat(), ArmorError::TrailingData),
        ([&text[..], b"\n"].concat(), ArmorError::TrailingData),
        (text[..text.len() - 10].to_vec(), ArmorError::NoEndLine),
        (
            text[..text.len() - END.len() - 1].to_vec(),
            ArmorError::NoEndLine,
        ),
        (
            with_line(&text, 2, &format!("{}A", lines[2])),
            ArmorError::LineTooLong(3),
        ),
        (
            with_line(&text, 2, &format!("{}AAAAAAAAAAAA", lines[2])),
            ArmorError::LineTooLong(3),
        ),
        (
            with_line(&text, 2, &lines[2][..60]),
            ArmorError::ShortLine { line: 3, len: 60 },
        ),
        (with_line(&text, 2, ""), ArmorError::EmptyLine(3)),
        (
            with_line(
                &text,
                2,
                &format!("{} {}", &lines[2][..31], &lines[2][32..]),
            ),
            ArmorError::Whitespace(3),
        ),
        (
            with_line(
                &text,
                2,
                &format!("{}*{}", &lines[2][..31], &lines[2][32..]),
            ),
            ArmorError::NotBase64(3),
        ),
        (
            with_line(&text, 1, "-----BEGIN PARAES ENCRYPTED FILE-----"),
            ArmorError::NotEndLine(2),
        ),
        (
            with_line(&text, 0, "-----BEGIN AGE ENCRYPTED FILE-----"),
            ArmorError::OtherLabel("AGE ENCRYPTED FILE".into()),
        ),
        (
            with_line(&text, 0, "-----BEGIN PARAES ENCRYPTED FILE----- "),
            ArmorError::NoBeginLine,
        ),
    ];
    // 12 characters encode 9 bytes; the last line's 200 - 4 * 48 = 8 bytes end in "=":
    // a last character whose unused bits are not zero is not canonical.
    let last = &lines[5];
    assert!(last.ends_with('=') && !last.ends_with("=="), "{last}");
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = last.clone().into_bytes();
    let i = bits.len() - 2;
    let value = ALPHABET.iter().position(|&c| c == bits[i]).unwrap();
    bits[i] = ALPHABET[value ^ 1]; // one of the two unused low bits set
    let noncanonical = String::from_utf8(bits).unwrap();
    cases.push((with_line(&text, 5, &noncanonical), ArmorError::NotBase64(6)));
    // Padding before the last line: two lines of 12 + 64 characters, the first padded.
    let padded_first = format!("{BEGIN}\n{}\n{}\n{END}\n", last, lines[1]);
    cases.push((
        padded_first.into_bytes(),
        ArmorError::ShortLine { line: 2, len: 12 },
    ));
    let full_padded = base64ct::Base64::encode_string(&data(47)); // 64 characters, ends in "="
    assert_eq!(full_padded.len(), LINE_LEN);
    let padded = format!("{BEGIN}\n{full_padded}\n{}\n{END}\n", lines[1]);
    cases.push((padded.into_bytes(), ArmorError::PaddingNotLast(2)));
    let mut mixed = String::from_utf8(text.clone())
        .unwrap()
        .replacen('\n', "\r\n", 1);
    cases.push((
        mixed.clone().into_bytes(),
        ArmorError::MixedLineEndings {
            line: 2,
            found: "LF",
            first: "CRLF",
        },
    ));
    mixed = String::from_utf8(text.clone()).unwrap().replacen(
        &format!("{}\n", lines[3]),
        &format!("{}\r\n", lines[3]),
        1,
    );
    cases.push((
        mixed.into_bytes(),
        ArmorError::MixedLineEndings {
            line: 4,
            found: "CRLF",
            first: "LF",
        },
    ));
    for (bad, expected) in cases {
        assert_eq!(
            dearmor(&bad).unwrap_err(),
            expected,
            "{}",
            String::from_utf8_lossy(&bad)
        );
        assert!(!expected.to_string().contains('\n'));
    }
}

#[test]
fn a_refusal_is_said_again_by_every_later_read() {
    let text = [&armor(&data(500))[..], b"garbage"].concat();
    let mut reader = ArmorReader::new(&text[..]).unwrap();
    let mut out = Vec::new();
    let err = reader.read_to_end(&mut out).unwrap_err();
    assert_eq!(out, data(500), "every line before the refusal is served");
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("data after the end line"), "{err}");
    assert!(reader.read(&mut [0; 10]).is_err());
}

/// Memory stays bounded: a line that never ends is refused after [`MAX_LINE`] bytes, however
/// long it is, and a large file streams through the fixed buffer.
#[test]
fn an_endless_line_is_refused_without_being_read_whole() {
    let begin = format!("{BEGIN}\n");
    let endless = Read::chain(begin.as_bytes(), std::io::repeat(b'A'));
    let mut reader = ArmorReader::new(endless).unwrap();
    let err = reader.read(&mut [0; 10]).unwrap_err();
    assert!(
        err.to_string().contains("line 2 is longer than 64"),
        "{err}"
    );
    let err = ArmorReader::new(std::io::repeat(b'-')).err().unwrap();
    assert!(err.to_string().contains("first line is not"), "{err}");
}

#[test]
fn armor_is_recognised_by_its_begin_line_only() {
    assert!(looks_armored(&armor(b"x")));
    assert!(looks_armored(b"-----BEGIN AGE ENCRYPTED FILE-----"));
    assert!(!looks_armored(b"PARAES"));
    assert!(!looks_armored(b"-----BEGIN"));
}
