//! Versions: the immutable set of tables per level, the edits that move from one version to
//! the next, and the manifest that logs those edits.

mod edit;
mod levels;
mod manifest;
mod namespaces;
mod table_handle;

pub use edit::VersionEdit;
pub use levels::{Version, RUNS};
pub(crate) use manifest::append_record;
pub use manifest::{Recovered, VersionSet};
pub use namespaces::Namespaces;
pub use table_handle::{TableCtx, TableHandle};
