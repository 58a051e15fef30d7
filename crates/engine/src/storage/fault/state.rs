//! The in-memory file system behind [`super::FaultStorage`]: inodes, the current and the
//! durable directory, and the crash that throws away what was never made durable.

use super::crash::{CrashDraws, CrashModel};
use super::injection::{Injection, IoKind};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

#[derive(Default)]
pub(super) struct Contents {
    pub(super) data: Vec<u8>,
    /// Bytes made durable by the last sync; a crash truncates `data` to this.
    pub(super) synced_len: usize,
}

pub(super) struct Inode {
    pub(super) id: u64,
    /// Only ever locked while the storage's state lock is held; the mutex just gives shared
    /// inodes interior mutability.
    pub(super) contents: Mutex<Contents>,
}

pub(super) type InodeRef = Arc<Inode>;

#[derive(Default)]
pub(super) struct State {
    pub(super) current: HashMap<String, InodeRef>,
    pub(super) durable: HashMap<String, InodeRef>,
    /// Inodes with open handles of the current generation, with their handle counts. They count
    /// as used space even when no name refers to them any more (unix semantics).
    open: HashMap<u64, (InodeRef, usize)>,
    pub(super) next_inode: u64,
    /// Bumped by every crash; handles from older generations are dead.
    pub(super) generation: u64,
    pub(super) crashed: bool,
    /// Mutating operations allowed before an injected crash.
    pub(super) countdown: Option<u64>,
    /// Mutating operations performed so far.
    pub(super) ops: u64,
    pub(super) space_limit: Option<u64>,
    pub(super) injection: Injection,
    /// What a crash keeps of unsynced bytes, and the draws of [`CrashModel::Disk`].
    pub(super) crash_model: CrashModel,
    pub(super) crash_draws: Option<CrashDraws>,
}

fn crash_error() -> io::Error {
    io::Error::other("simulated crash")
}

fn stale_error() -> io::Error {
    io::Error::other("simulated crash: stale handle")
}

impl State {
    pub(super) fn check_live(&self) -> io::Result<()> {
        if self.crashed {
            return Err(crash_error());
        }
        Ok(())
    }

    pub(super) fn check_handle(&self, generation: u64) -> io::Result<()> {
        // A crash always bumps the generation, so this also covers the crashed state.
        if generation != self.generation {
            return Err(stale_error());
        }
        Ok(())
    }

    /// Counts a call of `kind` and fails it if the armed fault says so. Callers check this
    /// before `tick`, so an injected failure does not use up the crash countdown.
    pub(super) fn inject(&mut self, kind: IoKind) -> io::Result<()> {
        match self.injection.on_call(kind) {
            Some(fault) => Err(fault.error.to_io_error()),
            None => Ok(()),
        }
    }

    /// Accounts one mutating operation, or performs the armed crash in its place.
    pub(super) fn tick(&mut self) -> io::Result<()> {
        match self.countdown {
            Some(0) => {
                self.crash();
                return Err(crash_error());
            }
            Some(n) => self.countdown = Some(n - 1),
            None => {}
        }
        self.ops += 1;
        Ok(())
    }

    pub(super) fn crash(&mut self) {
        self.current = self.durable.clone();
        if let Some(d) = &mut self.crash_draws {
            d.counts.crashes += 1;
        }
        let mut seen = std::collections::HashSet::new();
        for inode in self.durable.values() {
            if !seen.insert(inode.id) {
                continue;
            }
            let mut c = inode.contents.lock();
            let synced = c.synced_len;
            // What survives is on the disk now: durable from here on.
            c.synced_len = match &mut self.crash_draws {
                Some(draws) => draws.crash_file(&mut c.data, synced),
                None => {
                    c.data.truncate(synced);
                    c.data.len()
                }
            };
        }
        // Inodes reachable only from now-dead handles are lost with them.
        self.open.clear();
        self.crashed = true;
        self.generation += 1;
        // A crash fires once; re-arming is the test's decision.
        self.countdown = None;
    }

    /// Records a new handle on `inode` and returns the generation it belongs to.
    pub(super) fn register(&mut self, inode: &InodeRef) -> u64 {
        self.open
            .entry(inode.id)
            .or_insert_with(|| (inode.clone(), 0))
            .1 += 1;
        self.generation
    }

    pub(super) fn release(&mut self, inode: &Inode, generation: u64) {
        // Handles of older generations were forgotten wholesale by the crash.
        if generation != self.generation {
            return;
        }
        if let Some(entry) = self.open.get_mut(&inode.id) {
            entry.1 -= 1;
            if entry.1 == 0 {
                self.open.remove(&inode.id);
            }
        }
    }

    /// Bytes held by inodes that are named or open.
    pub(super) fn total_bytes(&self) -> u64 {
        let mut live: HashMap<u64, &InodeRef> = HashMap::new();
        for inode in self
            .current
            .values()
            .chain(self.open.values().map(|e| &e.0))
        {
            live.insert(inode.id, inode);
        }
        live.values()
            .map(|i| i.contents.lock().data.len() as u64)
            .sum()
    }
}
