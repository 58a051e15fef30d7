//! Geometry and timings of the modeled flash.

use std::time::Duration;

/// Geometry and timings of the modeled flash.
#[derive(Clone, Debug)]
pub struct NandConfig {
    /// Bytes per page.
    pub page_size: usize,
    /// Channels: buses between controller and dies, each moving one transfer at a time.
    pub channels: usize,
    /// Dies (ways) per channel.
    pub ways: usize,
    /// Array read time of one page (tR).
    pub t_read: Duration,
    /// Program time of one page (tPROG).
    pub t_prog: Duration,
    /// Channel transfer rate in bytes per second (data moved between die and controller).
    pub channel_bytes_per_sec: u64,
}

impl Default for NandConfig {
    fn default() -> Self {
        NandConfig {
            page_size: 16 * 1024,
            channels: 4,
            ways: 8,
            t_read: Duration::from_micros(60),
            t_prog: Duration::from_micros(600),
            channel_bytes_per_sec: 800_000_000,
        }
    }
}

impl NandConfig {
    /// Number of dies (`channels * ways`).
    pub fn dies(&self) -> usize {
        self.channels.max(1) * self.ways.max(1)
    }

    /// Time to move `bytes` over one channel; a rate of 0 means an infinitely fast channel.
    pub fn transfer_time(&self, bytes: usize) -> Duration {
        if self.channel_bytes_per_sec == 0 {
            return Duration::ZERO;
        }
        let ns = bytes as u128 * 1_000_000_000 / u128::from(self.channel_bytes_per_sec);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Latency of reading `bytes` of one page on an idle die and channel: tR plus the transfer.
    pub fn modeled_page_read(&self, bytes: usize) -> Duration {
        self.t_read + self.transfer_time(bytes)
    }
}
