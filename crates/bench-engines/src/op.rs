//! What an engine was doing when it failed: the first half of an [`EngineError`]'s message,
//! the engine's own error the second.
//!
//! [`EngineError`]: crate::error::EngineError

use std::fmt;
use std::path::PathBuf;

/// An operation of an engine, as an error names it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Opening the database (or environment) at `path`.
    Open {
        /// The database's directory.
        path: PathBuf,
    },
    /// Creating the file at `path`.
    Create {
        /// The file.
        path: PathBuf,
    },
    /// A put.
    Put,
    /// A get.
    Get,
    /// Puts sent together.
    PutMany,
    /// Gets sent together.
    GetMany,
    /// Writing the memtable (or the buffers) out.
    Flush,
    /// Compacting the key range.
    Compact,
    /// Waiting until background compactions are done.
    WaitForCompactions,
    /// Releasing the database.
    Close,
    /// Finding the tables a get would consult.
    GetPath,
    /// Reading a namespace's counters.
    NamespaceStats,
    /// Making an iterator.
    Iterate,
    /// Positioning an iterator.
    Seek,
    /// Moving an iterator to its next entry.
    Next,
    /// Creating namespace `name`.
    CreateNamespace {
        /// The namespace's name.
        name: String,
    },
    /// Finding an existing namespace by its id.
    FindNamespace {
        /// The namespace id.
        nsid: u32,
    },
    /// Opening namespace `nsid` with its secret.
    OpenNamespace {
        /// The namespace id.
        nsid: u32,
    },
    /// Listing the namespaces.
    ListNamespaces,
    /// Giving namespace `nsid` its settings.
    ConfigureNamespace {
        /// The namespace id.
        nsid: u32,
    },
    /// Connecting to the device at `addr`.
    Connect {
        /// `HOST:PORT` of the device.
        addr: String,
    },
    /// Proving the admin credential.
    AuthenticateAdmin,
    /// Opening a device iterator.
    OpenIterator,
    /// Fetching entries of device iterator `id`.
    ReadIterator {
        /// The device's iterator id.
        id: u32,
    },
    /// Closing device iterator `id`.
    CloseIterator {
        /// The device's iterator id.
        id: u32,
    },
    /// Starting the thread that frees full skiplists.
    StartDropper,
    /// Appending a record to the log.
    Append,
    /// Writing the log's buffer out.
    WriteLog,
    /// Finding a free loopback port.
    FindPort,
    /// Resolving the directory `path`.
    Resolve {
        /// The directory.
        path: PathBuf,
    },
    /// Starting the server process.
    StartServer,
    /// Stopping the server process.
    StopServer,
    /// Making the block cache.
    CreateCache,
    /// Beginning a write transaction.
    WriteTxn,
    /// Beginning a read transaction.
    ReadTxn,
    /// Committing a write transaction.
    Commit,
    /// Writing the dirty pages out and syncing.
    Sync,
    /// Opening (or creating) the partition `name` of a keyspace.
    OpenPartition {
        /// The partition's name.
        name: String,
    },
    /// Creating (or opening) the database `name` of an environment (`None`: the unnamed one).
    CreateDatabase {
        /// The database's name.
        name: Option<String>,
    },
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Open { path } => write!(f, "opening {}", path.display()),
            Op::Create { path } => write!(f, "creating {}", path.display()),
            Op::Put => f.write_str("putting"),
            Op::Get => f.write_str("getting"),
            Op::PutMany => f.write_str("putting a batch"),
            Op::GetMany => f.write_str("getting a batch"),
            Op::Flush => f.write_str("flushing"),
            Op::Compact => f.write_str("compacting"),
            Op::WaitForCompactions => f.write_str("waiting for compactions"),
            Op::Close => f.write_str("closing"),
            Op::GetPath => f.write_str("finding a get's path"),
            Op::NamespaceStats => f.write_str("reading namespace stats"),
            Op::Iterate => f.write_str("making an iterator"),
            Op::Seek => f.write_str("seeking"),
            Op::Next => f.write_str("reading the next entry"),
            Op::CreateNamespace { name } => write!(f, "creating namespace {name}"),
            Op::FindNamespace { nsid } => write!(f, "finding namespace {nsid}"),
            Op::OpenNamespace { nsid } => write!(f, "opening namespace {nsid}"),
            Op::ListNamespaces => f.write_str("listing namespaces"),
            Op::ConfigureNamespace { nsid } => write!(f, "configuring namespace {nsid}"),
            Op::Connect { addr } => write!(f, "connecting to the device at {addr}"),
            Op::AuthenticateAdmin => f.write_str("authenticating as admin"),
            Op::OpenIterator => f.write_str("opening a device iterator"),
            Op::ReadIterator { id } => write!(f, "reading device iterator {id}"),
            Op::CloseIterator { id } => write!(f, "closing device iterator {id}"),
            Op::StartDropper => f.write_str("starting the skiplist dropper"),
            Op::Append => f.write_str("appending to the log"),
            Op::WriteLog => f.write_str("writing the log"),
            Op::FindPort => f.write_str("finding a free loopback port"),
            Op::Resolve { path } => write!(f, "resolving {}", path.display()),
            Op::StartServer => f.write_str("starting the server"),
            Op::StopServer => f.write_str("stopping the server"),
            Op::CreateCache => f.write_str("creating the block cache"),
            Op::WriteTxn => f.write_str("beginning a write transaction"),
            Op::ReadTxn => f.write_str("beginning a read transaction"),
            Op::Commit => f.write_str("committing"),
            Op::Sync => f.write_str("syncing"),
            Op::OpenPartition { name } => write!(f, "opening partition {name}"),
            Op::CreateDatabase { name: Some(name) } => write!(f, "creating database {name}"),
            Op::CreateDatabase { name: None } => f.write_str("creating the unnamed database"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_say_what_and_where() {
        let open = Op::Open {
            path: PathBuf::from("/db"),
        };
        assert_eq!(open.to_string(), "opening /db");
        assert_eq!(
            Op::ReadIterator { id: 7 }.to_string(),
            "reading device iterator 7"
        );
        assert_eq!(
            Op::CreateNamespace { name: "t".into() }.to_string(),
            "creating namespace t"
        );
    }
}
