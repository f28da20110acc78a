//! `cosched-masterslave`: see [`cosched_bench::programs::masterslave`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::masterslave::PROGRAM,
        cosched_bench::programs::masterslave::run,
    )
}
