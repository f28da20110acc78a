//! `cosched-calcula`: see [`cosched_bench::programs::calcula`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::calcula::PROGRAM,
        cosched_bench::programs::calcula::run,
    )
}
