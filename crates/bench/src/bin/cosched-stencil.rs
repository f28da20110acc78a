//! `cosched-stencil`: see [`cosched_bench::programs::stencil`].

fn main() -> std::process::ExitCode {
    cosched_bench::main_with(
        cosched_bench::programs::stencil::PROGRAM,
        cosched_bench::programs::stencil::run,
    )
}
