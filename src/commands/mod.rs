//! The commands beside `enc` and `dec` (which are `run`'s): each turns its plan (or its checked
//! arguments) into work on the library crates and a report.

pub mod bench;
pub mod info;
pub mod keygen;
pub mod man;
pub mod rekey;
mod rekey_change;
pub mod upgrade;
pub mod verify;

/// Whether `file` (read from its start) is an ASCII-armored container (`enc --armor`): rekey
/// and upgrade change binary containers in place, and would otherwise say only "not a paraes
/// container" of one.
pub(crate) fn is_armored(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut start = [0u8; paraes_files::armor::ARMOR_PREFIX.len()];
    let mut got = 0;
    while got < start.len() {
        match file.read_at(&mut start[got..], got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    Ok(paraes_files::armor::looks_armored(&start[..got]))
}
