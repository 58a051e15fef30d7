//! The open device and key space handles of the process.

use crate::device::Device;
use crate::handles::Registry;
use crate::key_space::KeySpace;

/// Open devices, by `kvs_device_handle`; the kinds differ, so a device handle is never a
/// key space handle (or the other way).
pub static DEVICES: Registry<Device> = Registry::new(0);
/// Open key spaces, by `kvs_key_space_handle`.
pub static KEY_SPACES: Registry<KeySpace> = Registry::new(8);
