//! `cerberus verify`: every table and value-log segment of a stopped device read back and
//! every checksum checked.

use super::{StorageArg, VerifyArgs};
use anyhow::{Context, Result};
use cerberus_device::{verify_data_dir, DeviceConfig, StorageChoice};
use std::process::ExitCode;

pub fn run(args: VerifyArgs) -> Result<ExitCode> {
    let mut config = match &args.config {
        Some(path) => DeviceConfig::from_toml_file(path)?,
        None => DeviceConfig::default(),
    };
    if let Some(d) = args.data_dir {
        config.data_dir = d;
    }
    if let Some(s) = args.storage {
        config.storage = match s {
            StorageArg::Posix => StorageChoice::Posix,
            StorageArg::Nand => StorageChoice::Nand,
        };
    }
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
