//! The typed form of a command: its opcode, its body by opcode ([`Request`]) and the flags
//! their frames carry.

use super::batch::BatchWrite;
use super::settings::NamespaceSettings;
use crate::header::{Header, VERSION};
use bytes::Bytes;

/// The `nsid` of commands addressed to the device rather than a namespace: authenticating as
/// admin, creating and listing namespaces, identify.
pub const DEVICE_NSID: u32 = u32::MAX;

/// Longest secret [`Request::Authenticate`] carries.
pub const MAX_SECRET_LEN: usize = 256;

/// Store flag: fail with `KeyExists` if the key exists.
pub const STORE_ONLY_IF_ABSENT: u8 = 0x01;
/// Store flag: fail with `KeyNotExist` if the key does not exist.
pub const STORE_ONLY_IF_PRESENT: u8 = 0x02;
/// Store flag: the completion waits until the write is durable.
pub const STORE_SYNC: u8 = 0x04;
/// List flag: the start key itself is not listed (paging from the last key seen).
pub const LIST_START_EXCLUSIVE: u8 = 0x01;
/// Iterator open flag: keys only, with empty values (nothing read from the value log).
pub const ITER_KEYS_ONLY: u8 = 0x01;
/// Namespace create flag: the body starts with the namespace's settings (44 bytes), then
/// its name; without it the body is the name alone and the settings are the defaults.
pub const NS_CREATE_SETTINGS: u8 = 0x01;
/// Authenticate flag: the body is the namespace's name (a length byte, then UTF-8) and the
/// secret; the header's nsid is ignored, and the answer's is the namespace's id.
pub const AUTH_BY_NAME: u8 = 0x01;

/// A command's opcode: the KV command set's where it has one, vendor-specific (0xC0 on) for
/// the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// Stores a value under a key (KV command set: Store).
    Store = 0x01,
    /// Reads the value of a key (KV command set: Retrieve).
    Retrieve = 0x02,
    /// Lists keys in order (KV command set: List).
    List = 0x06,
    /// Deletes a key (KV command set: Delete).
    Delete = 0x10,
    /// Whether a key exists (KV command set: Exist).
    Exist = 0x14,
    /// Proves a credential on the connection.
    Authenticate = 0xC0,
    /// Creates a namespace (admin).
    NamespaceCreate = 0xC1,
    /// Destroys a namespace and its data (admin).
    NamespaceDestroy = 0xC2,
    /// Issues a namespace a new credential; the old one stops working at once (admin).
    NamespaceRekey = 0xCF,
    /// Lists the namespaces (admin).
    NamespaceList = 0xC3,
    /// The device's limits.
    Identify = 0xC4,
    /// Statistics of a namespace or of the device.
    Stats = 0xC5,
    /// Opens an iterator at a snapshot.
    IterOpen = 0xC6,
    /// Reads the next entries of an iterator.
    IterNext = 0xC7,
    /// Closes an iterator.
    IterClose = 0xC8,
    /// Changes a namespace's settings: capacity and I/O shares (admin).
    NamespaceConfigure = 0xC9,
    /// Puts and deletes of one namespace, all or none (the KV command set has no multi-key
    /// write).
    WriteBatch = 0xCA,
    /// Deletes the keys of a range, at most a device-set number per command, and says
    /// where the rest begins.
    DeleteRange = 0xCE,
    /// Creates a secondary index.
    IndexCreate = 0xD0,
    /// Drops a secondary index.
    IndexDrop = 0xD1,
    /// Lists a namespace's indexes.
    IndexList = 0xD2,
    /// Runs a query inside the device.
    Query = 0xD3,
    /// Writes a consistent backup of the device's data directory to a directory on the
    /// device's machine (admin).
    Backup = 0xE0,
}

impl Opcode {
    /// Every opcode, in code order.
    pub const ALL: [Opcode; 23] = [
        Opcode::Store,
        Opcode::Retrieve,
        Opcode::List,
        Opcode::Delete,
        Opcode::Exist,
        Opcode::Authenticate,
        Opcode::NamespaceCreate,
        Opcode::NamespaceDestroy,
        Opcode::NamespaceList,
        Opcode::Identify,
        Opcode::Stats,
        Opcode::IterOpen,
        Opcode::IterNext,
        Opcode::IterClose,
        Opcode::NamespaceConfigure,
        Opcode::WriteBatch,
        Opcode::NamespaceRekey,
        Opcode::DeleteRange,
        Opcode::IndexCreate,
        Opcode::IndexDrop,
        Opcode::IndexList,
        Opcode::Query,
        Opcode::Backup,
    ];

