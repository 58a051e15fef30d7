//! The typed result documents: what the experiments write as JSON and the figures read back.
//! Their fields keep the order the files have always had.

pub mod bts;
pub mod multitenant;
pub mod noisy;
pub mod paper;
pub mod queries;
