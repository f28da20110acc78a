//! A Standard Workload Format trace (seed 001's job streams) as anyone may write it: parsed by `parse_swf`, then
//! turned into a job stream by `swf_stream` on a 64-CPU machine at full and at quick (1/100) scale, and on a
//! machine as wide as `u32` allows — an error is fine, a panic, an overflow or a wrapped value is not.
#![no_main]
use cosched_sim::smp::{apps::App, jobs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(parsed) = jobs::parse_swf(text, "fuzz.swf") {
            for (cpus, scale) in [(64, 1.0), (64, 0.01), (u32::MAX, 1.0)] {
                if let Ok(stream) = jobs::swf_stream(&parsed, &[App::Cg, App::Ep], cpus, scale) {
                    for job in &stream {
                        assert!(job.iterations >= 1, "{job:?}");
                        assert!(job.procs >= 1 && job.procs <= cpus, "{job:?}");
                    }
                }
            }
        }
    }
});
