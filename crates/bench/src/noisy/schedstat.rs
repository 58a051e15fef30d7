//! Where the cores went in a phase: per thread of this process, the time on a core, the time
//! runnable but waiting for one, and the slices, from Linux's `/proc/self/task/*/schedstat`,
//! grouped by thread name without its trailing `-N` (`cerberus-net`, `neighbour`, ...). On a
//! 2-core machine running the device and its clients, a victim's tail is often its own client
//! thread or the network thread waiting for a core; this says which.

use cerberus_figures::docs::noisy::ThreadTimes;
use std::collections::BTreeMap;

/// Cumulative counters per thread id: (name, on-core ns, waiting ns, slices).
#[derive(Default)]
pub(super) struct Snapshot(BTreeMap<u64, (String, u64, u64, u64)>);

impl Snapshot {
    /// Reads every thread of the process; empty where `/proc` has no schedstat.
    pub(super) fn take() -> Snapshot {
        let mut threads = BTreeMap::new();
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return Snapshot(threads);
        };
        for entry in dir.flatten() {
            let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let path = entry.path();
            let (Ok(comm), Ok(stat)) = (
                std::fs::read_to_string(path.join("comm")),
                std::fs::read_to_string(path.join("schedstat")),
            ) else {
                continue; // the thread ended between the listing and the reads
            };
            let mut f = stat
                .split_whitespace()
                .map(|x| x.parse::<u64>().unwrap_or(0));
            let (cpu, wait, slices) = (
                f.next().unwrap_or(0),
                f.next().unwrap_or(0),
                f.next().unwrap_or(0),
            );
            threads.insert(tid, (group(comm.trim()), cpu, wait, slices));
        }
        Snapshot(threads)
    }

    /// What each group did since `before` (threads that started since count whole; threads
    /// that ended in between are missing: their time is not in /proc any more).
    pub(super) fn since(&self, before: &Snapshot) -> BTreeMap<String, ThreadTimes> {
        let mut groups: BTreeMap<String, ThreadTimes> = BTreeMap::new();
        for (tid, (name, cpu, wait, slices)) in &self.0 {
            let (c0, w0, s0) = before
                .0
                .get(tid)
                .map_or((0, 0, 0), |(_, c, w, s)| (*c, *w, *s));
            let g = groups.entry(name.clone()).or_default();
            g.threads += 1;
            g.cpu_ms += cpu.saturating_sub(c0) as f64 / 1e6;
            g.wait_ms += wait.saturating_sub(w0) as f64 / 1e6;
            g.slices += slices.saturating_sub(s0);
        }
        groups
    }
}

/// The calling thread's counters since `start` (threads that end before a phase's last
/// snapshot report themselves this way).
pub(super) struct Own {
    start: (u64, u64, u64),
}

impl Own {
    pub(super) fn start() -> Own {
        Own { start: own() }
    }

    pub(super) fn finish(&self) -> ThreadTimes {
        let (c, w, s) = own();
        ThreadTimes {
            threads: 1,
            cpu_ms: c.saturating_sub(self.start.0) as f64 / 1e6,
            wait_ms: w.saturating_sub(self.start.1) as f64 / 1e6,
            slices: s.saturating_sub(self.start.2),
        }
    }
}

/// This thread's cumulative (on-core ns, waiting ns, slices); zeros without schedstat.
fn own() -> (u64, u64, u64) {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut f = stat
        .split_whitespace()
        .map(|x| x.parse::<u64>().unwrap_or(0));
    (
        f.next().unwrap_or(0),
        f.next().unwrap_or(0),
        f.next().unwrap_or(0),
    )
}

/// Adds `t` to the group `name` of `groups`.
pub(super) fn add(groups: &mut BTreeMap<String, ThreadTimes>, name: &str, t: ThreadTimes) {
    let g = groups.entry(name.into()).or_default();
    g.threads += t.threads;
    g.cpu_ms += t.cpu_ms;
    g.wait_ms += t.wait_ms;
    g.slices += t.slices;
}

/// A thread's name without a trailing `-N`: the group it belongs to.
fn group(comm: &str) -> String {
    match comm.rsplit_once('-') {
        Some((head, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => head.into(),
        _ => comm.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_group_by_name_without_their_number() {
        assert_eq!(group("cerberus-net-0"), "cerberus-net");
        assert_eq!(group("neighbour-12"), "neighbour");
        assert_eq!(group("cerberus-bench"), "cerberus-bench");
        assert_eq!(group("victim"), "victim");
    }

    #[test]
    fn a_busy_thread_shows_its_core_time() {
        let before = Snapshot::take();
        let t = std::thread::Builder::new()
            .name("spinner-1".into())
            .spawn(|| {
                // Busy for 20 ms of the clock (a loop the compiler cannot fold away), then
                // off the CPU once, so the kernel has accounted the time when it is read.
                let start = std::time::Instant::now();
                let mut x = 0u64;
                while start.elapsed() < std::time::Duration::from_millis(20) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
                Snapshot::take()
            })
            .unwrap();
        let after = t.join().unwrap();
        if before.0.is_empty() {
            return; // no schedstat on this kernel
        }
        let spinner = after.since(&before)["spinner"];
        assert_eq!(spinner.threads, 1);
        assert!(spinner.cpu_ms > 0.0 && spinner.slices > 0, "{spinner:?}");
    }
}
