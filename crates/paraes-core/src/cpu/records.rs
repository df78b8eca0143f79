//! The CPU engine's records jobs ([`RecordsJob`]): whole GCM chunk records sealed or opened,
//! in place or out of place, each record by the stitched kernel (`crate::aes::gcm_x86`, CTR and
//! GHASH in one pass) where the engine's implementation has it, otherwise by CTR and then GHASH.
//!
//! Out of place, the stitched kernel reads each chunk's input and writes its output (into its
//! record when sealing, to its plaintext place when opening) in its one pass. The unstitched
//! path copies each chunk's data to where it goes just before its CTR and GHASH run there, so
//! the three passes over it stay in the core's cache. (Until 2026-11-29 the kernel worked only
//! in place and a group's data was copied first: out of place then ran at half the in-place
//! rate, Zen 4, 64 MiB, 4.5 against 8.7 GB/s on one thread; docs/RESULTS.md.)

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::aes::{AesImpl, ChunkBytes, StitchedGcm};
use crate::chunk_tag::constant_time_eq;
use crate::ghash::Ghash;
use crate::job::{
    Direction, Job, RecordsError, RecordsJob, GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN,
};
use crate::modes;

use super::CpuEngine;

/// A records job made ready for one implementation: GHASH keyed with the job's H, and the
/// stitched kernel where the implementation has it.
struct Records<'j, 'a> {
    job: &'j RecordsJob<'a>,
    imp: AesImpl,
    ghash: Ghash,
    /// The kernel, where it runs (GHASH then has the powers of H it hashes with).
    stitched: Option<StitchedGcm>,
}

/// Where record `k` lies on a side of `len` bytes whose records are `unit` bytes apart (the last
/// one ends at `len`).
fn piece(k: usize, unit: usize, len: usize) -> Range<usize> {
    (k * unit).min(len)..((k + 1) * unit).min(len)
}

/// Bytes from one record to the next on the input and the output side of `direction`.
fn units(direction: Direction) -> (usize, usize) {
    match direction {
        Direction::Encrypt => (GCM_CHUNK_LEN, GCM_RECORD_LEN),
        Direction::Decrypt => (GCM_RECORD_LEN, GCM_CHUNK_LEN),
    }
}

/// The bytes a records job works on: its input and output apart
/// ([`crate::Engine::process_records`]), or one buffer of records worked in place
/// ([`crate::Engine::process_records_in_place`]).
pub(super) enum Sides<'b> {
    /// The input side and the output side, laid out for the job's direction.
    Apart {
        input: &'b [u8],
        output: &'b mut [u8],
    },
    /// The records side alone: plaintext in its data slots, tags after them.
    InPlace(&'b mut [u8]),
}

impl<'b> Sides<'b> {
    /// The longer side's length (the records side's).
    fn records_len(&self) -> usize {
        match self {
            Sides::Apart { input, output } => input.len().max(output.len()),
            Sides::InPlace(records) => records.len(),
        }
    }

    /// The first `count` records of `direction`'s sides, and the rest.
    fn split(self, count: usize, direction: Direction) -> (Sides<'b>, Sides<'b>) {
        match self {
            Sides::Apart { input, output } => {
                let (in_unit, out_unit) = units(direction);
                let (here_in, next_in) = input.split_at((count * in_unit).min(input.len()));
                let cut = (count * out_unit).min(output.len());
                let (here_out, next_out) = output.split_at_mut(cut);
                (
                    Sides::Apart {
                        input: here_in,
                        output: here_out,
                    },
                    Sides::Apart {
                        input: next_in,
                        output: next_out,
                    },
                )
            }
            Sides::InPlace(records) => {
                let cut = (count * GCM_RECORD_LEN).min(records.len());
                let (here, next) = records.split_at_mut(cut);
                (Sides::InPlace(here), Sides::InPlace(next))
            }
        }
    }
}

impl<'j, 'a> Records<'j, 'a> {
    fn new(job: &'j RecordsJob<'a>, imp: AesImpl) -> Self {
        let ghash = Ghash::new(job.hash_key);
        let stitched = StitchedGcm::detect(imp).filter(|_| ghash.powers().is_some());
        Records {
            job,
            imp,
            ghash,
            stitched,
        }
    }

