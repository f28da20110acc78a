//! The submit socket's fuzz corpus (`fuzz/corpus/submit_request/`: lines any local user may send the manager)
//! replayed on stable: every input is a request or an error and every submission validates or is refused, never
//! a panic; the seeds parse as they should.

use cosched_localsock::Identity;
use cosched_manager::socket::{parse_request, Request};

#[test]
fn every_fuzz_input_is_a_request_or_an_error_and_never_a_panic() {
    let who = Identity {
        uid: 1000,
        gid: 1000,
        groups: vec![1000],
        env: Vec::new(),
    };
    for (name, bytes) in cosched_testkit::fuzz_corpus("submit_request") {
        let outcome = std::panic::catch_unwind(|| {
            let parsed = parse_request(&bytes);
            let valid = match &parsed {
                Ok(Request::Submit(request)) => {
                    Some(request.clone().submission(&who).validate(64, 2).is_ok())
                }
                _ => None,
            };
            (parsed, valid)
        });
        let Ok((parsed, valid)) = outcome else {
            panic!("the submit socket's parser or validation panicked on fuzz input {name}");
        };
        match name.as_str() {
            "submit" => assert_eq!(valid, Some(true), "{parsed:?}"),
            "cancel" => assert!(
                matches!(parsed, Ok(Request::Cancel { id: 7 })),
                "{parsed:?}"
            ),
            "queue" => assert!(matches!(parsed, Ok(Request::Queue)), "{parsed:?}"),
            "names_uid" => assert!(
                parsed.as_ref().is_err_and(|e| e.contains("field `uid`")),
                "{parsed:?}"
            ),
            "huge" => assert_eq!(
                valid,
                Some(false),
                "a job of 4294967295 ranks on 64 CPUs: {parsed:?}"
            ),
            _ => {}
        }
    }
}
