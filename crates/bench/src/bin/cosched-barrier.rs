//! `cosched-barrier`: see [`cosched_bench::programs::barrier`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::barrier::PROGRAM,
        cosched_bench::programs::barrier::run,
    )
}
