//! The CLI's suites, each running the `cerberus` binary as a user would: one test binary
//! (one build and link instead of one per suite).

#[path = "../common/mod.rs"]
mod common;

mod backup;
mod cluster;
mod cluster_fence;
mod cluster_first_contact;
mod cluster_keys;
mod commands;
mod credentials;
mod delete_get_many;
mod durability;
mod exact_count;
mod export_import;
mod first_contact;
mod nvme_wire;
mod queries;
mod readme_quickstart;
mod verify;
