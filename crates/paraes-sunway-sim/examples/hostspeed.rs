//! Measures the host speed of the simulator's data path per variant (one thread: set
//! RAYON_NUM_THREADS=1), in MB of simulated input per second.
use paraes_core::Key;
use paraes_core::{Engine, Job};
use paraes_sunway_sim::{Buffering, SimConfig, SunwaySimEngine, Variant};
fn main() {
    let key = Key::new(&[7u8; 16]).expect("a 16-byte key").expand();
    let mut buf = vec![1u8; 64 << 20];
    for variant in Variant::ALL {
        let engine =
            SunwaySimEngine::new(SimConfig::new(variant, Buffering::Double, 4)).expect("valid");
        let job = Job::ctr(&key, [0; 16], 0);
        let mut best = f64::MAX;
        for _ in 0..3 {
            let start = std::time::Instant::now();
            engine.process(&job, &mut buf).expect("runs");
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!(
            "{variant}: {:.0} MB/s on {} threads (best of 3)",
            buf.len() as f64 / best / 1e6,
            rayon::current_num_threads()
        );
    }
}
