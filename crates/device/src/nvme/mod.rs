//! The device's NVMe/TCP target (issue 34; `docs/nvme-tcp.md`): the same engine, dispatch
//! and limits as the native port, behind the NVMe/TCP transport, an NVMe admin queue and
//! the KV command set. Written from the NVMe Base 2.x, NVMe over Fabrics, NVMe/TCP and KV
//! Command Set 1.0 specifications.
//!
//! `listener` accepts connections (capped), `conn` runs one (PDUs, R2T), `admin` answers
//! the admin queue (Fabrics, Identify, features, log pages), `identify` lays out its data,
//! `io` maps KV commands onto the dispatch, `vendor` tunnels native commands through a
//! pair of vendor opcodes, `controllers` keeps the controllers' state, `auth` authenticates
//! hosts' queues (DH-HMAC-CHAP). What a connection holds lies below the code that drives it:
//! `target` (what every connection shares), `answer`, `queue_auth`, `vendor_state`,
//! `held_retrieves` and `waiting`; the modules that drive a `Conn` add its methods.

mod admin;
mod answer;
mod auth;
mod conn;
mod controllers;
mod dh_budget;
mod discovery;
mod expiry;
mod flight;
mod gate;
mod held_retrieves;
mod identify;
mod io;
mod io_queue;
mod listener;
mod queue_auth;
mod target;
mod vendor;
mod vendor_state;
mod waiting;

pub(crate) use listener::serve;
pub(crate) use target::Target;
