//! Secondary indexes on JSON attributes (Cerberus 4.4): what a secondary key is and how it is
//! encoded so that index order is value order, and the entries a write derives.

mod def;
mod extract;
mod number;
mod scalar;

pub use crate::index_def::IndexDef;
pub use crate::index_kind::IndexKind;
pub use def::{decode_payload, entry_key, entry_payload, split_entry_key};
pub use extract::{extract, locate, AttrValue, PathSet};
pub use number::Number;
pub use scalar::{prefix_successor, string_prefix, type_range, AttrPath, Scalar, KEY_FORMAT};
