//! What a read or a write is for.

/// What a read or a write is for; the NAND model counts pages per purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IoPurpose {
    /// Filter blocks of tables.
    Filter = 0,
    /// Index blocks, footers and namespace tables of tables.
    Index = 1,
    /// Data blocks of tables.
    Data = 2,
    /// Value-log records read to serve a value.
    Value = 3,
    /// Logs read or written sequentially: value-log appends and replay, manifest.
    Log = 4,
    /// Anything else.
    Other = 5,
}

impl IoPurpose {
    /// Every purpose, in index order (`IoPurpose as usize`).
    pub const ALL: [IoPurpose; 6] = [
        IoPurpose::Filter,
        IoPurpose::Index,
        IoPurpose::Data,
        IoPurpose::Value,
        IoPurpose::Log,
        IoPurpose::Other,
    ];
    /// Number of purposes: the length of a counter array indexed by purpose.
    pub const COUNT: usize = 6;

    /// The purpose's name in stats and metrics (`filter`, `index`, `data`, `value`, `log`,
    /// `other`).
    pub fn name(self) -> &'static str {
        match self {
            IoPurpose::Filter => "filter",
            IoPurpose::Index => "index",
            IoPurpose::Data => "data",
            IoPurpose::Value => "value",
            IoPurpose::Log => "log",
            IoPurpose::Other => "other",
        }
    }

    /// Serializes counters indexed by purpose as a map keyed by purpose name (in `ALL`
    /// order), so JSON readers need not know the indices.
    pub fn serialize_counts<S: serde::Serializer>(
        counts: &[u64; IoPurpose::COUNT],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(IoPurpose::COUNT))?;
        for p in IoPurpose::ALL {
            m.serialize_entry(p.name(), &counts[p as usize])?;
        }
        m.end()
    }
}
