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
