//! `cerberus verify`: every table and value-log segment of a stopped device read back and
//! every checksum checked.

use anyhow::{Context, Result};
use cerberus_device::verify_data_dir;
use cerberus_server::{device_config, StorageArg};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub(crate) struct VerifyArgs {
    /// Device directory (as `serve --data-dir`). Default: the config file's, else
    /// ./cerberus-data.
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// The device's TOML config file (its engine options and storage).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// What the engine stores its files on (default: the config file's, else posix).
    #[arg(long, value_enum)]
    pub(crate) storage: Option<StorageArg>,
}

pub fn run(args: VerifyArgs) -> Result<ExitCode> {
    let config = device_config(args.config.as_deref(), args.data_dir, args.storage)?;
    let report = verify_data_dir(&config)
        .with_context(|| format!("verifying {}", config.data_dir.display()))?;
    println!(
        "{} tables ({} entries), {} value-log segments ({} records), {} bytes read",
        report.tables, report.table_entries, report.segments, report.records, report.bytes
    );
    if report.is_clean() {
        println!("no damage found");
        return Ok(ExitCode::SUCCESS);
    }
    for p in &report.problems {
        println!("damaged: {p}");
    }
    println!("{} damaged files", report.problems.len());
    Ok(ExitCode::from(1))
}
