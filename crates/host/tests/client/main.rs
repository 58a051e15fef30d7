//! The host client's suites against a fake device, one test binary (one build and link
//! instead of one per suite).

#[path = "../common/mod.rs"]
mod common;

mod api;
mod blocking;
mod connection_loss;
mod errors;
mod pipelining;
mod tls;
