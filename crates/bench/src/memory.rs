//! The process's memory, from `/proc/self/status` (Linux; elsewhere the figures are `None`).

use serde::Serialize;

/// Resident memory of the process at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemorySample {
    /// `VmRSS`: resident now.
    pub rss_bytes: Option<u64>,
    /// `VmHWM`: the most resident so far (since the process started, or since the last
    /// [`reset_peak`]).
    pub peak_rss_bytes: Option<u64>,
}

impl MemorySample {
    /// The process's memory now.
    pub fn now() -> MemorySample {
        std::fs::read_to_string("/proc/self/status")
            .map(|s| parse_status(&s))
            .unwrap_or_default()
    }
}

/// `VmRSS` and `VmHWM` of a `/proc/PID/status` text (their values are in kB, that is KiB).
pub fn parse_status(status: &str) -> MemorySample {
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kib * 1024)
        })
    };
    MemorySample {
        rss_bytes: field("VmRSS"),
        peak_rss_bytes: field("VmHWM"),
    }
}

/// Starts the peak (`VmHWM`) over from the current resident size, so that the peak of each
/// engine's run is its own (writes 5 to `/proc/self/clear_refs`). Whether it could.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_parsed_in_bytes() {
        let status = "Name:\tcerberus-bench\nVmPeak:\t  900000 kB\nVmHWM:\t    2048 kB\n\
                      VmRSS:\t    1024 kB\nThreads:\t5\n";
        assert_eq!(
            parse_status(status),
            MemorySample {
                rss_bytes: Some(1 << 20),
                peak_rss_bytes: Some(2 << 20),
            }
        );
        assert_eq!(parse_status("VmRSS: x kB\n"), MemorySample::default());
        assert_eq!(parse_status(""), MemorySample::default());
    }

    #[test]
    fn this_process_has_memory() {
        let m = MemorySample::now();
        if cfg!(target_os = "linux") {
            let (rss, peak) = (m.rss_bytes.unwrap(), m.peak_rss_bytes.unwrap());
            assert!(rss > 0 && peak >= rss / 2, "{m:?}");
        }
    }
}
