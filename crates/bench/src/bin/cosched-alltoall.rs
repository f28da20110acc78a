//! `cosched-alltoall`: see [`cosched_bench::programs::alltoall`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::alltoall::PROGRAM,
        cosched_bench::programs::alltoall::run,
    )
}
