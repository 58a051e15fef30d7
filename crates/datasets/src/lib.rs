//! Synthetic stand-ins for the two datasets the Cerberus paper (TECS 2023, section 5.1) runs its
//! secondary-index queries on (Table 5), written as JSON lines: one document a line, whose
//! 8-byte primary key is its `"id"`. Generated, never downloaded, so that a benchmark can be
//! rebuilt anywhere; the same arguments give a byte-identical file. docs/datasets.md lists the
//! fields and the counts of the queries' secondary keys. `cerberus-bench dataset` writes them
//! to a file; `cerberus-paper queries` and `bts --mix tweets` load them.
//!
//! Each line's size is drawn around the paper's mean value size (963 B for glacier, 8 KiB for
//! tweets): the document's last string field (glacier `remarks`, tweets `extended.note_text`)
//! is serialized empty, then filled with text up to the drawn size, so the mean does not drift
//! when other fields change.

#![deny(missing_docs)]

mod generate;
mod glacier;
mod records;
mod text;
mod timestamp;
mod tweets;

pub use generate::{generate, Kind, Summary};
pub use records::{DatasetError, MAX_RECORDS};
pub use timestamp::utc_timestamp;
