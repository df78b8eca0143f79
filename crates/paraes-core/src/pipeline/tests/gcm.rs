//! GCM chunk streams through the pipeline: Cobblestone bodies, by the engine's CTR job and
//! tags or by its records job, whole and in segments, and what a tampered record releases.

use std::sync::Mutex;
use std::thread::ThreadId;

use super::{data, run_in_segments, run_spec, ChunkReader};
use crate::cobblestone::ChunkCipher;
use crate::cpu::CpuEngine;
use crate::engine::{
    Direction, Engine, EngineError, Job, RecordsError, RecordsJob, GCM_CHUNK_LEN, GCM_RECORD_LEN,
};
use crate::pipeline::{open, run, run_segment, PipelineError, Segment, Stages, StreamSpec};

/// GCM chunk streams through the pipeline are Cobblestone message bodies byte for byte
/// (whatever the batch, stages and engine split), decrypt back, and refuse truncation at
/// and between chunks, an extra chunk, a swap and a changed byte, releasing nothing
/// unauthenticated.
#[test]
fn gcm_chunk_streams_are_cobblestone_bodies() {
    use crate::cobblestone::{self, MessageKeys, Variant, PREFIX_LEN};
    let engine = CpuEngine::new(Some(2)).unwrap().with_split(0, 4096);
    let input_key = [0x11u8; 32];
    let salt = [0x22u8; cobblestone::SALT_LEN];
    let keys = MessageKeys::derive(Variant::Cobblestone256, &input_key, &salt, b"c").unwrap();
    let cipher = keys.chunks();
    let g = GCM_CHUNK_LEN;
    for batch in [g, 4 * g] {
        for len in [0, 1, g - 1, g, g + 1, 4 * g, 4 * g + 5, 9 * g + 77] {
            let plain = data(len);
            let expected =
                cobblestone::seal(Variant::Cobblestone256, &input_key, &salt, b"c", &plain)
                    .unwrap();
            let body = &expected[PREFIX_LEN..];
            let spec = |direction| StreamSpec::message(&engine, direction, &cipher, batch);
            let enc = spec(Direction::Encrypt);
            let dec = spec(Direction::Decrypt);
            for stages in [Stages::Threaded, Stages::InTurn] {
                let mut out = Vec::new();
                run_segment(
                    &enc,
                    Segment::WHOLE,
                    stages,
                    &mut &plain[..],
                    &mut out,
                    &|_| {},
                )
                .unwrap();
                assert!(out == body, "batch {batch} len {len} {stages:?}");
                let mut back = Vec::new();
                run_segment(
                    &dec,
                    Segment::WHOLE,
                    stages,
                    &mut &body[..],
                    &mut back,
                    &|_| {},
                )
                .unwrap();
                assert!(back == plain, "batch {batch} len {len} {stages:?} decrypt");
            }
            // Cut at every GCM chunk boundary and one byte into each record: refused, and
            // only whole authenticated pipeline chunks came out before the refusal.
            let records = body.len().div_ceil(GCM_RECORD_LEN);
            for k in 0..records {
                for cut in [k * GCM_RECORD_LEN, k * GCM_RECORD_LEN + 1] {
                    let mut out = Vec::new();
                    let refused = run(&dec, &mut &body[..cut], &mut out, &|_| {});
                    assert!(refused.is_err(), "batch {batch} len {len} cut {cut}");
                    assert!(out.len() % batch == 0 && plain.starts_with(&out));
                }
            }
            let mut extended = body.to_vec();
            extended.extend_from_slice(&cipher.tag(records as u64, &[]));
            assert!(run_spec(&dec, &extended).is_err(), "an extra empty chunk");
            let mut flipped = body.to_vec();
            flipped[body.len() / 2] ^= 4;
            assert!(run_spec(&dec, &flipped).is_err());
            if records > 2 {
                let mut swapped = body.to_vec();
                swapped[..GCM_RECORD_LEN]
                    .copy_from_slice(&body[GCM_RECORD_LEN..2 * GCM_RECORD_LEN]);
                swapped[GCM_RECORD_LEN..2 * GCM_RECORD_LEN]
                    .copy_from_slice(&body[..GCM_RECORD_LEN]);
                assert!(matches!(
                    run_spec(&dec, &swapped),
                    Err(PipelineError::Tampered(0))
                ));
            }
        }
    }
    // A batch that is not whole GCM chunks, or ECB, is refused before anything runs.
    let bad = StreamSpec::message(&engine, Direction::Encrypt, &cipher, g + 16);
    assert!(run_spec(&bad, &data(10)).is_err());
}

