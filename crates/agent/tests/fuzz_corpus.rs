//! The control protocol's fuzz corpus (`fuzz/corpus/control_request/`: lines any local user may send the agent)
//! replayed on stable: every input is a request or an error, never a panic; the seeds parse.

use cosched_agent::proto::Request;

#[test]
fn every_fuzz_input_is_a_request_or_an_error() {
    for (name, bytes) in cosched_testkit::fuzz_corpus("control_request") {
        let parsed = std::panic::catch_unwind(|| cosched_agent::control::parse_request(&bytes));
        let Ok(parsed) = parsed else {
            panic!("the request parser panicked on fuzz input {name}");
        };
        match name.as_str() {
            "ping" => assert_eq!(parsed, Ok(Request::Ping)),
            "stats" => assert_eq!(parsed, Ok(Request::Stats)),
            _ => {}
        }
    }
}
