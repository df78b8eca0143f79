//! End-to-end tests of the `paraes` binary, one test binary: each module drives the built
//! executable in scratch directories; `common` holds the shared helpers, `bounded` the runner
//! with a deadline that every MPI launch goes through.

mod bounded;
mod common;

mod abuse;
mod armor;
mod bench;
mod command_line;
mod command_line_keys;
mod command_line_signals;
mod container;
mod container_reference;
mod fault_shim;
mod faults;
mod manual;
mod many_files;
mod many_files_order;
mod message;
mod mpi;
mod mpi_batches;
mod mpi_failures;
mod mpi_jobs;
mod passphrase;
mod rails;
mod range;
mod raw;
mod rekey_race;
mod rekey_ways;
mod review_outputs;
mod review_process;
mod roundtrip;
mod secrets;
#[cfg(feature = "mpi")]
mod slurm;
mod spread;
mod ssh;
mod stanzas;
mod tamper;
mod testkit;
mod threads;
mod trust;
mod unverified_slot;
mod v1_compat;
mod v2_compat;
mod verify;
mod wycheproof;
