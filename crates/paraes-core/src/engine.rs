//! The Engine seam: one trait that every engine (CPU, GPU, Sunway simulator) implements; MPI is
//! a runner whose ranks each run one of them.
//!
//! An engine transforms a buffer in place for a [`Job`]: mode, direction, expanded key, initial
//! counter block and the buffer's byte position in the stream. Because CTR is seekable (block `i`
//! of a stream uses counter block `counter + i`) and ECB is position-free, any chunk of a stream can be
//! processed by any engine, anywhere, in any order, and the bytes are always the same.
//!
//! CTR's counter blocks lie over the stream in one of two ways ([`Counters`]): one 128-bit
//! counter for the whole stream (SP 800-38A; raw streams and v2 bodies), or GCM's counters per
//! 16 KiB chunk (C2SP chunked encryption; v3 bodies), where each byte's counter is still a
//! function of its position alone, so the same splitting and seeking rules hold.
//!
//! For GCM chunks an engine may also seal and open whole chunk records itself, out of place
//! ([`RecordsJob`], [`Engine::process_records`]: CTR and tags together, as the CPU engine's
//! stitched kernel does) where it says it runs them ([`Engine::runs_records`]); an engine that
//! does not (the default) is given the CTR job, and the caller computes the tags.
//!
//! The jobs and errors are data in a leaf module of their own ([`crate::job`]), re-exported
//! here, so nothing of a message format is part of the seam.

pub use crate::job::{
    gcm_chunk_nonce, Counters, Direction, EngineError, Job, Mode, RecordsError, RecordsJob,
    GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN,
};

/// An AES engine: transforms buffers in place for a [`Job`] (and may seal and open GCM chunk
/// records out of place for a [`RecordsJob`]). Implementations must give the same bytes as
/// [`crate::modes::apply`] (and so as every other engine) for every job and buffer.
pub trait Engine: Send + Sync {
    /// A short human-readable description, e.g. `cpu (vaes512, 2 threads)`.
    fn name(&self) -> String;

    /// How many parallel workers the engine uses (threads, ranks, simulated cores), the
    /// denominator of parallel efficiency.
    fn workers(&self) -> usize;

    /// Applies `job` to `buf` in place.
    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError>;

    /// Whether the engine runs the records job `job` itself ([`Engine::process_records`]), and
    /// so whether a caller with GCM chunk records should hand it that job rather than the CTR
    /// job ([`Counters::GcmChunks`]) and compute the tags itself. The default is `false`.
    ///
    /// The answer depends on the engine and on what `job` describes (its direction and key),
    /// never on any buffer, so a caller asks once, before it lays a buffer out, and gets the
    /// same answer for every job of the same stream whatever its `first_index`.
    fn runs_records(&self, job: &RecordsJob<'_>) -> bool {
        let _ = job;
        false
    }

