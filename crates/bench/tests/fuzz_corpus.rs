//! The result-line parser's fuzz corpus (`fuzz/corpus/result_line/`: what the lab reads back from its ranks)
//! replayed on stable: every input is a result line or an error, never a panic.

#[test]
fn every_fuzz_input_is_a_result_line_or_an_error() {
    let mut parsed = 0;
    for (name, bytes) in cosched_testkit::fuzz_corpus("result_line") {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let caught = std::panic::catch_unwind(|| {
            let _ = cosched_bench::result::last_json_line(text);
            cosched_bench::result::ResultLine::parse(text).is_ok()
        });
        match caught {
            Ok(ok) => parsed += usize::from(ok),
            Err(_) => panic!("the result-line parser panicked on fuzz input {name}"),
        }
    }
    // The seeds are real result lines.
    assert!(
        parsed > 0,
        "no input of the corpus parsed, not even the seeds"
    );
}
