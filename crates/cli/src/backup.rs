//! `cerberus backup DIR`: the device writes a consistent backup of its data directory to DIR
//! on its own machine (admin); `cerberus serve --data-dir DIR` serves it.

use crate::session::connect;
use crate::target::AdminTarget;
use anyhow::{Context, Result};
use cerberus_device::ADMIN_SECRET_FILE;

/// `cerberus backup`'s arguments.
#[derive(clap::Args)]
pub struct BackupArgs {
    /// Directory to write, on the device's machine: absolute, or relative to the parent of
    /// the device's data directory. It must not exist.
    pub dir: String,
    /// Print the device's summary as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub target: AdminTarget,
}

pub fn run(args: &BackupArgs) -> Result<()> {
    let secret = args.target.auth.admin_secret.as_deref().with_context(|| {
        format!(
            "backup needs the admin credential: --admin-secret or CERBERUS_ADMIN_SECRET (the \
             device writes it to DATA_DIR/{ADMIN_SECRET_FILE})"
        )
    })?;
    let client = connect(&args.target.conn)?;
    client
        .authenticate_admin(secret)
        .context("authenticating as admin")?;
    let info = client
        .backup(&args.dir)
        .with_context(|| format!("backing up to {}", args.dir))?;
    if args.json {
        println!("{}", serde_json::to_string(&info)?);
        return Ok(());
    }
    println!("backup: {}", info.dir);
    println!(
        "sequence: {} (every write up to it, none after)",
        info.sequence
    );
    println!(
        "linked: {} files, {} bytes; copied: {} files, {} bytes",
        info.files_linked, info.bytes_linked, info.files_copied, info.bytes_copied
    );
    println!("namespaces: {}", info.namespaces);
    println!("restore: cerberus serve --data-dir {}", info.dir);
    Ok(())
}
