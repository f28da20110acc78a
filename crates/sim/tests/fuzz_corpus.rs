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
