//! Every experiment file shipped in `experiments/lab/` parses: cluster experiments as `LabExperiment`s, stream
//! experiments (a `[stream]` table) as `StreamExperiment`s.

use cosched_lab::stream::{is_stream_file, StreamExperiment};
use cosched_lab::LabExperiment;
use std::path::Path;

#[test]
fn every_shipped_experiment_file_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/lab");
    let (mut cluster, mut stream) = (0, 0);
    for entry in std::fs::read_dir(&dir).expect("experiments/lab exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            if is_stream_file(&text) {
                StreamExperiment::parse(&text, &path).unwrap_or_else(|e| panic!("{e:#}"));
                stream += 1;
            } else {
                LabExperiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
                cluster += 1;
            }
        }
    }
    assert!(
        cluster >= 2 && stream >= 2,
        "expected the shipped lab experiments in {} ({cluster} cluster, {stream} stream files)",
        dir.display()
    );
}
