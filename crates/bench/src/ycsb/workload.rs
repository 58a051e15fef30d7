//! The six YCSB core workloads: their operation mixes and request distributions, and the
//! record keys (`user` followed by a hash of the record number, so that insert order is not
//! key order).

use super::distribution::{fnv_hash64, Chooser};
use anyhow::{bail, Result};

/// An operation of the core workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Update,
    Insert,
    Scan,
    /// Read-modify-write: a read, then an update of the same record.
    Rmw,
}

impl Op {
    pub const ALL: [Op; 5] = [Op::Read, Op::Update, Op::Insert, Op::Scan, Op::Rmw];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Update => "update",
            Op::Insert => "insert",
            Op::Scan => "scan",
            Op::Rmw => "rmw",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// How a workload picks the records it reads, updates or scans from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Distribution {
    Zipfian,
    Latest,
    Uniform,
}

impl Distribution {
    /// A chooser over `records` records.
    pub fn chooser(self, records: u64) -> Chooser {
        match self {
            Distribution::Zipfian => Chooser::zipfian(records),
            Distribution::Latest => Chooser::latest(records),
            Distribution::Uniform => Chooser::uniform(),
        }
    }
}

/// YCSB core workload A to F.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    A,
    B,
    C,
    D,
    E,
    F,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::A => "a",
            Workload::B => "b",
            Workload::C => "c",
            Workload::D => "d",
            Workload::E => "e",
            Workload::F => "f",
        }
    }

    /// `a,b,...` (case-insensitive).
    pub fn parse_list(list: &str) -> Result<Vec<Workload>> {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let w = match name.to_ascii_lowercase().as_str() {
                "a" => Workload::A,
                "b" => Workload::B,
                "c" => Workload::C,
                "d" => Workload::D,
                "e" => Workload::E,
                "f" => Workload::F,
                _ => bail!("unknown YCSB workload {name:?} (a to f)"),
            };
            out.push(w);
        }
        if out.is_empty() {
            bail!("no YCSB workload given");
        }
        Ok(out)
    }

    /// The operations and their proportions (summing to 100).
    pub fn mix(self) -> &'static [(Op, u32)] {
        match self {
            Workload::A => &[(Op::Read, 50), (Op::Update, 50)],
            Workload::B => &[(Op::Read, 95), (Op::Update, 5)],
            Workload::C => &[(Op::Read, 100)],
            Workload::D => &[(Op::Read, 95), (Op::Insert, 5)],
            Workload::E => &[(Op::Scan, 95), (Op::Insert, 5)],
            Workload::F => &[(Op::Read, 50), (Op::Rmw, 50)],
        }
    }

    /// The operation whose share of the mix `roll` (in `0..100`) falls into.
    pub fn op(self, roll: u32) -> Op {
        let mut upto = 0;
        for &(op, share) in self.mix() {
            upto += share;
            if roll < upto {
                return op;
            }
        }
        self.mix()[self.mix().len() - 1].0
    }

    /// YCSB's request distribution of the workload: latest for D, zipfian for the others.
    pub fn distribution(self) -> Distribution {
        match self {
            Workload::D => Distribution::Latest,
            _ => Distribution::Zipfian,
        }
    }

    /// What the workload is, in a line.
    pub fn describe(self) -> &'static str {
        match self {
            Workload::A => "update heavy: 50% read, 50% update, zipfian",
            Workload::B => "read mostly: 95% read, 5% update, zipfian",
            Workload::C => "read only: 100% read, zipfian",
            Workload::D => "read latest: 95% read, 5% insert, latest",
            Workload::E => "short ranges: 95% scan, 5% insert, zipfian start, uniform length",
            Workload::F => "read-modify-write: 50% read, 50% rmw, zipfian",
        }
    }
}

/// The key of record `n`: `user` and the decimal FNV-1a hash of `n`.
pub fn record_key(n: u64) -> Vec<u8> {
    format!("user{}", fnv_hash64(n)).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_sum_to_a_hundred_and_rolls_map_to_them() {
        for w in Workload::parse_list("a,b,c,d,e,f").unwrap() {
            assert_eq!(w.mix().iter().map(|m| m.1).sum::<u32>(), 100, "{w:?}");
            for &(op, share) in w.mix() {
                let n = (0..100).filter(|&r| w.op(r) == op).count();
                assert_eq!(n as u32, share, "{w:?} {op:?}");
            }
        }
        assert!(Workload::parse_list("g").is_err());
        assert!(Workload::parse_list("").is_err());
        assert_eq!(
            Workload::parse_list(" A ,e").unwrap(),
            [Workload::A, Workload::E]
        );
    }

    #[test]
    fn keys_are_not_in_insert_order() {
        let keys: Vec<Vec<u8>> = (0..100).map(record_key).collect();
        assert!(keys.iter().all(|k| k.starts_with(b"user")));
        let mut sorted = keys.clone();
        sorted.sort();
        assert_ne!(sorted, keys);
        sorted.dedup();
        assert_eq!(sorted.len(), 100);
    }
}
