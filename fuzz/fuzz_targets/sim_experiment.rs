//! A simulated experiment file (TOML) as anyone may write it: parsed and resolved, never a panic, an overflow or
//! an allocation out of proportion to the text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let path = std::path::Path::new("fuzz.toml");
        let _ = cosched_sim::experiment::parse(path, text, &Default::default());
        let quick = cosched_sim::experiment::Overrides {
            quick: true,
            ..Default::default()
        };
        let _ = cosched_sim::experiment::parse(path, text, &quick);
    }
});
