//! What the hostile tests share: a device with a key space open, and a bounded wait.

use crate::device::{create_key_space, open_key_space, Rig};
use crate::ffi::H;
use crate::wire::Wire;
use std::time::Duration;

/// A device, an admin handle and key space `name` open on it.
pub fn setup(name: &str) -> (Rig, H, H) {
    let rig = Rig::start(Wire::Native);
    let dev = rig.open(true).expect("open the device");
    create_key_space(dev, name, 0).expect("create");
    let ks = open_key_space(dev, name).expect("open");
    (rig, dev, ks)
}

/// Waits until `f` holds; panics after 10 s.
pub fn wait_for(what: &str, f: impl Fn() -> bool) {
    for _ in 0..2000 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("no {what} after 10 s");
}
