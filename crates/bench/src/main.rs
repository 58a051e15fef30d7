//! The `cerberus-bench` program: the library's command line.

use std::process::ExitCode;

fn main() -> ExitCode {
    cerberus_bench::main()
}
