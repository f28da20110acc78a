//! `cosched-pingpong`: see [`cosched_bench::programs::pingpong`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::pingpong::PROGRAM,
        cosched_bench::programs::pingpong::run,
    )
}
