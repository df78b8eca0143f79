//! End-to-end tests of the `paraes` binary, one test binary: each module drives the built
//! executable in scratch directories; `common` holds the shared helpers.

mod common;

mod abuse;
mod bench;
mod command_line;
mod container;
mod faults;
mod many_files;
mod message;
mod mpi;
mod passphrase;
mod rails;
mod range;
mod raw;
mod rekey_race;
mod roundtrip;
mod secrets;
mod ssh;
mod stanzas;
mod tamper;
mod testkit;
mod trust;
mod unverified_slot;
mod v1_compat;
mod v2_compat;
mod verify;
mod wycheproof;
