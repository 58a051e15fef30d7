//! How a key or value over a device's limits is refused, in the words the device, the host
//! client and the CLI all use: the size given and the limit, with the setting's name.

/// A key of `len` bytes where the device takes 1 to `max` (`max_key_len`).
pub fn key_size_refusal(len: usize, max: u32) -> String {
    format!("key is {len} bytes; this device accepts keys of 1 to {max} bytes (max_key_len)")
}

/// A value of `len` bytes where the device takes up to `max` (`max_value_len`).
pub fn value_size_refusal(len: u64, max: u32) -> String {
    format!("value is {len} bytes; this device accepts values up to {max} bytes (max_value_len)")
}
