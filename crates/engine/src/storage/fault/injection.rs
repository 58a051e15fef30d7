//! What to fail: the kinds of I/O call, the error a failed call returns, the armed fault and
//! the call counters that decide when it fires.

use std::io;

/// Kinds of I/O call that can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IoKind {
    /// [`Storage::create`](crate::storage::Storage::create).
    Create,
    /// [`WritableFile::append`](crate::storage::WritableFile::append).
    Append,
    /// [`WritableFile::sync`](crate::storage::WritableFile::sync).
    Sync,
    /// [`Storage::sync_dir`](crate::storage::Storage::sync_dir).
    SyncDir,
    /// [`Storage::rename`](crate::storage::Storage::rename).
    Rename,
    /// [`Storage::delete`](crate::storage::Storage::delete).
    Delete,
    /// [`WritableFile::truncate`](crate::storage::WritableFile::truncate).
    Truncate,
    /// [`Storage::open`](crate::storage::Storage::open).
    Open,
    /// [`RandomAccessFile::read_at`](crate::storage::RandomAccessFile::read_at) (`len` of a
    /// readable file never fails and is not counted).
    Read,
}

impl IoKind {
    /// Every kind, in declaration order.
    pub const ALL: [IoKind; 9] = [
        IoKind::Create,
        IoKind::Append,
        IoKind::Sync,
        IoKind::SyncDir,
        IoKind::Rename,
        IoKind::Delete,
        IoKind::Truncate,
        IoKind::Open,
        IoKind::Read,
    ];
    pub(super) const COUNT: usize = IoKind::ALL.len();

    /// The kind's name (`create`, `append`, `sync`, `sync_dir`, ...), for test reports.
    pub fn name(self) -> &'static str {
        match self {
            IoKind::Create => "create",
            IoKind::Append => "append",
            IoKind::Sync => "sync",
            IoKind::SyncDir => "sync_dir",
            IoKind::Rename => "rename",
            IoKind::Delete => "delete",
            IoKind::Truncate => "truncate",
            IoKind::Open => "open",
            IoKind::Read => "read",
        }
    }
}

/// The error an injected fault returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// EIO, the generic failure of a device.
    Eio,
    /// ENOSPC; its kind is `StorageFull`, so the engine reports `Error::NoSpace`.
    NoSpace,
}

impl FaultError {
    /// A fresh `io::Error` carrying the OS error number, as a real failing call would.
    pub fn to_io_error(self) -> io::Error {
        match self {
            FaultError::Eio => io::Error::from_raw_os_error(libc::EIO),
            FaultError::NoSpace => io::Error::from_raw_os_error(libc::ENOSPC),
        }
    }
}

/// A failure to inject with [`FaultStorage::inject`](super::FaultStorage::inject).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The kind of call that fails.
    pub kind: IoKind,
    /// Fail the call of this kind numbered `nth` (0-based), counted from when the fault is armed.
    pub nth: u64,
    /// The error it fails with.
    pub error: FaultError,
    /// Fail every later call of this kind too (until disarmed), not just the nth.
    pub sticky: bool,
    /// For appends: write the first half of the data (len / 2 bytes) before failing, as a
    /// real write can.
    pub partial: bool,
}

/// The armed fault and the call counters.
#[derive(Default)]
pub(super) struct Injection {
    pub(super) fault: Option<Fault>,
    /// Calls per kind since the fault was armed, for `nth`.
    pub(super) since_armed: [u64; IoKind::COUNT],
    /// Calls per kind since the storage was created.
    pub(super) total: [u64; IoKind::COUNT],
    /// Calls failed since the fault was armed.
    pub(super) fired: u64,
}

impl Injection {
    /// Counts a call of `kind` and returns the fault to fail it with, if it must fail.
    pub(super) fn on_call(&mut self, kind: IoKind) -> Option<Fault> {
        self.total[kind as usize] += 1;
        let fault = self.fault.filter(|f| f.kind == kind)?;
        let n = self.since_armed[kind as usize];
        self.since_armed[kind as usize] += 1;
        if n == fault.nth || (fault.sticky && n > fault.nth) {
            self.fired += 1;
            Some(fault)
        } else {
            None
        }
    }
}
