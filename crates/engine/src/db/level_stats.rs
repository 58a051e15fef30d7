//! The shape figures of a level (or of the runs): tables and bytes.

use crate::stats::LevelStats;
use crate::version::TableHandle;
use std::sync::Arc;

pub(super) fn level_stats(tables: &[&Arc<TableHandle>]) -> LevelStats {
    LevelStats {
        tables: tables.len(),
        bytes: tables.iter().map(|t| t.props.size).sum(),
        point_index_bytes: tables.iter().map(|t| t.props.aux_bytes).sum(),
    }
}
