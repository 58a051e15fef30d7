use super::device::{duration_ns, Device};
use super::*;
use crate::storage::interface::Storage;
use crate::storage::nand_stats::NandStats;
use crate::storage::purpose::IoPurpose;
use crate::storage::MemStorage;
use std::io;
use std::sync::Arc;
use std::sync::Barrier;
use std::thread;
use std::time::Duration;
use std::time::Instant;

const MS: Duration = Duration::from_millis(1);

fn config(t_read: Duration, t_prog: Duration) -> NandConfig {
    NandConfig {
        t_read,
        t_prog,
        ..NandConfig::default()
    }
}

/// A NandStorage over memory holding `name` with `len` bytes, written around the model so
/// that no programs are outstanding.
fn with_file(cfg: NandConfig, name: &str, len: usize) -> (NandStorage, Vec<u8>) {
    let mem = MemStorage::new();
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    let f = mem.create(name).unwrap();
    f.append(&data, IoPurpose::Other).unwrap();
    (NandStorage::new(Arc::new(mem), cfg), data)
}

#[test]
fn storage_is_send_sync() {
    fn check<T: Send + Sync + 'static>() {}
    check::<NandStorage>();
}

#[test]
fn single_page_read_takes_tr_plus_transfer() {
    let cfg = config(2 * MS, 2 * MS);
    let (nand, data) = with_file(cfg.clone(), "t", 64 * 1024);
    let f = nand.open("t").unwrap();
    let start = Instant::now();
    let got = f.read_at(100, 4096, IoPurpose::Data).unwrap();
    let took = start.elapsed();
    assert_eq!(got, data[100..4196]);
    let expected = cfg.modeled_page_read(4096);
    assert!(took >= expected, "took {took:?}, expected >= {expected:?}");
    // Loose: a loaded machine may deschedule us for a few milliseconds.
    assert!(took < expected * 3 + 20 * MS, "took {took:?}");
    let s = nand.stats();
    assert_eq!(s.page_reads[IoPurpose::Data as usize], 1);
    assert_eq!(s.read_requests[IoPurpose::Data as usize], 1);
    assert_eq!(s.page_reads.iter().sum::<u64>(), 1);
    assert!(s.read_time_ns >= duration_ns(expected));
    nand.reset_stats();
    assert_eq!(nand.stats(), NandStats::default());
}

#[test]
fn read_spanning_three_pages_counts_three() {
    let cfg = config(2 * MS, 2 * MS);
    let ps = cfg.page_size;
    let (nand, data) = with_file(cfg, "t", 4 * ps);
    let f = nand.open("t").unwrap();
    let got = f
        .read_at(ps as u64 - 10, ps + 20, IoPurpose::Index)
        .unwrap();
    assert_eq!(got, data[ps - 10..2 * ps + 10]);
    let s = nand.stats();
    assert_eq!(s.page_reads[IoPurpose::Index as usize], 3);
    assert_eq!(s.read_requests[IoPurpose::Index as usize], 1);
}

/// The schedule itself, with a fixed issue time, so no thread timing is involved.
#[test]
fn schedule_overlaps_dies_and_serializes_a_die() {
    let cfg = config(2 * MS, 2 * MS);
    let ps = cfg.page_size as u64;
    let dies = cfg.dies() as u64;
    let device = Device::new(cfg.clone());
    let now = Instant::now() + 10 * MS; // after the timeline's initial instants
    let one = cfg.modeled_page_read(4096);
    // Pages 0 and 1 are on different dies and channels: both finish after one read.
    let (a, _) = device.schedule_read(now, 0, 0, 4096);
    let (b, _) = device.schedule_read(now, 0, ps, 4096);
    assert_eq!(a - now, one);
    assert_eq!(b - now, one);
    // Page `channels` shares page 0's channel but not its die: only the transfer queues.
    let (d, _) = device.schedule_read(now, 0, cfg.channels as u64 * ps, 4096);
    assert_eq!(d - now, cfg.t_read + 2 * cfg.transfer_time(4096));
    // Page `dies` is on the same die as page 0: it waits for page 0's tR.
    let (c, _) = device.schedule_read(now, 0, dies * ps, 4096);
    assert_eq!(c - now, 2 * cfg.t_read + cfg.transfer_time(4096));
    // A program (page 6: die and channel still idle) makes its die busy for later reads.
    let p = device.schedule_programs(now, 0, 6..=6);
    assert_eq!(p - now, cfg.transfer_time(cfg.page_size) + cfg.t_prog);
    let (e, _) = device.schedule_read(now, 0, 6 * ps, 4096);
    assert_eq!(e - p, one);
}