/// A CPU engine that computes GCM chunks as a CTR job and tags (not the stitched kernel):
/// the fastest implementation other than VAES-512, which answers `false` to
/// [`Engine::runs_records`].
fn ctr_and_tags_engine(cipher: &ChunkCipher) -> CpuEngine {
    let imp = crate::AesImpl::available()
        .into_iter()
        .rfind(|&imp| imp != crate::AesImpl::Vaes512)
        .expect("the portable path");
    let engine = CpuEngine::with_aes_impl(imp, Some(1)).unwrap();
    assert!(!engine.runs_records(&cipher.records_job(Direction::Encrypt, 0)));
    engine
}

/// A CPU engine that says it runs every records job (the CPU engine runs them on any
/// implementation, by CTR and GHASH without the stitched kernel), so the pipeline's records
/// path runs on every machine; it notes the threads its records jobs run on.
struct RecordsEverywhere {
    cpu: CpuEngine,
    threads: Mutex<Vec<ThreadId>>,
}

impl RecordsEverywhere {
    fn new(cpu: CpuEngine) -> Self {
        RecordsEverywhere {
            cpu,
            threads: Mutex::new(Vec::new()),
        }
    }
}

impl Engine for RecordsEverywhere {
    fn name(&self) -> String {
        format!("{} running records jobs", self.cpu.name())
    }

    fn workers(&self) -> usize {
        self.cpu.workers()
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        self.cpu.process(job, buf)
    }

    fn runs_records(&self, _: &RecordsJob<'_>) -> bool {
        true
    }

    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        self.cpu.process_records(job, input, output)
    }
}

/// Engines that seal and open whole records: CPU engines on the detected implementation (the
/// stitched kernel where the CPU has it, else they run CTR and tags), on the calling thread
/// and over a pool with every record a piece of its own, and the same engines made to run
/// records jobs wherever they are.
fn records_engines(cipher: &ChunkCipher) -> Vec<Box<dyn Engine>> {
    let cpus = || {
        [
            CpuEngine::new(Some(1)).unwrap(),
            CpuEngine::new(Some(3)).unwrap().with_split(0, 4096),
        ]
    };
    let job = cipher.records_job(Direction::Decrypt, 0);
    let mut engines: Vec<Box<dyn Engine>> = Vec::new();
    for engine in cpus() {
        let threads = engine.workers() > 1;
        assert_eq!(engine.runs_records(&job), cipher.runs_stitched() || threads);
        engines.push(Box::new(engine));
    }
    for engine in cpus() {
        engines.push(Box::new(RecordsEverywhere::new(engine)));
    }
    if !cipher.runs_stitched() {
        eprintln!("no stitched GCM kernel on this CPU: records jobs run by CTR and GHASH here");
    }
    engines
}

/// Where the engine runs the records job, the threaded pipeline has one stage between the
/// reader and the writer, on the calling thread: no CTR stage and no tag stage.
#[test]
fn the_records_job_is_the_only_stage() {
    use crate::cobblestone::{MessageKeys, Variant, SALT_LEN};
    let keys =
        MessageKeys::derive(Variant::Cobblestone128, &[3; 16], &[4; SALT_LEN], b"s").unwrap();
    let cipher = keys.chunks();
    let engine = RecordsEverywhere::new(CpuEngine::new(Some(2)).unwrap());
    let plain = data(9 * GCM_CHUNK_LEN + 3);
    let enc = StreamSpec::message(&engine, Direction::Encrypt, &cipher, 2 * GCM_CHUNK_LEN);
    let dec = StreamSpec::message(&engine, Direction::Decrypt, &cipher, 2 * GCM_CHUNK_LEN);
    let body = run_spec(&enc, &plain).unwrap();
    assert!(run_spec(&dec, &body).unwrap() == plain);
    let threads = engine.threads.lock().unwrap();
    assert_eq!(threads.len(), 10, "one records job per pipeline chunk");
    let caller = std::thread::current().id();
    assert!(threads.iter().all(|&t| t == caller), "{threads:?}");
}