    /// Seals or opens `records` records on this thread, from record `first` of the job:
    /// `sides` hold exactly them; opening stops at the first record whose tag does not verify.
    fn run(&self, first: usize, records: usize, sides: Sides<'_>) -> Result<(), RecordsError> {
        match sides {
            Sides::Apart { input, output } => self.run_apart(first, records, input, output),
            Sides::InPlace(buf) => {
                for (k, record) in buf.chunks_mut(GCM_RECORD_LEN).enumerate() {
                    let (data, tag) = record.split_at_mut(record.len() - GCM_TAG_LEN);
                    let tag: &mut [u8; GCM_TAG_LEN] = tag.try_into().expect("a tag's length");
                    self.crypt((first + k) as u64, ChunkBytes::InPlace(data), tag)?;
                }
                Ok(())
            }
        }
    }

    /// [`Records::run`] out of place: each record read from `input` and written to its place
    /// in `output`.
    fn run_apart(
        &self,
        first: usize,
        records: usize,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        let (in_unit, out_unit) = units(self.job.direction);
        let (in_len, out_len) = (input.len(), output.len());
        for k in 0..records {
            let at = (first + k) as u64;
            let from = piece(k, in_unit, in_len);
            let to = piece(k, out_unit, out_len);
            match self.job.direction {
                Direction::Encrypt => {
                    // The data goes to the front of its record; the tag follows it.
                    let record = &mut output[to.start..to.start + from.len() + GCM_TAG_LEN];
                    let (data, tag) = record.split_at_mut(from.len());
                    let tag: &mut [u8; GCM_TAG_LEN] = tag.try_into().expect("a tag's length");
                    self.crypt(at, ChunkBytes::Apart(&input[from], data), tag)?;
                }
                Direction::Decrypt => {
                    // The record's data (all but its tag) goes to its plaintext place.
                    let (data, tag) = input[from.clone()].split_at(from.len() - GCM_TAG_LEN);
                    let mut tag: [u8; GCM_TAG_LEN] = tag.try_into().expect("a tag's length");
                    self.crypt(at, ChunkBytes::Apart(data, &mut output[to]), &mut tag)?;
                }
            }
        }
        Ok(())
    }

    /// Seals or opens (by the job's direction) record `k`: `data`'s input is the chunk's
    /// plaintext (sealing: its tag goes to `tag`) or its ciphertext (opening: checked against
    /// `tag`; a record that fails leaves zeros in the output).
    fn crypt(
        &self,
        k: u64,
        data: ChunkBytes<'_>,
        tag: &mut [u8; GCM_TAG_LEN],
    ) -> Result<(), RecordsError> {
        match self.job.direction {
            Direction::Encrypt => {
                *tag = self.seal(k, data);
                Ok(())
            }
            Direction::Decrypt if self.open(k, tag, data) => Ok(()),
            Direction::Decrypt => Err(RecordsError::Tampered(self.job.first_index + k)),
        }
    }

    /// Seals record `k`'s data (plaintext in, ciphertext out); its tag.
    fn seal(&self, k: u64, data: ChunkBytes<'_>) -> [u8; GCM_TAG_LEN] {
        match self.kernel() {
            Some((kernel, powers)) => kernel.seal(self.job.key, powers, &self.job.nonce(k), data),
            None => {
                let data = data.into_output();
                self.ctr(k, data);
                self.tag(k, data)
            }
        }
    }

    /// Opens record `k`: `data`'s input is its ciphertext, and its output comes out as its
    /// plaintext where its tag is `tag`; whether it was. A record that fails leaves zeros in
    /// the output.
    fn open(&self, k: u64, tag: &[u8; GCM_TAG_LEN], mut data: ChunkBytes<'_>) -> bool {
        let authentic = match self.kernel() {
            Some((kernel, powers)) => {
                let found = kernel.open(self.job.key, powers, &self.job.nonce(k), data.reborrow());
                constant_time_eq(&found, tag)
            }
            None => {
                let data = data.reborrow().into_output();
                let authentic = constant_time_eq(&self.tag(k, data), tag);
                if authentic {
                    self.ctr(k, data);
                }
                authentic
            }
        };
        if !authentic {
            data.output_mut().fill(0);
        }
        authentic
    }

