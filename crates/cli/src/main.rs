//! `cerberus`: runs the device (`serve`) and talks to one (namespaces, keys, stats, bulk load).

mod backup;
mod cluster;
mod error_text;
mod keys;
mod limits;
mod load;
mod many;
mod ns;
mod nvme_key;
mod query;
mod scan;
mod session;
mod stats;
mod target;
mod tenant;
mod transfer;
mod verify;

use anyhow::Result;
use cerberus_proto::StoreMode;
use cerberus_server::ServeArgs;
use clap::{Parser, Subcommand};
use error_text::error_text;
use session::Session;
use std::process::ExitCode;
use target::{AdminAuth, DataTarget};

/// The device's allocator (`cerberus serve`): the engine frees on background threads what the writers allocated
/// (frozen memtables), which glibc malloc serializes on its arena lock, and mimalloc does not.
/// The bench measures the device on the same one.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "cerberus",
    version,
    about = "Cerberus multi-tenant key-value device",
    after_help = "Exit codes: 0 done; 1 the key does not exist (get, delete, exists); 2 error.\n\
                  Run `cerberus COMMAND --help` for the flags of a command."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Runs the device until SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Namespaces: create, destroy, list (admin).
    #[command(subcommand)]
    Ns(ns::NsCmd),
    /// Reads every table and value-log segment of a stopped device back and checks every
    /// checksum; prints each damage (file, offset, what), exit code 1 if any.
    Verify(verify::VerifyArgs),
    /// Prints a new DH-HMAC-CHAP secret for an NVMe/TCP host (`DHHC-1:01:...:`, the form `nvme
    /// gen-dhchap-key --hmac=1` prints): the device's [nvme.host_secrets] entry for the host,
    /// and the host's --dhchap-secret (or CERBERUS_DHCHAP_SECRET).
    NvmeKey,
    /// Writes a consistent backup of the device (its data, namespaces, indexes and
    /// credentials) to a new directory on the device's machine, while writes go on (admin).
    /// Restore: `cerberus serve --data-dir DIR`.
    Backup(backup::BackupArgs),
    /// Tenants spread over several devices: the cluster description, create, list, destroy,
    /// reshard (docs/cluster.md).
    Cluster(cluster::ClusterArgs),
    /// Stores a value under a key; the value comes from VALUE or, without it, from stdin.
    ///
    /// Without VALUE the value is standard input, byte for byte (`cerberus put KEY < FILE`;
    /// binary values are fine). A value too long for a command line belongs there too.
    #[command(after_help = limits::help())]
    Put {
        /// The key (1 to max_key_len bytes).
        key: String,
        /// The value (up to max_value_len bytes); left out: read from standard input.
        value: Option<String>,
        /// Only if the key does not exist yet (else exit code 2: key exists).
        #[arg(long, conflicts_with = "if_present")]
        if_absent: bool,
        /// Only if the key exists (else exit code 2: key does not exist).
        #[arg(long)]
        if_present: bool,
        /// Acknowledge only once the write is durable.
        #[arg(long)]
        sync: bool,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Writes a key's value to stdout; exit code 1 if the key does not exist.
    ///
    /// The value is written exactly as stored, nothing added, so `cerberus get KEY > FILE`
    /// gives back the bytes `cerberus put KEY < FILE` stored. One exception, for reading at a
    /// terminal: when stdout is a terminal and the value is UTF-8 text that does not end in a
    /// newline, a newline follows it.
    ///
    /// With several keys: a `key<TAB>value` line for each key that has a value, in the order
    /// given, escaped as `scan` prints them; each missing key is named on stderr, and the
    /// exit code is then 1.
    Get {
        /// The key, or several.
        #[arg(required = true)]
        keys: Vec<String>,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Deletes keys: the ones named (exit code 1 if one did not exist), the ones that begin
    /// with --prefix, or those from --start (inclusive) to --end (exclusive).
    ///
    /// A prefix or a range goes in commands of at most the device's max_delete_range_keys
    /// keys each, every one atomic, the whole not: keys written meanwhile into the part
    /// already passed stay. The count deleted goes to stderr. Without --start the range
    /// starts at the first key, without --end it runs to the last.
    Delete {
        /// The keys.
        #[arg(required_unless_present_any = ["prefix", "start", "end", "all"])]
        keys: Vec<String>,
        /// Deletes every key that begins with this.
        #[arg(long, conflicts_with_all = ["keys", "start", "end"])]
        prefix: Option<String>,
        /// First key of the range deleted (inclusive).
        #[arg(long, conflicts_with = "keys")]
        start: Option<String>,
        /// Key where the range deleted ends (exclusive: it stays).
        #[arg(long, conflicts_with = "keys")]
        end: Option<String>,
        /// Every key of the namespace (an empty --prefix, or a range without bounds, is
        /// refused: it would mean the same).
        #[arg(long, conflicts_with_all = ["keys", "prefix", "start", "end"])]
        all: bool,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Prints yes and exits with 0 if the key exists; prints no and exits with 1 if not.
    Exists {
        /// The key.
        key: String,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Lists keys in byte order, one a line.
    ///
    /// --start S: the keys from S on (S itself included). --prefix P: only the keys that
    /// begin with P. Both: the keys that begin with P, from S on (a start before P starts at
    /// P; a start after every key with that prefix lists nothing).
    List {
        /// First key (inclusive); not a prefix: see --prefix.
        #[arg(long)]
        start: Option<String>,
        /// Only keys that begin with this.
        #[arg(long)]
        prefix: Option<String>,
        /// Stop after this many keys (default: all).
        #[arg(long)]
        limit: Option<u64>,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Entries of the namespace at one snapshot, in key order: key, a tab, the value, one
    /// entry a line (tab, newline, backslash, control bytes and invalid UTF-8 escaped as
    /// \t, \n, \\, \xNN). Writes made while it runs are not in it.
    Scan {
        /// First key (inclusive).
        #[arg(long)]
        start: Option<String>,
        /// Only keys that begin with this.
        #[arg(long)]
        prefix: Option<String>,
        /// Stop after this many entries (default: all).
        #[arg(long)]
        limit: Option<u64>,
        /// Keys only, one a line (the device reads no values).
        #[arg(long)]
        keys_only: bool,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Statistics of the namespace (or, with --device-wide, of the device; admin).
    ///
    /// Lookups are gets, exists checks, and the existence checks that deletes and
    /// conditional puts make. Per-lookup figures are given only for reads that lookups
    /// alone make (filter blocks, value-log records); index and data pages are also read
    /// by key listings, so they are shown as totals.
    Stats {
        /// Print the device's statistics as JSON, as they are.
        #[arg(long)]
        json: bool,
        /// The whole device's statistics (needs the admin credential, not a namespace).
        #[arg(long)]
        device_wide: bool,
        /// Count the namespace's keys exactly (a keys-only walk inside the device, at one
        /// snapshot) instead of the estimate.
        #[arg(long, conflicts_with = "device_wide")]
        exact: bool,
        #[command(flatten)]
        target: DataTarget,
        #[command(flatten)]
        admin: AdminAuth,
    },
    /// Bulk load of JSON lines or CSV, with a progress bar.
    ///
    /// JSON lines: every non-empty line is a JSON object, stored as it is under the value of
    /// --key-field. CSV: the first row names the columns; each row is stored as a JSON object
    /// (numbers as numbers) under its --key-field column. A record that cannot be stored (not
    /// JSON, no key, key or value over the device's limits) stops the load, which then says
    /// its line and how many records were stored; with --skip-bad such records are skipped
    /// and reported with their line numbers, and every other record is stored (loading the
    /// same file again overwrites the same keys).
    #[command(after_help = limits::help())]
    Load {
        #[command(flatten)]
        args: load::LoadArgs,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Secondary indexes on JSON attributes: create, drop, list.
    #[command(subcommand)]
    Index(query::IndexCmd),
    /// Records meeting a filter document, found inside the device (through the most
    /// selective index, else a scan), printed as key TAB value, one a line.
    Find(query::FindArgs),
    /// The K records meeting a filter with the smallest (or --desc largest) value of an
    /// attribute, ranked inside the device: key TAB rank value [TAB projection].
    Top(query::TopArgs),
    /// An aggregate over the records meeting a filter: --count, or --sum/--avg/--min/--max
    /// of an attribute.
    Agg(query::AggArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let done = |r: Result<()>| r.map(|()| ExitCode::SUCCESS);
    match cli.cmd {
        Cmd::Serve(args) => done(cerberus_server::serve(args).map_err(Into::into)),
        Cmd::Ns(cmd) => done(ns::run(cmd)),
        Cmd::Verify(args) => verify::run(args),
        Cmd::Backup(args) => done(backup::run(&args)),
        Cmd::Cluster(args) => done(cluster::run(args)),
        Cmd::NvmeKey => {
            println!("{}", nvme_key::new_secret());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Stats {
            json,
            device_wide,
            exact,
            target,
            admin,
        } => done(stats::run(&target, &admin, device_wide, exact, json)),
        Cmd::Put {
            key,
            value,
            if_absent,
            if_present,
            sync,
            target,
        } => {
            let mode = if if_absent {
                StoreMode::OnlyIfAbsent
            } else if if_present {
                StoreMode::OnlyIfPresent
            } else {
                StoreMode::Always
            };
            keys::put(&target, key, value, mode, sync)
        }
        Cmd::Get { keys, target } => match keys.as_slice() {
            [key] => keys::get(&target, key),
            _ => many::get(&target, &keys),
        },
        Cmd::Delete {
            keys,
            prefix,
            start,
            end,
            all,
            target,
        } => {
            let args = many::DeleteArgs {
                keys,
                prefix: if all { Some(String::new()) } else { prefix },
                start,
                end,
                all,
            };
            many::delete(&target, args)
        }
        Cmd::Exists { key, target } => keys::exists(&target, &key),
        Cmd::List {
            start,
            prefix,
            limit,
            target,
        } => keys::list(&target, start.as_deref(), prefix.as_deref(), limit),
        Cmd::Scan {
            start,
            prefix,
            limit,
            keys_only,
            target,
        } => {
            let s = Session::open_keys(&target)?;
            let args = scan::Args {
                start: start.as_deref(),
                prefix: prefix.as_deref(),
                limit,
                keys_only,
            };
            done(scan::run(&s, &args))
        }
        Cmd::Index(cmd) => done(query::index(cmd)),
        Cmd::Find(args) => done(query::find(args)),
        Cmd::Top(args) => done(query::top(args)),
        Cmd::Agg(args) => done(query::agg(args)),
        Cmd::Load { args, target } => {
            let s = Session::open(&target)?;
            done(load::run(&s.ns, s.limits, &args))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every argument of every command, with the command's path.
    fn arguments(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Arg)>) {
        for a in cmd.get_arguments() {
            out.push((path.to_string(), a.clone()));
        }
        for sub in cmd.get_subcommands() {
            arguments(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_has_help() {
        Cli::command().debug_assert();
        let mut all = Vec::new();
        arguments(&Cli::command(), "cerberus", &mut all);
        assert!(all.len() > 30, "walked only {} arguments", all.len());
        for (path, a) in all {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            assert!(a.get_help().is_some(), "{path}: argument {id} has no help");
        }
    }

    #[test]
    fn commands_take_only_their_own_flags() {
        let cli = Cli::command();
        let ids = |path: &[&str]| -> Vec<String> {
            let mut c = &cli;
            for p in path {
                c = c.find_subcommand(p).expect("subcommand");
            }
            c.get_arguments()
                .map(|a| a.get_id().as_str().to_string())
                .collect()
        };
        let serve = ids(&["serve"]);
        for client_flag in ["device", "ns", "secret", "tls_ca", "tls_name"] {
            assert!(
                !serve.iter().any(|a| a == client_flag),
                "serve has --{client_flag}"
            );
        }
        assert!(serve.iter().any(|a| a == "admin_secret"));
        let get = ids(&["get"]);
        assert!(get.iter().any(|a| a == "ns") && get.iter().any(|a| a == "device"));
        assert!(!get.iter().any(|a| a == "admin_secret" || a == "storage"));
        let create = ids(&["ns", "create"]);
        assert!(create.iter().any(|a| a == "admin_secret"));
        assert!(!create.iter().any(|a| a == "ns" || a == "secret"));
    }

    #[test]
    fn causes_are_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::AlreadyExists, "File exists");
        // An error that prints its source, as `afile: File exists` does.
        #[derive(Debug)]
        struct Wrapper(std::io::Error);
        impl std::fmt::Display for Wrapper {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "afile: {}", self.0)
            }
        }
        impl std::error::Error for Wrapper {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = anyhow::Error::new(Wrapper(io)).context("starting");
        assert_eq!(error_text(&e), "starting: afile: File exists");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_text(&e), "outer: inner");
    }
}
