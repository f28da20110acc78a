//! A request line on the agent's control socket, which any local user may send: parsed, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cosched_agent::control::parse_request(data);
});
