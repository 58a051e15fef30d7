//! The Cerberus device as a program: the flags of `cerberus-server` (and of `cerberus serve`,
//! the same command in the CLI), the log, and the device's life from start to signal.

mod args;
mod error;
mod serve;

pub use args::{ServeArgs, StorageArg};
pub use error::ServeError;
pub use serve::{device_config, serve};
