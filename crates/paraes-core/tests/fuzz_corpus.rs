//! Replays every file of the fuzzing corpus (`fuzz/corpus/*/`) through the decrypt paths of
//! the fuzz targets (`paraes_core::fuzzing::all_paths`), so CI checks the corpus on every run
//! without a fuzzer: each input may be refused, but nothing may panic.

use std::fs;
use std::path::Path;

#[test]
fn every_corpus_file_is_handled_without_panic() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut replayed = 0;
    let mut decrypted = 0;
    let mut targets: Vec<_> = fs::read_dir(&corpus)
        .expect("fuzz/corpus exists")
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| path.is_dir())
        .collect();
    targets.sort();
    for target in targets {
        let mut files: Vec<_> = fs::read_dir(&target)
            .expect("corpus folder")
            .map(|entry| entry.expect("corpus file").path())
            .collect();
        files.sort();
        for file in files {
            let data = fs::read(&file).expect("corpus file readable");
            paraes_core::fuzzing::all_paths(&data);
            if paraes_core::fuzzing::decrypt_container(&data).is_ok() {
                decrypted += 1;
            }
            replayed += 1;
        }
    }
    assert!(replayed >= 50, "only {replayed} corpus files found");
    // The seeds include valid containers: the replay must reach the body, not stop at headers.
    assert!(decrypted >= 20, "only {decrypted} corpus files decrypted");
    println!("{replayed} corpus files replayed, {decrypted} decrypted");
}
