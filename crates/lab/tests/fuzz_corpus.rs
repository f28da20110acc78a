//! The lab-experiment parser's fuzz corpus (`fuzz/corpus/lab_experiment/`) replayed on stable: every input
//! parses to an experiment or an error, never a panic.

#[test]
fn every_fuzz_input_parses_or_is_an_error() {
    for (name, bytes) in cosched_testkit::fuzz_corpus("lab_experiment") {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let caught = std::panic::catch_unwind(|| {
            let _ = cosched_lab::experiment::LabExperiment::parse(
                text,
                std::path::Path::new("fuzz.toml"),
            );
        });
        assert!(caught.is_ok(), "the parser panicked on fuzz input {name}");
    }
}
