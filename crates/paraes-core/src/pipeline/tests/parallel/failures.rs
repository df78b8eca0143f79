//! Failures while the workers write a file at offsets, one writing for all
//! ([`crate::pipeline::combined`]): a panic in the writer's hands, a write that fails, a slow
//! failing first window; each ends the run with its error or panic, never a hang.

use super::*;

/// A run's source: `file` (holding `stream`'s bytes) read at offsets, or `stream` read in order.
fn source_of<'a>(from_file: bool, file: &'a File, stream: &'a mut &[u8]) -> Source<'a> {
    if from_file {
        Source::At {
            file,
            at: 0,
            len: stream.len() as u64,
        }
    } else {
        Source::Stream(stream)
    }
}

/// A panic inside the writing worker's closure (here the progress callback, which `run.wrote`
/// calls while the worker writes for all) while the other worker has left its windows in the
/// queue and waits for a buffer comes back as a panic; it hung (found by a hostile review: the
/// windows the panicking writer had taken on were never written nor their buffers returned).
fn panic_while_writing_for_all(from_file: bool) {
    let cipher = message_cipher();
    let g = GCM_CHUNK_LEN;
    let engine = leak(CpuEngine::new(Some(1)).unwrap());
    let plain = data(16 * g + 5);
    let result = within_20s(move || {
        let spec = StreamSpec::message(engine, Direction::Encrypt, cipher, g);
        let input_file = file_with(0, &plain);
        let mut stream_input = &plain[..];
        let source = source_of(from_file, &input_file, &mut stream_input);
        let output_file = file_with(0, &[]);
        let sink = Sink::At {
            file: &output_file,
            at: 0,
            take_turns: false,
        };
        let workers = Workers {
            threads: 2,
            window: g,
        };
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let progress = |_| {
            if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                // Long enough for the other worker to leave every other buffer in the queue.
                std::thread::sleep(std::time::Duration::from_millis(300));
                panic!("progress display bug");
            }
        };
        run_parallel(&spec, source, sink, workers, &progress)
    });
    assert!(result.is_err(), "a panic should come back as a panic");
}

#[test]
fn a_panic_while_writing_for_all_from_a_file_comes_back_without_hanging() {
    panic_while_writing_for_all(true);
}

#[test]
fn a_panic_while_writing_for_all_from_a_stream_comes_back_without_hanging() {
    panic_while_writing_for_all(false);
}

/// A write that fails (ENOSPC from /dev/full, EBADF on a file opened
/// read-only) ends the run with the write's error, on any number of workers, without hanging.
#[test]
fn a_failed_write_at_offsets_ends_the_run_with_its_error() {
    let cipher = message_cipher();
    let g = GCM_CHUNK_LEN;
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let plain: &'static [u8] = leak(data(24 * g + 5));
    for device in ["/dev/full", "read-only"] {
        for threads in 1..=4 {
            for from_file in [true, false] {
                let result = within_20s(move || {
                    let spec = StreamSpec::message(engine, Direction::Encrypt, cipher, g);
                    let input_file = file_with(0, plain);
                    let mut stream_input = plain;
                    let source = source_of(from_file, &input_file, &mut stream_input);
                    let dir = tempfile::tempdir().unwrap();
                    let output = if device == "/dev/full" {
                        File::options().write(true).open("/dev/full").unwrap()
                    } else {
                        let path = dir.path().join("out");
                        std::fs::write(&path, b"").unwrap();
                        File::open(&path).unwrap()
                    };
                    let sink = Sink::At {
                        file: &output,
                        at: 0,
                        take_turns: threads % 2 == 0,
                    };
                    let workers = Workers { threads, window: g };
                    run_parallel(&spec, source, sink, workers, &|_| {})
                });
                let ran = result.expect("no panic");
                assert!(
                    matches!(&ran, Err(PipelineError::Write(_))),
                    "{device} {threads} workers from_file {from_file}: {ran:?}"
                );
            }
        }
    }
}

/// The slow failing first window, to a file written at offsets.
#[test]
fn a_slow_failing_first_window_to_a_file_fails_without_hanging() {
    for how in ["tamper", "fail", "panic"] {
        for from_file in [true, false] {
            slow_first_case_to(how, from_file, true);
        }
    }
}
