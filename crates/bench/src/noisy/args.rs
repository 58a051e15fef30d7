//! The command line of `cerberus-bench noisy`.

use cerberus_bench_engines::{LayoutArg, StorageArg};
use clap::Parser;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cerberus-bench noisy",
    bin_name = "cerberus-bench noisy",
    about = "A victim tenant's gets alone, beside writing neighbours, and after settling"
)]
pub struct Args {
    /// Neighbour tenants, one writing thread each.
    #[arg(long, default_value_t = 7)]
    pub neighbours: usize,
    /// Keys the victim loads (random order) before the phases.
    #[arg(long, default_value_t = 50_000)]
    pub victim_keys: u64,
    /// Each neighbour puts this many times the victim's keys in the noisy phase.
    #[arg(long, default_value_t = 2)]
    pub write_factor: u64,
    /// Gets of the victim in the alone and settled phases [default: --victim-keys].
    #[arg(long)]
    pub victim_gets: Option<u64>,
    /// Layouts, each on a fresh database (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "per_namespace,shared,baseline"
    )]
    pub layouts: Vec<LayoutArg>,
    /// Storages, each on a fresh database (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "nand,posix")]
    pub storages: Vec<StorageArg>,
    /// Cache bytes (filters and indexes); 0 as the multitenant grid's nand0 and posix.
    #[arg(long, default_value_t = 0)]
    pub cache_bytes: u64,
    /// Keep the engine's own sizes instead of `--profile paper`'s (small memtable and
    /// levels, so that the neighbours' writes flush and compact within the phase).
    #[arg(long)]
    pub no_profile: bool,
    /// Through a device started in this process on a loopback port instead of the embedded
    /// engine, with the device's own sizes (no profile) and no namespace counters (filter
    /// loads and pages are null).
    #[arg(long)]
    pub device: bool,
    /// The device's I/O shares (`[shares] enabled`), a run for each (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "on")]
    pub shares: Vec<OnOff>,
    /// The device: operations per second reserved for the victim (0: none).
    #[arg(long, default_value_t = 0)]
    pub victim_reservation: u64,
    /// The device's network threads (1, as the device's shares tests run it).
    #[arg(long, default_value_t = 1)]
    pub network_threads: usize,
    /// Pin the device's network threads and lanes to CPUs (`scheduler.pin_cores`; the
    /// first network thread on the first CPU), and the clients' threads to the last CPU.
    #[arg(long)]
    pub pin_cores: bool,
    /// The device's network threads' nice value (`scheduler.network_nice`; below 0 needs
    /// root).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub network_nice: i32,
    /// The device's `network_frames_per_turn` (unset: the device's default; 0: a reader
    /// reads on until its socket is empty).
    #[arg(long)]
    pub frames_per_turn: Option<usize>,
    /// The device's lanes' (background work's) nice value (`scheduler.background_nice`;
    /// the device's default unless given).
    #[arg(long, default_value_t = cerberus_device::SchedulerConfig::default().background_nice,
          allow_negative_numbers = true)]
    pub background_nice: i32,
    /// The victim's client thread's nice value in every phase (0: the process's; below 0
    /// needs root), as a model of a client on a machine of its own.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub victim_nice: i32,
    /// Run the neighbours' client threads at nice 19, as a model of clients on other
    /// machines; a run for each (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "off")]
    pub neighbours_niced: Vec<OnOff>,
    /// Puts each neighbour sends together (pipelined on the device).
    #[arg(long, default_value_t = 1)]
    pub neighbour_batch: u64,
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    #[arg(long, default_value_t = 1024)]
    pub value_size: usize,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Directory for the databases (default: a temporary one; each run deletes its own).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Writes the document here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `on` or `off` (`--shares`, `--neighbours-niced`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    pub fn on(self) -> bool {
        self == OnOff::On
    }
}
