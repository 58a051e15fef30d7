//! An open key space: its namespace, authenticated on each of the device handle's
//! connections with the tenant's credential (a tenant's own) or the secret the store keeps.

use crate::device::Device;
use crate::key_spaces::Space;
use crate::result::KvsError;
use cerberus_host::BlockingNamespace;
use std::sync::Arc;

/// An open key space.
pub struct KeySpace {
    pub device: Arc<Device>,
    /// Its device's handle.
    pub device_handle: usize,
    pub name: String,
    /// Its handle on each of the device's connections.
    handles: Vec<BlockingNamespace>,
}

impl KeySpace {
    /// Opens key space `name` of `device` (handle `device_handle`).
    pub fn open(
        device: &Arc<Device>,
        device_handle: usize,
        name: &str,
    ) -> Result<KeySpace, KvsError> {
        device.mark_open(name)?;
        let handles = handles_of(device, name).inspect_err(|_| device.mark_closed(name))?;
        Ok(KeySpace {
            device: device.clone(),
            device_handle,
            name: name.to_string(),
            handles,
        })
    }

    /// Its handle on the calling thread's connection.
    pub fn ns(&self) -> &BlockingNamespace {
        &self.handles[self.device.slot()]
    }

    /// Its quota, usage and pair count.
    pub fn space(&self) -> Result<Space, KvsError> {
        Ok(Space::from_stats(&self.ns().stats()?))
    }
}

fn handles_of(device: &Device, name: &str) -> Result<Vec<BlockingNamespace>, KvsError> {
    match &device.tenant {
        Some(t) if t.name == name => {
            return Ok(device
                .connections
                .iter()
                .map(|c| c.namespace(t.nsid))
                .collect())
        }
        // A tenant's handle sees its own key space only.
        Some(_) if !device.admin => return Err(KvsError::KeySpaceNotExist),
        _ => {}
    }
    let secret = device
        .secrets
        .load(name)
        .ok_or(KvsError::KeySpaceNotExist)?;
    let mut handles = Vec::with_capacity(device.connections.len());
    for c in &device.connections {
        handles.push(c.open_namespace_named(name, &secret)?);
    }
    Ok(handles)
}
