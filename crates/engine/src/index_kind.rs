//! The two kinds of secondary index (Cerberus 4.4): a leaf that the index code, the version
//! (which records each index's kind) and the errors (which name it) all use.

/// How a query gets from an index entry to the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexKind {
    /// The entry holds nothing more: a query looks the pk up in the primary index and checks
    /// the attribute of the value it finds (so entries a later write made stale drop out).
    Classic,
    /// Value-addressed (the paper's VAS): the entry also holds the record's value-log address,
    /// so a query reads the value straight from the log, with no primary lookup; whether the
    /// record is still the newest comes from the memtables and the superseded-record marks.
    Vas,
}

impl IndexKind {
    /// The kind's name, as [`IndexKind::parse`] reads it and errors print it.
    pub fn as_str(self) -> &'static str {
        match self {
            IndexKind::Classic => "classic",
            IndexKind::Vas => "vas",
        }
    }

    /// The kind named `text` (`classic` or `vas`, as [`IndexKind::as_str`] gives them).
    pub fn parse(text: &str) -> Option<IndexKind> {
        match text {
            "classic" => Some(IndexKind::Classic),
            "vas" => Some(IndexKind::Vas),
            _ => None,
        }
    }

    pub(crate) fn to_u8(self) -> u8 {
        match self {
            IndexKind::Classic => 0,
            IndexKind::Vas => 1,
        }
    }

    pub(crate) fn from_u8(v: u8) -> Option<IndexKind> {
        match v {
            0 => Some(IndexKind::Classic),
            1 => Some(IndexKind::Vas),
            _ => None,
        }
    }
}

impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in [IndexKind::Classic, IndexKind::Vas] {
            assert_eq!(IndexKind::from_u8(k.to_u8()), Some(k));
            assert_eq!(IndexKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(IndexKind::parse("btree"), None);
    }
}
