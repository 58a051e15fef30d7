//! Nothing but the doc tests of the README: `cargo test` compiles every Rust snippet of it,
//! so the quick start cannot drift from the API. The `cerberus` binary is `src/main.rs`.

#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