/// GCM chunk streams sealed and opened by an engine that does whole records (the stitched
/// kernel, or the records job of any CPU engine) are byte for byte those of the CTR job and tags path, and Cobblestone bodies: at
/// GCM chunk and batch edges, both key sizes, both directions, threaded and in turn, whole
/// and in segments.
#[test]
fn engine_sealed_records_are_the_ctr_and_tags_stream() {
    use crate::cobblestone::{self, MessageKeys, Variant, PREFIX_LEN};
    let g = GCM_CHUNK_LEN;
    let salt = [0x5au8; cobblestone::SALT_LEN];
    for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
        let input_key = vec![0x21u8; variant.key_size().bytes()];
        let keys = MessageKeys::derive(variant, &input_key, &salt, b"p").unwrap();
        let cipher = keys.chunks();
        let reference = ctr_and_tags_engine(&cipher);
        let engines = records_engines(&cipher);
        for batch in [g, 4 * g] {
            let lens = [
                0,
                1,
                g - 1,
                g,
                g + 1,
                batch - 1,
                batch,
                batch + 1,
                3 * batch,
                3 * batch + g + 5,
            ];
            for len in lens {
                let plain = data(len);
                let message = cobblestone::seal(variant, &input_key, &salt, b"p", &plain).unwrap();
                let body = &message[PREFIX_LEN..];
                let ref_enc = StreamSpec::message(&reference, Direction::Encrypt, &cipher, batch);
                let ref_dec = StreamSpec::message(&reference, Direction::Decrypt, &cipher, batch);
                assert!(run_spec(&ref_enc, &plain).unwrap() == body);
                assert!(run_spec(&ref_dec, body).unwrap() == plain);
                for engine in &engines {
                    for (direction, input, output) in [
                        (Direction::Encrypt, &plain[..], body),
                        (Direction::Decrypt, body, &plain[..]),
                    ] {
                        let spec = StreamSpec::message(&**engine, direction, &cipher, batch);
                        let chunks = ChunkReader::new(&spec, &mut &input[..]).count_chunks();
                        for stages in [Stages::Threaded, Stages::InTurn] {
                            let what = format!(
                                "{variant:?} {} batch {batch} len {len} {direction:?} {stages:?}",
                                engine.name()
                            );
                            for cuts in [
                                vec![0],
                                vec![0, chunks / 2],
                                vec![0, 1.min(chunks - 1), chunks - 1],
                            ] {
                                let out =
                                    run_in_segments(&spec, stages, input, &cuts).expect(&what);
                                assert!(out == output, "{what} {cuts:?}");
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A changed record in the middle of a batch (its data or its tag, alone or with a later
/// one in the same batch) is refused with its index, and no byte of its batch is written:
/// the writer gets the batches before it, whole, and nothing else.
#[test]
fn a_tampered_record_in_a_batch_releases_nothing_of_it() {
    use crate::cobblestone::{MessageKeys, Variant, SALT_LEN};
    let g = GCM_CHUNK_LEN;
    let batch = 4 * g;
    let keys =
        MessageKeys::derive(Variant::Cobblestone256, &[9; 32], &[1; SALT_LEN], b"t").unwrap();
    let cipher = keys.chunks();
    let plain = data(3 * batch + 100);
    let reference = ctr_and_tags_engine(&cipher);
    let body = run_spec(
        &StreamSpec::message(&reference, Direction::Encrypt, &cipher, batch),
        &plain,
    )
    .unwrap();
    let mut engines = records_engines(&cipher);
    engines.push(Box::new(reference));
    // Records 5 and 6 are the second batch's second and third; 12 is the last (short) one.
    let cases: [(&[usize], usize, u64); 5] = [
        (&[6], 100, 6),
        (&[6], g + 2, 6),
        (&[5, 6], 7, 5),
        (&[6, 7], g, 6),
        (&[12], 50, 12),
    ];
    for engine in &engines {
        let dec = StreamSpec::message(&**engine, Direction::Decrypt, &cipher, batch);
        for &(records, at, expected) in &cases {
            let mut tampered = body.clone();
            for &k in records {
                tampered[k * GCM_RECORD_LEN + at] ^= 1;
            }
            for stages in [Stages::Threaded, Stages::InTurn] {
                let what = format!("{} {records:?} +{at} {stages:?}", engine.name());
                let mut out = Vec::new();
                let err = run_segment(
                    &dec,
                    Segment::WHOLE,
                    stages,
                    &mut &tampered[..],
                    &mut out,
                    &|_| {},
                );
                assert!(
                    matches!(err, Err(PipelineError::Tampered(i)) if i == expected),
                    "{what}: {err:?}"
                );
                let released = expected as usize / 4 * batch;
                assert!(out == plain[..released], "{what}: {} bytes out", out.len());
            }
            // One chunk at a time, as an MPI rank opens them: the same refusal.
            let mut input = &tampered[..];
            let mut reader = ChunkReader::new(&dec, &mut input);
            let mut refused = None;
            while let Some(mut chunk) = reader.next_chunk(Vec::new()).unwrap() {
                if let Err(e) = open(&dec, &mut chunk) {
                    refused = Some((chunk.index, e));
                    break;
                }
            }
            let (index, err) = refused.expect("refused");
            assert_eq!(index, expected / 4);
            assert!(matches!(err, PipelineError::Tampered(i) if i == expected));
        }
    }
}
