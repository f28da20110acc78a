// Included by the build scripts of the crates with privileged tests (`include!`): sets `cfg(cosched_root)` when
// the crate is built as root, so a privileged test carries
// `#[cfg_attr(not(cosched_root), ignore = "privileged: ...")]` and an ordinary user's `cargo test` reports it as
// ignored with that reason, while a root build (CI's) runs it — and, under COSCHED_REQUIRE_PRIVILEGED, fails it
// if the machine lacks what it needs (`cosched_testkit::cannot_run`).

/// Emits the cfg (and reruns the build script when the building user changes, e.g. under `sudo`).
fn emit_privileged_cfg() {
    println!("cargo::rustc-check-cfg=cfg(cosched_root)");
    println!("cargo:rerun-if-env-changed=USER");
    println!("cargo:rerun-if-env-changed=SUDO_UID");
    let effective_uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?.to_string();
            line.split_whitespace().nth(2).map(str::to_string)
        });
    if effective_uid.as_deref() == Some("0") {
        println!("cargo:rustc-cfg=cosched_root");
    }
}
