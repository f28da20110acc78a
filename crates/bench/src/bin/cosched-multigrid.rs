//! `cosched-multigrid`: see [`cosched_bench::programs::multigrid`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::multigrid::PROGRAM,
        cosched_bench::programs::multigrid::run,
    )
}
