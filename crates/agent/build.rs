//! Builds the agent's BPF object and its Rust skeleton (libbpf-cargo), with `vmlinux.h` generated from this
//! machine's kernel BTF by `bpftool`.
//!
//! A machine without clang, bpftool or kernel BTF still builds the workspace: the crate is then compiled
//! without BPF (no `cosched_bpf` cfg) and `cosched agent` refuses to start with a message that says what to
//! install. Set `COSCHED_NO_BPF=1` to force that path (to test it).

use std::path::{Path, PathBuf};
use std::process::Command;

// Marks the privileged tests ignored (with their reason) unless the crate is built as root.
include!("../testkit/privileged_cfg.rs");

const SRC: &str = "src/bpf/cosched.bpf.c";
const BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    emit_privileged_cfg();
    println!("cargo::rustc-check-cfg=cfg(cosched_bpf)");
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed=src/bpf/intf.h");
    println!("cargo:rerun-if-env-changed=COSCHED_NO_BPF");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build_bpf(&out) {
        Ok(()) => {
            println!("cargo:rustc-cfg=cosched_bpf");
            println!("cargo:rustc-env=COSCHED_BPF_MISSING=");
        }
        Err(why) => {
            println!("cargo:warning=cosched-agent is built WITHOUT BPF: {why}");
            println!("cargo:rustc-env=COSCHED_BPF_MISSING={why}");
        }
    }
}

fn build_bpf(out: &Path) -> Result<(), String> {
    if std::env::var_os("COSCHED_NO_BPF").is_some_and(|v| v != "0") {
        return Err("COSCHED_NO_BPF is set".into());
    }
    if !Path::new(BTF).exists() {
        return Err(format!(
            "{BTF} is missing (kernel built without CONFIG_DEBUG_INFO_BTF)"
        ));
    }
    let bpftool = find_tool("bpftool", &["/usr/sbin/bpftool", "/sbin/bpftool"])
        .ok_or("bpftool not found; install it (Debian/Ubuntu: apt-get install bpftool)")?;
    let clang = find_tool("clang", &[]).ok_or(
        "clang not found; install the BPF toolchain (Debian/Ubuntu: apt-get install clang llvm libbpf-dev \
         libelf-dev zlib1g-dev pkg-config bpftool)",
    )?;

    let vmlinux = out.join("vmlinux.h");
    let dump = Command::new(&bpftool)
        .args(["btf", "dump", "file", BTF, "format", "c"])
        .output()
        .map_err(|e| format!("running {}: {e}", bpftool.display()))?;
    if !dump.status.success() {
        return Err(format!(
            "bpftool btf dump failed: {}",
            String::from_utf8_lossy(&dump.stderr)
        ));
    }
    std::fs::write(&vmlinux, &dump.stdout)
        .map_err(|e| format!("writing {}: {e}", vmlinux.display()))?;

    let skel = out.join("cosched.skel.rs");
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => return Err(format!("no BPF target arch mapping for {other}")),
        Err(_) => "x86",
    };
    libbpf_cargo::SkeletonBuilder::new()
        .source(SRC)
        .clang(&clang)
        .clang_args([
            format!("-I{}", out.display()),
            "-Isrc/bpf".to_string(),
            format!("-D__TARGET_ARCH_{arch}"),
            "-Wall".to_string(),
            "-Wno-unused-function".to_string(),
        ])
        .build_and_generate(&skel)
        .map_err(|e| format!("building {SRC}: {e:#}"))
}

fn find_tool(name: &str, extra: &[&str]) -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    from_path.or_else(|| extra.iter().map(PathBuf::from).find(|p| p.is_file()))
}
