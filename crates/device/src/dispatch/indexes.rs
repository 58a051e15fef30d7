//! Secondary indexes and queries of a namespace; the work itself is in `crate::queries`.

use super::engine_error::engine;
use super::{Outcome, Shared};
use crate::queries::{self, QueryBounds};
use cerberus_proto::Reply;

impl Shared {
    pub(super) fn index_create(&self, ns: u32, attr: &str, vas: bool) -> Outcome {
        queries::create_index(&self.namespace(ns)?, attr, vas, engine)
    }

    pub(super) fn index_drop(&self, ns: u32, attr: &str) -> Outcome {
        self.namespace(ns)?.drop_index(attr).map_err(engine)?;
        Ok(Reply::Empty)
    }

    pub(super) fn index_list(&self, ns: u32) -> Outcome {
        queries::list_indexes(&self.namespace(ns)?, engine)
    }

    pub(super) fn query(&self, ns: u32, query: &[u8]) -> Outcome {
        let bounds = QueryBounds {
            max_results: self.config.max_query_results,
            max_page_bytes: self.config.max_iter_batch_bytes,
            max_reply_bytes: self.config.reply_bytes_bound(),
        };
        queries::run(&self.namespace(ns)?, query, &bounds, engine)
    }
}
