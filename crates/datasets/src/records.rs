//! What a dataset's generator is (one JSON document per record id), and why a dataset can fail
//! to be written.

/// Highest record count: ids are one letter and 7 decimal digits.
pub const MAX_RECORDS: u64 = 9_999_999;

/// Why a dataset could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// Ids are one letter and 7 digits: a dataset has 1 to [`MAX_RECORDS`] records.
    #[error("{0} records asked: a dataset has 1 to {MAX_RECORDS} (ids are 8 bytes)")]
    Records(u64),
    /// A document did not serialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The output refused a line.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// One dataset's generator.
pub(crate) trait Records {
    /// Appends the document of record `id` as one JSON object, without a newline.
    fn write(&mut self, id: &str, buf: &mut Vec<u8>) -> Result<(), DatasetError>;
    /// Records so far that have each of the paper's secondary keys.
    fn key_counts(&self) -> Vec<(String, u64)>;
}
