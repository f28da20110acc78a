//! A lab experiment file (TOML): parsed and validated, never a panic or an overflow.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = cosched_lab::experiment::LabExperiment::parse(text, std::path::Path::new("fuzz.toml"));
    }
});