/// Two threads reading one page each, released together. Returns the time from the
/// earliest issue to the latest completion, and each read's own latency.
fn concurrent_reads(nand: &NandStorage, offsets: [u64; 2]) -> (Duration, Vec<Duration>) {
    let f = nand.open("t").unwrap();
    let barrier = Barrier::new(2);
    let spans: Vec<(Instant, Instant)> = thread::scope(|s| {
        let handles: Vec<_> = offsets
            .into_iter()
            .map(|off| {
                let (f, barrier) = (&f, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let begin = Instant::now();
                    f.read_at(off, 4096, IoPurpose::Value).unwrap();
                    (begin, Instant::now())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let first = spans.iter().map(|s| s.0).min().unwrap();
    let last = spans.iter().map(|s| s.1).max().unwrap();
    (last - first, spans.iter().map(|(b, e)| *e - *b).collect())
}

#[test]
fn concurrent_reads_overlap_on_different_dies_and_serialize_on_one() {
    // A long tR so that thread start-up jitter is small next to it.
    let cfg = config(20 * MS, 20 * MS);
    let ps = cfg.page_size as u64;
    let dies = cfg.dies() as u64;
    let (nand, _) = with_file(cfg.clone(), "t", (dies as usize + 1) * cfg.page_size);
    let one = cfg.modeled_page_read(4096);

    let (parallel, each) = concurrent_reads(&nand, [0, ps]);
    assert!(each.iter().all(|d| *d >= one), "reads took {each:?}");
    assert!(
        parallel < 2 * cfg.t_read,
        "parallel {parallel:?} should overlap"
    );

    // Whichever read is booked second on the shared die waits for the first one's tR.
    let (serial, each) = concurrent_reads(&nand, [0, dies * ps]);
    assert!(each.iter().all(|d| *d >= one), "reads took {each:?}");
    assert!(serial >= 2 * cfg.t_read, "serial {serial:?}");
    assert!(serial < 3 * (2 * cfg.t_read), "serial {serial:?}");
    assert_eq!(nand.stats().page_reads[IoPurpose::Value as usize], 4);
}

#[test]
fn appends_program_full_pages_and_sync_waits_for_programs() {
    let cfg = config(2 * MS, 20 * MS);
    let ps = cfg.page_size;
    let nand = NandStorage::new(Arc::new(MemStorage::new()), cfg.clone());
    let data: Vec<u8> = (0..ps * 5 / 2).map(|i| (i % 253) as u8).collect();
    let f = nand.create("log").unwrap();
    let start = Instant::now();
    for chunk in data.chunks(1000) {
        f.append(chunk, IoPurpose::Log).unwrap();
    }
    // Appends do not wait for programs.
    assert!(
        start.elapsed() < cfg.t_prog,
        "appends took {:?}",
        start.elapsed()
    );
    assert_eq!(f.len(), data.len() as u64);
    assert_eq!(nand.stats().page_programs[IoPurpose::Log as usize], 2);

    let sync_start = Instant::now();
    f.sync().unwrap();
    let took = sync_start.elapsed();
    let s = nand.stats();
    assert_eq!(s.page_programs[IoPurpose::Log as usize], 3);
    assert!(took >= cfg.t_prog, "sync took {took:?}");
    assert!(s.sync_wait_ns >= duration_ns(cfg.t_prog));
    assert!(
        took < 3 * (cfg.t_prog + cfg.transfer_time(ps)),
        "sync took {took:?}"
    );

    // Nothing new to program: a second sync neither programs nor waits.
    let again = Instant::now();
    f.sync().unwrap();
    assert!(again.elapsed() < cfg.t_prog);
    assert_eq!(nand.stats().page_programs[IoPurpose::Log as usize], 3);

    // Filling the synced partial page programs it again.
    f.append(&vec![0u8; ps / 2], IoPurpose::Log).unwrap();
    assert_eq!(nand.stats().page_programs[IoPurpose::Log as usize], 4);
}

#[test]
fn read_waits_for_program_on_its_die() {
    let cfg = config(2 * MS, 20 * MS);
    let nand = NandStorage::new(Arc::new(MemStorage::new()), cfg.clone());
    let f = nand.create("t").unwrap();
    let start = Instant::now();
    f.append(&vec![1u8; cfg.page_size], IoPurpose::Data)
        .unwrap();
    let r = nand.open("t").unwrap();
    r.read_at(0, 100, IoPurpose::Data).unwrap();
    assert!(start.elapsed() >= cfg.t_prog + cfg.t_read);
}

#[test]
fn data_round_trips() {
    let cfg = NandConfig {
        t_read: Duration::from_micros(20),
        t_prog: Duration::from_micros(50),
        ..NandConfig::default()
    };
    let ps = cfg.page_size;
    let nand = NandStorage::new(Arc::new(MemStorage::new()), cfg);
    let data: Vec<u8> = (0..3 * ps + 123).map(|i| (i * 31 % 256) as u8).collect();
    let f = nand.create("a").unwrap();
    f.append(&data[..5000], IoPurpose::Other).unwrap();
    f.append(&data[5000..], IoPurpose::Other).unwrap();
    f.sync().unwrap();
    let r = nand.open("a").unwrap();
    assert_eq!(r.len().unwrap(), data.len() as u64);
    assert_eq!(r.read_at(0, data.len(), IoPurpose::Other).unwrap(), data);
    assert_eq!(
        r.read_at(ps as u64 - 1, ps + 2, IoPurpose::Other).unwrap(),
        data[ps - 1..2 * ps + 1]
    );
    assert!(r
        .read_at(data.len() as u64 - 1, 2, IoPurpose::Other)
        .is_err());
    assert_eq!(r.read_at(7, 0, IoPurpose::Other).unwrap(), Vec::<u8>::new());
    nand.rename("a", "b").unwrap();
    assert!(!nand.exists("a").unwrap());
    assert_eq!(nand.list().unwrap(), vec!["b".to_string()]);
    nand.delete("b").unwrap();
    assert!(nand.open("b").is_err());
}

#[test]
fn truncate_passes_through_and_refills_the_cut_page() {
    let cfg = NandConfig {
        t_read: Duration::from_micros(20),
        t_prog: Duration::from_micros(50),
        ..NandConfig::default()
    };
    let ps = cfg.page_size;
    let mem = MemStorage::new();
    let nand = NandStorage::new(Arc::new(mem.clone()), cfg);
    let f = nand.create("a").unwrap();
    f.append(&vec![1u8; ps + 100], IoPurpose::Log).unwrap();
    assert_eq!(nand.stats().page_programs[IoPurpose::Log as usize], 1);
    f.truncate(ps as u64 - 10).unwrap();
    assert_eq!(f.len(), ps as u64 - 10);
    assert_eq!(mem.total_bytes(), ps as u64 - 10);
    assert_eq!(
        f.truncate(ps as u64).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(f.len(), ps as u64 - 10);
    // Truncation itself programs nothing; refilling the cut page programs it again.
    assert_eq!(nand.stats().page_programs[IoPurpose::Log as usize], 1);
    f.append(&[2u8; 10], IoPurpose::Log).unwrap();
    assert_eq!(nand.stats().page_programs[IoPurpose::Log as usize], 2);
    let r = nand.open("a").unwrap();
    let mut want = vec![1u8; ps - 10];
    want.extend_from_slice(&[2u8; 10]);
    assert_eq!(r.read_at(0, ps, IoPurpose::Log).unwrap(), want);
}

#[test]
fn failed_partial_append_is_tracked_and_can_be_truncated() {
    use crate::storage::{Fault, FaultError, FaultStorage, IoKind};
    let cfg = NandConfig {
        t_read: Duration::from_micros(20),
        t_prog: Duration::from_micros(50),
        ..NandConfig::default()
    };
    let fault = FaultStorage::new();
    let nand = NandStorage::new(Arc::new(fault.clone()), cfg);
    let f = nand.create("a").unwrap();
    f.append(b"head", IoPurpose::Log).unwrap();
    fault.inject(Some(Fault {
        kind: IoKind::Append,
        nth: 0,
        error: FaultError::Eio,
        sticky: false,
        partial: true,
    }));
    assert!(f.append(b"123456", IoPurpose::Log).is_err());
    assert_eq!(f.len(), 7);
    f.truncate(4).unwrap();
    assert_eq!(f.len(), 4);
    assert_eq!(fault.file_len("a"), Some(4));
    f.append(b"tail", IoPurpose::Log).unwrap();
    f.sync().unwrap();
    let r = nand.open("a").unwrap();
    assert_eq!(r.read_at(0, 8, IoPurpose::Log).unwrap(), b"headtail");
}
