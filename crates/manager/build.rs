//! Marks the privileged tests ignored (with their reason) unless the crate is built as root.
include!("../testkit/privileged_cfg.rs");

fn main() {
    emit_privileged_cfg();
}
