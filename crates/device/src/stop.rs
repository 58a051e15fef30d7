//! The device's stop signal, as the network tasks wait for it.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
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

/// The next connection on `listener`, or `None` once the device is told to stop. A failed
/// accept (out of descriptors and the like) backs off 50 ms instead of spinning.
pub async fn accept_until_stopped(
    listener: &TcpListener,
    stop: &mut watch::Receiver<bool>,
    what: &str,
) -> Option<(TcpStream, SocketAddr)> {
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => return Some(x),
                Err(e) => {
                    tracing::warn!(error = %e, "{what} accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = stopped(stop) => return None,
        }
    }
}
