//! `cerberus-server`: the device on this machine (the CLI's `cerberus serve`, built without
//! the CLI).

use cerberus_server::ServeArgs;
use clap::Parser;
use std::process::ExitCode;

/// The device's allocator: the engine frees on background threads what the writers allocated
/// (frozen memtables), which glibc malloc serializes on its arena lock, and mimalloc does not.
/// The bench measures the device on the same one.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The Cerberus device: a multi-tenant key-value store served over TCP (TLS optional) and
/// NVMe/TCP. `cerberus serve` in the CLI is the same command.
#[derive(Parser)]
#[command(name = "cerberus-server", version)]
struct Cli {
    #[command(flatten)]
    args: ServeArgs,
}

fn main() -> ExitCode {
    match cerberus_server::serve(Cli::parse().args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
