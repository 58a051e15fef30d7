//! `cerberus verify`: every table and value-log segment of a stopped device read back and
//! every checksum checked.

use super::VerifyArgs;
use anyhow::{Context, Result};
use cerberus_device::verify_data_dir;
use cerberus_server::device_config;
use std::process::ExitCode;

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