    /// The opcode of code `b`, if there is one.
    pub fn from_u8(b: u8) -> Option<Opcode> {
        Opcode::ALL.into_iter().find(|o| *o as u8 == b)
    }

    /// Its name, as metrics and logs spell it.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Store => "store",
            Opcode::Retrieve => "retrieve",
            Opcode::List => "list",
            Opcode::Delete => "delete",
            Opcode::Exist => "exist",
            Opcode::Authenticate => "authenticate",
            Opcode::NamespaceCreate => "ns_create",
            Opcode::NamespaceDestroy => "ns_destroy",
            Opcode::NamespaceRekey => "ns_rekey",
            Opcode::NamespaceList => "ns_list",
            Opcode::Identify => "identify",
            Opcode::Stats => "stats",
            Opcode::IterOpen => "iter_open",
            Opcode::IterNext => "iter_next",
            Opcode::IterClose => "iter_close",
            Opcode::NamespaceConfigure => "ns_configure",
            Opcode::WriteBatch => "write_batch",
            Opcode::DeleteRange => "delete_range",
            Opcode::IndexCreate => "index_create",
            Opcode::IndexDrop => "index_drop",
            Opcode::IndexList => "index_list",
            Opcode::Query => "query",
            Opcode::Backup => "backup",
        }
    }

    /// Whether the command reads or writes a namespace's data (and so needs the namespace's
    /// credential).
    pub fn is_data(self) -> bool {
        matches!(
            self,
            Opcode::Store
                | Opcode::WriteBatch
                | Opcode::DeleteRange
                | Opcode::Retrieve
                | Opcode::List
                | Opcode::Delete
                | Opcode::Exist
                | Opcode::IterOpen
                | Opcode::IterNext
                | Opcode::IterClose
                | Opcode::IndexCreate
                | Opcode::IndexDrop
                | Opcode::IndexList
                | Opcode::Query
        )
    }
}

/// Condition of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// Store whether or not the key exists.
    Always,
    /// Store only if the key does not exist (else `KeyExists`).
    OnlyIfAbsent,
    /// Store only if the key exists (else `KeyNotFound`).
    OnlyIfPresent,
}