    /// The stitched kernel with the powers of H it hashes with, where it runs.
    fn kernel(&self) -> Option<(StitchedGcm, &[[u8; 16]; crate::polyval::GROUP])> {
        Some((self.stitched?, self.ghash.powers()?))
    }

    /// The counter block of record `k`'s first data block: `nonce || be32(2)`.
    fn counter(&self, k: u64) -> [u8; 16] {
        modes::gcm_chunk_counter(&self.job.base_nonce, self.job.first_index + k)
    }

    /// CTR of record `k`'s data, from the counter block `nonce || be32(2)`.
    fn ctr(&self, k: u64, data: &mut [u8]) {
        let job = Job::ctr(self.job.key, self.counter(k), 0);
        modes::apply(self.imp, &job, data).expect("CTR takes any length");
    }

    /// The tag of record `k`'s ciphertext: GHASH XOR E(J0), J0 = `nonce || be32(1)`.
    fn tag(&self, k: u64, ciphertext: &[u8]) -> [u8; 16] {
        let mut tag = self.counter(k);
        tag[15] = 1;
        self.imp.encrypt_blocks(self.job.key, &mut tag);
        for (t, g) in tag.iter_mut().zip(self.ghash.gcm(ciphertext)) {
            *t ^= g;
        }
        tag
    }
}

impl CpuEngine {
    /// Whether this engine runs records jobs with the stitched kernel: where its
    /// implementation is the kernel's (VAES-512, with VPCLMULQDQ), so an engine forced to
    /// another implementation does not, and its CTR runs that implementation.
    pub(super) fn stitches_records(&self) -> bool {
        StitchedGcm::detect(self.aes_impl()).is_some()
    }

    /// [`crate::Engine::process_records`] and [`crate::Engine::process_records_in_place`]:
    /// whole records shared out among the threads in groups of at most a slice (at least one
    /// record each), or all on the calling thread for a short job.
    pub(super) fn records(
        &self,
        job: &RecordsJob<'_>,
        sides: Sides<'_>,
    ) -> Result<(), RecordsError> {
        let records = match &sides {
            Sides::Apart { input, output } => job.check(input.len(), output.len())?,
            Sides::InPlace(buf) => job.check_in_place(buf.len())?,
        };
        let kernel = Records::new(job, self.aes_impl());
        let records_len = sides.records_len();
        let Some(turn) = self.pool_for(records_len) else {
            return kernel.run(0, records, sides);
        };
        let per_group = (self.slice_len(records_len) / GCM_RECORD_LEN).max(1);
        let mut groups = Vec::with_capacity(records.div_ceil(per_group));
        let mut rest = sides;
        for first in (0..records).step_by(per_group) {
            let count = per_group.min(records - first);
            let (here, next) = rest.split(count, job.direction);
            groups.push((first, count, here));
            rest = next;
        }
        // Groups are taken in order, and none after a failure: every group before a failing
        // one has been taken by then and finishes, so the lowest failing index is found.
        let groups = Mutex::new(groups.into_iter());
        let failed = AtomicBool::new(false);
        let lowest = Mutex::new(None::<u64>);
        self.on_all_threads(&turn, || loop {
            if failed.load(Ordering::Relaxed) {
                break;
            }
            let next = groups.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((first, count, sides)) = next else {
                break;
            };
            if let Err(e) = kernel.run(first, count, sides) {
                let index = match e {
                    RecordsError::Tampered(index) => index,
                    // Lengths were checked above; a record fails in no other way.
                    RecordsError::Engine(_) => job.first_index + first as u64,
                };
                failed.store(true, Ordering::Relaxed);
                let mut lowest = lowest.lock().unwrap_or_else(|e| e.into_inner());
                *lowest = Some(lowest.map_or(index, |l| l.min(index)));
            }
        });
        match lowest.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(index) => Err(RecordsError::Tampered(index)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
