//! `cerberus-bench ycsb`: the YCSB core workloads A-F, written from their published
//! definition, on the embedded engines and through the device, per tenant too.

mod args;
pub mod command;
mod distribution;
mod report;
mod run;
#[cfg(test)]
mod tests;
mod workload;