/// A command's body, by opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Stores `value` under `key`, on the condition `mode`; with `sync`, answered once durable.
    Store {
        /// The key.
        key: Bytes,
        /// The value.
        value: Bytes,
        /// When to store.
        mode: StoreMode,
        /// Answer only once the value is on stable storage.
        sync: bool,
    },
    /// The value of `key`.
    Retrieve {
        /// The key.
        key: Bytes,
    },
    /// Keys of the namespace in order, from `start` (empty: the first key), at most `max_keys`.
    List {
        /// First key (empty: the first key of the namespace).
        start: Bytes,
        /// Leave `start` itself out (paging from the last key seen).
        start_exclusive: bool,
        /// Most keys in the answer.
        max_keys: u32,
    },
    /// Deletes `key`.
    Delete {
        /// The key.
        key: Bytes,
    },
    /// Applies `writes` (puts and deletes, in order) all together or not at all; with
    /// `sync`, answered once durable.
    WriteBatch {
        /// The writes, at most [`MAX_BATCH_WRITES`].
        writes: Vec<BatchWrite>,
        /// Answer only once the writes are on stable storage.
        sync: bool,
    },
    /// Deletes the keys `k` with `start <= k < end` (an empty `end`: no bound) in key order,
    /// at most `max_keys` and at most the device's `max_delete_range_keys`; the answer says
    /// how many and where the rest begins ([`Reply::RangeDeleted`](crate::Reply)).
    DeleteRange {
        /// First key of the range (empty: the first key of the namespace).
        start: Bytes,
        /// Keys at or above it are past the range (empty: no bound).
        end: Bytes,
        /// Most keys this command deletes.
        max_keys: u32,
    },
    /// Whether `key` exists, without reading its value.
    Exist {
        /// The key.
        key: Bytes,
    },
    /// Proves the connection holds the credential of `nsid` (or, with [`DEVICE_NSID`], the
    /// admin credential).
    Authenticate {
        /// The credential.
        secret: Bytes,
    },
    /// Proves the connection holds the credential of the namespace called `name` (sent with
    /// [`AUTH_BY_NAME`]); the answer's nsid is the namespace's id.
    AuthenticateByName {
        /// The namespace's name.
        name: String,
        /// The credential.
        secret: Bytes,
    },
    /// Creates namespace `name`; the answer holds its id and credential (admin).
    NamespaceCreate {
        /// Its name, unique on the device.
        name: String,
        /// Its settings (`None`: the defaults).
        settings: Option<NamespaceSettings>,
    },
    /// Gives namespace `nsid` new settings, or makes it read-only or writable (admin).
    NamespaceConfigure {
        /// The settings, all of them (what is not to change is sent as it is); `None`: kept.
        settings: Option<NamespaceSettings>,
        /// Make it read-only (`true`) or writable (`false`); `None`: unchanged.
        read_only: Option<bool>,
    },
    /// Destroys namespace `nsid` and its data (admin).
    NamespaceDestroy,
    /// Issues namespace `nsid` a new credential, answered as [`Reply::Created`]; the old one
    /// is refused from then on, by new and open connections alike (admin).
    NamespaceRekey,
    /// Every namespace, id and name (admin).
    NamespaceList,
    /// The device's limits (key and value sizes).
    Identify,
    /// Statistics of the namespace `nsid`, or of the device with [`DEVICE_NSID`].
    Stats,
    /// Opens an iterator over the namespace at a snapshot taken now, positioned at `start`
    /// (empty: the first key), stopping before `upper_bound` (empty: none) and at the end of
    /// the keys that begin with `prefix` (empty: none).
    IterOpen {
        /// First key (empty: the first key of the namespace).
        start: Bytes,
        /// Keys at or above it are past the end (empty: no bound).
        upper_bound: Bytes,
        /// Only keys that begin with it (empty: every key).
        prefix: Bytes,
        /// Keys with empty values: nothing read from the value log.
        keys_only: bool,
    },
    /// The next entries of iterator `iter`: at most `max_entries`, and no more bytes than
    /// `max_bytes` (at least one entry, whatever its size).
    IterNext {
        /// The iterator, as `IterOpen` answered.
        iter: u32,
        /// Most entries in the answer.
        max_entries: u32,
        /// About this many bytes of keys and values in the answer.
        max_bytes: u32,
    },
    /// Closes iterator `iter` and releases its snapshot.
    IterClose {
        /// The iterator.
        iter: u32,
    },
    /// Creates a secondary index of the namespace on a JSON attribute (`vas`: entries hold
    /// value addresses) and completes once it holds every record.
    IndexCreate {
        /// The attribute: a top-level name or a dotted path.
        attr: String,
        /// A value-addressed (VAS) index, else a classic one.
        vas: bool,
    },
    /// Drops the namespace's index on `attr`.
    IndexDrop {
        /// The attribute.
        attr: String,
    },
    /// The namespace's indexes, as a JSON document.
    IndexList,
    /// A query as a JSON document (`docs/protocol.md`, Queries).
    Query {
        /// The query document, JSON.
        query: Bytes,
    },
    /// A backup of the device into `dir`, a directory on the device's machine that must not
    /// exist (admin); the answer is a JSON summary.
    Backup {
        /// The directory: absolute, or relative to the data directory's parent.
        dir: String,
    },
}

/// Index create flag: a value-addressed (VAS) index.
pub const INDEX_VAS: u8 = 0x01;

/// A command: id, namespace and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// The command id, which its completion carries back.
    pub cid: u32,
    /// The namespace it acts on ([`DEVICE_NSID`]: the device).
    pub nsid: u32,
    /// What it asks.
    pub request: Request,
}

impl Request {
    /// The opcode this body is sent under.
    pub fn opcode(&self) -> Opcode {
        match self {
            Request::Store { .. } => Opcode::Store,
            Request::Retrieve { .. } => Opcode::Retrieve,
            Request::List { .. } => Opcode::List,
            Request::Delete { .. } => Opcode::Delete,
            Request::Exist { .. } => Opcode::Exist,
            Request::WriteBatch { .. } => Opcode::WriteBatch,
            Request::DeleteRange { .. } => Opcode::DeleteRange,
            Request::Authenticate { .. } | Request::AuthenticateByName { .. } => {
                Opcode::Authenticate
            }
            Request::NamespaceCreate { .. } => Opcode::NamespaceCreate,
            Request::NamespaceDestroy => Opcode::NamespaceDestroy,
            Request::NamespaceRekey => Opcode::NamespaceRekey,
            Request::NamespaceList => Opcode::NamespaceList,
            Request::NamespaceConfigure { .. } => Opcode::NamespaceConfigure,
            Request::Identify => Opcode::Identify,
            Request::Stats => Opcode::Stats,
            Request::IterOpen { .. } => Opcode::IterOpen,
            Request::IterNext { .. } => Opcode::IterNext,
            Request::IterClose { .. } => Opcode::IterClose,
            Request::IndexCreate { .. } => Opcode::IndexCreate,
            Request::IndexDrop { .. } => Opcode::IndexDrop,
            Request::IndexList => Opcode::IndexList,
            Request::Query { .. } => Opcode::Query,
            Request::Backup { .. } => Opcode::Backup,
        }
    }

