//! The simulated-experiment parser's fuzz corpus (`fuzz/corpus/sim_experiment/`, kept by `cargo fuzz run
//! sim_experiment`) replayed on stable: every input parses to an experiment or an error, never a panic.

#[test]
fn every_fuzz_input_parses_or_is_an_error() {
    let path = std::path::Path::new("fuzz.toml");
    let quick = cosched_sim::experiment::Overrides {
        quick: true,
        ..Default::default()
    };
    for (name, bytes) in cosched_testkit::fuzz_corpus("sim_experiment") {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let caught = std::panic::catch_unwind(|| {
            let _ = cosched_sim::experiment::parse(path, text, &Default::default());
            let _ = cosched_sim::experiment::parse(path, text, &quick);
        });
        assert!(caught.is_ok(), "the parser panicked on fuzz input {name}");
    }
}

/// The SWF parser's corpus (`fuzz/corpus/swf_trace/`, `cargo fuzz run swf_trace`): every input parses to jobs or
/// an error naming its line and field, and the jobs become a stream (or an error) on the fuzz target's three
/// machines, every job with at least one iteration and a width the machine has — never a panic or a wrapped value.
#[test]
fn every_swf_fuzz_input_parses_and_streams_or_is_an_error() {
    use cosched_sim::smp::{apps::App, jobs};
    for (name, bytes) in cosched_testkit::fuzz_corpus("swf_trace") {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let caught = std::panic::catch_unwind(|| {
            let Ok(parsed) = jobs::parse_swf(text, "fuzz.swf") else {
                return;
            };
            for (cpus, scale) in [(64, 1.0), (64, 0.01), (u32::MAX, 1.0)] {
                if let Ok(stream) = jobs::swf_stream(&parsed, &[App::Cg, App::Ep], cpus, scale) {
                    for job in &stream {
                        assert!(job.iterations >= 1, "{job:?}");
                        assert!(job.procs >= 1 && job.procs <= cpus, "{job:?}");
                    }
                }
            }
        });
        assert!(caught.is_ok(), "SWF parsing panicked on fuzz input {name}");
    }
}
