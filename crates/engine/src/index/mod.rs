//! Secondary indexes on JSON attributes (Cerberus 4.4): what a secondary key is and how it is
//! encoded so that index order is value order.

mod scalar;

pub use scalar::{prefix_successor, string_prefix, type_range, AttrPath, Scalar, ScalarType};