    /// Seals ([`Direction::Encrypt`]) or opens ([`Direction::Decrypt`]) the whole GCM chunk
    /// records of `job`, out of place: sealing reads the chunks' plaintext from `input` and
    /// writes their records (data, then the 16-byte tag, each) to `output`; opening reads
    /// records from `input` and writes the chunks' plaintext to `output`, tags verified. The
    /// exact layout of both sides is [`RecordsJob`]'s; lengths that do not fit it (checked by
    /// [`RecordsJob::check`]) are refused with [`RecordsError::Engine`] before anything is
    /// written.
    ///
    /// When a tag does not verify the answer is [`RecordsError::Tampered`] with the lowest
    /// failing GCM chunk index of the call, and `output` holds nothing the caller may release
    /// (other records may have been decrypted into it: the caller releases none of it).
    ///
    /// It must give the same bytes as AES-GCM of each chunk ([`Engine::process`] with
    /// [`Counters::GcmChunks`] and the tags of NIST SP 800-38D). An engine that answers
    /// [`Engine::runs_records`] with `true` for a job must run it; one that answers `false` may
    /// run it anyway (the CPU engine does, more slowly) or refuse it. The default refuses it
    /// with [`EngineError::Unsupported`].
    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        let _ = (job, input, output);
        Err(RecordsError::Engine(EngineError::Unsupported(format!(
            "the {} engine does not seal or open GCM chunk records itself",
            self.name()
        ))))
    }

    /// Whether the engine runs the records job `job` in place itself
    /// ([`Engine::process_records_in_place`]) without a copy between two buffers, so a caller
    /// that can lay its bytes out as records (reading plaintext straight into the records' data
    /// slots, writing plaintext from between their tags) should hand it that job. Like
    /// [`Engine::runs_records`] it depends on the engine and the job, never on a buffer. The
    /// default is `false`.
    fn runs_records_in_place(&self, job: &RecordsJob<'_>) -> bool {
        let _ = job;
        false
    }

    /// The records job `job` in place on one buffer laid out as its records side
    /// ([`RecordsJob`]): sealing reads each chunk's plaintext from its record's data slot
    /// ([`RecordsJob::data_slots`]) and writes its ciphertext there and its tag after it;
    /// opening checks each record's tag and leaves the chunk's plaintext in its data slot (the
    /// tags' bytes are then unspecified). A length that is not records (checked by
    /// [`RecordsJob::check_in_place`]) is refused before anything changes. When a tag does not
    /// verify the answer is [`RecordsError::Tampered`] with the lowest failing index, and the
    /// buffer holds nothing the caller may release.
    ///
    /// The default runs [`Engine::process_records`] with a copy of the buffer's other side, so
    /// every engine that runs records jobs runs this too, with the same bytes.
    fn process_records_in_place(
        &self,
        job: &RecordsJob<'_>,
        records: &mut [u8],
    ) -> Result<(), RecordsError> {
        job.check_in_place(records.len())?;
        match job.direction {
            Direction::Encrypt => {
                let plaintext = RecordsJob::gather_data(records);
                self.process_records(job, &plaintext, records)
            }
            Direction::Decrypt => {
                let plain_len = RecordsJob::plaintext_len(records.len()).expect("checked");
                let mut plaintext = vec![0u8; plain_len];
                self.process_records(job, records, &mut plaintext)?;
                RecordsJob::scatter_data(&plaintext, records);
                Ok(())
            }
        }
    }

    /// For engines that model another machine (the Sunway simulator): the modelled machine's
    /// time for every buffer processed so far. `None` (the default) for engines whose time is
    /// the host's own.
    fn modelled(&self) -> Option<Modelled> {
        None
    }

    /// For engines that share each call's work between two others (the hybrid engine): the
    /// bytes each has run so far, and why the offloaded one stopped, if it did. `None` (the
    /// default) for engines that run all their work themselves.
    fn split(&self) -> Option<Split> {
        None
    }
}

/// How a hybrid engine ([`crate::hybrid::HybridEngine`]) has shared its work so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Bytes run by the CPU engine (the GPU's share of a call it failed on included).
    pub cpu_bytes: u64,
    /// Bytes run by the GPU engine.
    pub gpu_bytes: u64,
    /// Why the GPU engine failed, once it has: every call since ran on the CPU alone.
    pub gpu_failure: Option<String>,
}

/// The work an engine that models another machine has done so far, in that machine's time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Modelled {
    /// Bytes processed.
    pub bytes: u64,
    /// Seconds the modelled machine took for them.
    pub seconds: f64,
}

impl Modelled {
    /// The modelled throughput in Gbps (1e9 bits per second); 0 before any work.
    pub fn gbps(&self) -> f64 {
        self.throughput().gbps()
    }

    /// The modelled bytes over the modelled seconds.
    pub fn throughput(&self) -> crate::Throughput {
        crate::Throughput::new(self.bytes, self.seconds)
    }

    /// The work done between `earlier` and `self`.
    pub fn since(&self, earlier: &Modelled) -> Modelled {
        Modelled {
            bytes: self.bytes - earlier.bytes,
            seconds: self.seconds - earlier.seconds,
        }
    }
}