    /// Whether it changes what a namespace holds (or which namespaces there are): a command
    /// sent after it on the same connection sees its effect.
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Request::Store { .. }
                | Request::Delete { .. }
                | Request::WriteBatch { .. }
                | Request::DeleteRange { .. }
                | Request::NamespaceCreate { .. }
                | Request::NamespaceDestroy
                | Request::NamespaceRekey
                | Request::NamespaceConfigure { .. }
                | Request::IndexCreate { .. }
                | Request::IndexDrop { .. }
        )
    }

    /// The key the command addresses, if any.
    pub fn key(&self) -> Option<&Bytes> {
        match self {
            Request::Store { key, .. }
            | Request::Retrieve { key }
            | Request::Delete { key }
            | Request::Exist { key } => Some(key),
            _ => None,
        }
    }
}

impl Command {
    /// The header of a point command's frame (Store, Retrieve, Delete, Exist) as
    /// [`Command::encode`] writes it, without encoding the frame: a link that may carry the
    /// command another way (NVMe/TCP's KV commands) encodes it only when it must. `None` for
    /// the other commands, and for a key longer than the frame carries.
    pub fn point_header(&self) -> Option<Header> {
        let (key, value_len, flags) = match &self.request {
            Request::Store {
                key,
                value,
                mode,
                sync,
            } => (key, value.len(), store_flags(*mode, *sync)),
            Request::Retrieve { key } | Request::Delete { key } | Request::Exist { key } => {
                (key, 0, 0)
            }
            _ => return None,
        };
        if key.len() > usize::from(u16::MAX) {
            return None;
        }
        Some(Header {
            version: VERSION,
            opcode: self.request.opcode() as u8,
            word: u16::from(flags),
            cid: self.cid,
            nsid: self.nsid,
            body_len: u32::try_from(2 + key.len() + value_len).ok()?,
        })
    }
}

/// A Store's flags: its mode and sync.
pub(super) fn store_flags(mode: StoreMode, sync: bool) -> u8 {
    let mode = match mode {
        StoreMode::Always => 0,
        StoreMode::OnlyIfAbsent => STORE_ONLY_IF_ABSENT,
        StoreMode::OnlyIfPresent => STORE_ONLY_IF_PRESENT,
    };
    if sync {
        mode | STORE_SYNC
    } else {
        mode
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::split_frame;
    use crate::header::HEADER_LEN;
    use bytes::BytesMut;

    #[test]
    fn a_point_header_is_the_header_encode_writes() {
        let key = Bytes::from_static(b"user:1");
        let value = Bytes::from(vec![7u8; 300]);
        let modes = [
            StoreMode::Always,
            StoreMode::OnlyIfAbsent,
            StoreMode::OnlyIfPresent,
        ];
        let mut requests = vec![
            Request::Retrieve { key: key.clone() },
            Request::Delete { key: key.clone() },
            Request::Exist { key: key.clone() },
        ];
        for mode in modes {
            for sync in [false, true] {
                requests.push(Request::Store {
                    key: key.clone(),
                    value: value.clone(),
                    mode,
                    sync,
                });
            }
        }
        for request in requests {
            let command = Command {
                cid: 77,
                nsid: 5,
                request,
            };
            let mut frame = BytesMut::new();
            command.encode(&mut frame).unwrap();
            let written = Header::decode(frame[..HEADER_LEN].try_into().unwrap());
            assert_eq!(command.point_header(), Some(written), "{command:?}");
        }
        let list = Command {
            cid: 1,
            nsid: 5,
            request: Request::IndexList,
        };
        assert_eq!(list.point_header(), None);
        let long = Command {
            cid: 1,
            nsid: 5,
            request: Request::Exist {
                key: Bytes::from(vec![1u8; 70_000]),
            },
        };
        assert_eq!(long.point_header(), None);
    }

    #[test]
    fn a_delete_range_goes_through_its_frame_unchanged() {
        let command = Command {
            cid: 9,
            nsid: 3,
            request: Request::DeleteRange {
                start: Bytes::from_static(b"user:"),
                end: Bytes::new(),
                max_keys: 10_000,
            },
        };
        let mut out = BytesMut::new();
        command.encode(&mut out).unwrap();
        let frame = split_frame(&mut out, 1 << 20).unwrap().expect("one frame");
        assert_eq!(Command::decode(&frame).unwrap(), command);
    }
}
