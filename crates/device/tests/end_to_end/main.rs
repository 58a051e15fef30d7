//! The device's end-to-end suites over loopback, one test binary (one build and link
//! instead of one per suite); the suites that measure the process's memory or rates, or
//! hold deadlines, stay binaries of their own.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod backup;
mod bad_input;
mod delete_range;
mod inline_queries;
mod iterators;
mod lifecycle;
mod metrics_scrape;
mod nvme_auth;
mod nvme_auth_exchange;
mod nvme_blocking;
mod nvme_discovery;
mod nvme_durability;
mod nvme_inflight;
mod nvme_put_batch;
mod nvme_spdk_seen;
mod nvme_tcp;
mod nvme_vendor;
mod pipelined_gets;
mod pipelining;
mod quota;
mod rekey_and_names;
mod tenants;
mod tls;
mod turn_boundaries;
mod write_batch;
mod write_pressure_order;
