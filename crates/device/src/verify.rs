//! `cerberus verify`: the device's engine files checked while the device is stopped.

use crate::config::DeviceConfig;
use crate::error::DeviceError;
use cerberus_engine::{Db, VerifyReport};

/// Opens the engine under `config.data_dir` as the device would (its options and storage),
/// reads every table and value-log segment back with [`Db::verify`] and closes it. Opening
/// recovers what a crash left (a torn log tail is cut off, as at any start); a running device
/// holds the directory's lock, so this refuses to run beside it.
pub fn verify_data_dir(config: &DeviceConfig) -> Result<VerifyReport, DeviceError> {
    let db_dir = config.data_dir.join("db");
    if !db_dir.is_dir() {
        return Err(DeviceError::io(
            &db_dir,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no engine files here (is --data-dir the device's data directory?)",
            ),
        ));
    }
    let db = Db::builder(config.engine_options())
        .storage(config.engine_storage())
        .open(&db_dir)?;
    let report = db.verify()?;
    db.close()?;
    Ok(report)
}
