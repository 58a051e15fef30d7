//! The device's key and value limits, as its Identify answer gives them, checked before a
//! request is sent so the error names the limit and the size given (a request too large for
//! the device's frames would otherwise be refused by the client with the frame size only).

use cerberus_device::DeviceConfig;
use cerberus_host::proto::{key_size_refusal, value_size_refusal};
use cerberus_host::BlockingClient;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_key_len: u32,
    pub max_value_len: u32,
}

impl Limits {
    /// The connected device's limits; `None` if it did not say (the device then checks).
    pub fn of(client: &BlockingClient) -> Option<Limits> {
        client.device_info().map(|id| Limits {
            max_key_len: id.max_key_len,
            max_value_len: id.max_value_len,
        })
    }

    /// The limits of a device started with the default configuration.
    pub fn default_device() -> Limits {
        let c = DeviceConfig::default();
        Limits {
            max_key_len: c.max_key_len,
            max_value_len: c.max_value_len,
        }
    }

    pub fn check_key(&self, key: &[u8]) -> Result<(), String> {
        if key.is_empty() || key.len() > self.max_key_len as usize {
            return Err(key_size_refusal(key.len(), self.max_key_len));
        }
        Ok(())
    }

    pub fn check_value_len(&self, len: u64) -> Result<(), String> {
        if len > u64::from(self.max_value_len) {
            return Err(value_size_refusal(len, self.max_value_len));
        }
        Ok(())
    }
}

/// The limits as help text, from the device's default configuration.
pub fn help() -> String {
    let d = Limits::default_device();
    let value = if d.max_value_len.trailing_zeros() >= 20 {
        format!("{} MiB = {} bytes", d.max_value_len >> 20, d.max_value_len)
    } else {
        format!("{} bytes", d.max_value_len)
    };
    format!(
        "Limits: keys of 1 to {} bytes (max_key_len), values up to {value} (max_value_len), \
         on a device with the default configuration; a device started with `serve --config \
         FILE` may set others. The limits checked are the device's own, learned when \
         connecting.",
        d.max_key_len
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_the_size_and_the_limit() {
        let l = Limits {
            max_key_len: 4,
            max_value_len: 10,
        };
        assert!(l.check_key(b"abcd").is_ok());
        assert_eq!(
            l.check_key(b"abcde").unwrap_err(),
            "key is 5 bytes; this device accepts keys of 1 to 4 bytes (max_key_len)"
        );
        assert!(l.check_key(b"").unwrap_err().starts_with("key is 0 bytes;"));
        assert!(l.check_value_len(10).is_ok());
        assert_eq!(
            l.check_value_len(11).unwrap_err(),
            "value is 11 bytes; this device accepts values up to 10 bytes (max_value_len)"
        );
    }

    #[test]
    fn help_gives_the_default_device_limits() {
        let h = help();
        assert!(h.contains("keys of 1 to 255 bytes"), "{h}");
        assert!(h.contains("values up to 2 MiB = 2097152 bytes"), "{h}");
    }
}
