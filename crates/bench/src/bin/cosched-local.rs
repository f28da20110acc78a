//! `cosched-local`: see [`cosched_bench::programs::local`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::local::PROGRAM,
        cosched_bench::programs::local::run,
    )
}
