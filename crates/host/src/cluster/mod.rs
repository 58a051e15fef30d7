//! Tenants across several devices (`docs/cluster.md`).
//!
//! A [`ClusterDescription`] (a TOML file) lists the devices and, per tenant, the devices its
//! keys are spread over: each key lives on the device [`owner`] picks by rendezvous hashing,
//! in one namespace per device (a "part"). The description is the only coordination: there
//! is no service to ask, so every client that loads it places keys the same way. The admin
//! operations ([`create_tenant`], [`destroy_tenant`], [`list`]) and the move of a tenant to
//! other devices ([`reshard`]) change the devices first and the description last.

mod admin;
mod description;
mod error;
mod move_indexes;
mod placement;
mod reshard;
mod secrets;

pub use admin::{
    connect_admin, connect_device, create_tenant, destroy_tenant, list, open_part, record_ids,
    TenantSummary,
};
pub use description::{
    base_dir, namespace_name, ClusterDescription, DeviceEntry, Part, TenantPlacement,
};
pub use error::ClusterError;
pub use placement::owner;
#[doc(hidden)]
pub use reshard::reshard_with_hook;
pub use reshard::{abort_move, reshard, Digest, MoveReport};
pub use secrets::secret_path;
