//! A request line on the manager's submit socket, which any local user may send: parsed, and a submission
//! validated against a 64-CPU machine, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(cosched_manager::socket::Request::Submit(request)) =
        cosched_manager::socket::parse_request(data)
    {
        let who = cosched_localsock::Identity {
            uid: 1000,
            gid: 1000,
            groups: vec![1000],
            env: Vec::new(),
        };
        let _ = request.submission(&who).validate(64, 2);
    }
});
