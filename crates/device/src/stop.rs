//! The device's stop signal, as the network tasks wait for it.

use tokio::sync::watch;

/// Resolves once the device is told to stop.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        if stop.changed().await.is_err() {
            return;
        }
    }
}
