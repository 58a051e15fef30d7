//! What an NVMe/TCP queue waits on between its turns, made once a connection: one timer
//! set to the earliest of its deadlines (`crate::deadlines`) and moved only when that
//! changes, the device's stop, its controller going.

use crate::deadlines::Timer;
use crate::stop::stopped;
use std::future::Future;
use std::pin::Pin;
use tokio::sync::watch;

/// Waits until the controller behind an I/O queue goes (forever on other queues).
pub(super) async fn went(gone: &mut Option<Pin<Box<dyn Future<Output = ()> + Send>>>) {
    match gone {
        Some(g) => g.await,
        None => std::future::pending().await,
    }
}

/// What a connection waits on, made once and kept across its waits: one timer, moved only
/// when the earliest deadline changes, the device's stop, its controller going.
pub(super) struct Waiting {
    pub(super) timer: Timer,
    pub(super) stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    pub(super) gone: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Waiting {
    pub(super) fn new(stop: &watch::Receiver<bool>) -> Waiting {
        let mut stop = stop.clone();
        Waiting {
            timer: Timer::new(),
            stop: Box::pin(async move { stopped(&mut stop).await }),
            gone: None,
        }
    }
}
