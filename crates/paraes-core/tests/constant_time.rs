//! A structural check that the CPU paths of paraes-core cannot look secrets up in tables: the
//! classic source of AES timing leaks (cache-timing on T-tables and S-box tables). The x86 paths
//! use the AES instructions, the portable path a bitsliced Boyar-Peralta circuit; this test
//! fails if anyone adds a lookup table (an array type of more than 32 entries) to the AES code
//! (implementations, key expansion, modes), or indexes memory inside the S-box circuits.
//! docs/RELIABILITY.md says how constant time is ensured beyond this check.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The source without its unit tests (which hold reference S-boxes on purpose) and comments.
fn production_code(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Array types of more than 32 elements (`[u8; 256]`, `[[u32; 256]; 4]`, `[T; 0x100]`): a
/// lookup table. Returns the offending snippets.
fn table_types(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices(';') {
        let rest = &code[at + 1..];
        let Some(end) = rest.find(']') else { continue };
        let len = rest[..end].trim().replace('_', "");
        let value = match len.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => len.parse::<u64>().ok(),
        };
        // Up to 32 elements are blocks, keys, round keys and bit planes; more is a table. Buffers of
        // bytes sized by a named constant (BATCH) are not matched: they hold data, not tables.
        if value.is_some_and(|n| n > 32) {
            let start = code[..at].rfind('[').unwrap_or(at);
            found.push(code[start..at + 2 + end].to_string());
        }
    }
    found
}

/// Indexing expressions (`name[`, `x)[`, `y][`) in the body of function `name`.
fn indexing_in(code: &str, function: &str) -> Vec<String> {
    let header = format!("fn {function}(");
    let start = code
        .find(&header)
        .unwrap_or_else(|| panic!("function {function} not found"));
    let body_start = start + code[start..].find('{').expect("a body");
    let mut depth = 0;
    let mut end = body_start;
    for (i, c) in code[body_start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = body_start + i;
                    break;
                }
            }
            _ => {}
        }
    }
    let body = &code[body_start..end];
    let bytes = body.as_bytes();
    let mut found = Vec::new();
    for (i, &b) in bytes.iter().enumerate().skip(1) {
        let before = bytes[i - 1];
        if b == b'['
            && (before.is_ascii_alphanumeric()
                || before == b'_'
                || before == b')'
                || before == b']')
        {
            let from = i.saturating_sub(12);
            found.push(body[from..(i + 8).min(body.len())].to_string());
        }
    }
    found
}

/// The code that touches AES keys and states: the implementations, key expansion, the modes.
fn aes_sources() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = sources(&src.join("aes"));
    files.extend(["key.rs", "modes.rs", "cpu.rs"].map(|name| src.join(name)));
    files
}

#[test]
fn the_aes_code_has_no_lookup_tables() {
    let files = aes_sources();
    assert!(files.len() >= 6, "expected the AES sources: {files:?}");
    for file in files {
        let code = production_code(&fs::read_to_string(&file).expect("readable source"));
        let tables = table_types(&code);
        assert!(
            tables.is_empty(),
            "{}: array types longer than 32 elements (lookup tables?) in production code: {tables:?}",
            file.display()
        );
    }
}

#[test]
fn the_sbox_circuits_do_not_index_memory() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/aes/sbox.rs");
    let code = production_code(&fs::read_to_string(path).expect("sbox.rs"));
    // The forward S-box is straight-line Boolean logic on bit planes; the inverse is the same
    // circuit between two fixed linear maps (whose indices are loop counters, never data).
    for function in ["sub_bytes", "sub_word"] {
        let indexing = indexing_in(&code, function);
        assert!(
            indexing.is_empty(),
            "{function} indexes memory (a table lookup?): {indexing:?}"
        );
    }
}

/// The checks can fail: they flag a table and a table lookup when shown one.
#[test]
fn the_checks_recognise_tables_and_lookups() {
    let with_table = "static SBOX: [u8; 256] = [0x63, 0x7c];\nconst T0: [[u32; 0x100]; 4] = x;";
    assert_eq!(
        table_types(with_table).len(),
        2,
        "{:?}",
        table_types(with_table)
    );
    assert!(table_types("let block = [0u8; 16]; let planes: [u64; 8] = [0; 8];").is_empty());
    let lookup =
        "fn sub_bytes(state: &mut State) { for b in state.iter_mut() { *b = SBOX[*b as usize]; } }";
    assert_eq!(indexing_in(lookup, "sub_bytes").len(), 1);
    let circuit =
        "fn sub_bytes(state: &mut State) { let [a, b] = *state; *state = [a ^ b, a & b]; }";
    assert!(indexing_in(circuit, "sub_bytes").is_empty());
}
