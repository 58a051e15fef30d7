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

    fn query_bounds(&self) -> QueryBounds {
        QueryBounds {
            max_results: self.config.max_query_results,
            max_page_bytes: self.config.max_iter_batch_bytes,
            max_reply_bytes: self.config.reply_bytes_bound(),
        }
    }

    pub(super) fn query(&self, ns: u32, query: &[u8]) -> Outcome {
        queries::run(&self.namespace(ns)?, query, &self.query_bounds(), engine)
    }

    /// `query` run under the engine work limit `work`
    /// (`Namespace::with_query_work_limit`): its outcome, or `None` if it needs more (it
    /// returned nothing and changed nothing: run it again without the limit).
    pub(super) fn query_within(&self, ns: u32, query: &[u8], work: u64) -> Option<Outcome> {
        let bounds = self.query_bounds();
        let over = std::cell::Cell::new(false);
        let out = self.with_namespace(ns, |h| {
            let limited = h.with_query_work_limit(work);
            queries::run(&limited, query, &bounds, |e| {
                over.set(e.kind() == cerberus_engine::ErrorKind::WorkLimit);
                engine(e)
            })
        });
        (!over.get()).then_some(out)
    }
}
