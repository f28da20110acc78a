//! A benchmark program's result line (what the lab reads back from its ranks): parsed, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = cosched_bench::result::ResultLine::parse(text);
        let _ = cosched_bench::result::last_json_line(text);
    }
});
