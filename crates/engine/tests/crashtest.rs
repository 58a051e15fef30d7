//! The crash test, in the manner of RocksDB's `db_crashtest.py`: a child process runs a
//! workload on real files and writes its expected state beside them (each operation before
//! it is issued and once it is acknowledged); the parent kills it with SIGKILL at a random
//! moment, opens the database itself, and checks that what recovered is the state after a
//! prefix of the operations that holds every acknowledged one (a killed process loses no
//! byte it handed to the kernel), that `Db::verify` finds nothing damaged and that value-log
//! GC goes on; then the next child continues from there.
//!
//! `cargo test -p cerberus-engine --test crashtest` runs the CI form (a fixed seed, about 40
//! s); `scripts/crashtest --minutes N` runs new seeds until the time is up. Environment:
//! `CERBERUS_CRASHTEST_SEED`, `CERBERUS_CRASHTEST_MINUTES`, `CERBERUS_CRASHTEST_ROUNDS`.
//! Power cuts (torn writes, pages lost or written out of order) are the in-process part:
//! `tests/engine/crash.rs` and the stress test's fault configurations over
//! `CrashModel::Disk`.

use cerberus_engine::{Db, Options, Readable, WriteBatch, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Namespaces the workload writes (created before the first child), and keys in each.
const NAMESPACES: [&str; 3] = ["alpha", "beta", "gamma"];
const KEYS: u32 = 300;

/// `(namespace index, key)` to its value.
type State = BTreeMap<(usize, u32), Vec<u8>>;

/// One operation of a child: its writes (`None`: a delete), applied together.
#[derive(Clone, Debug, Default)]
struct Unit {
    writes: Vec<(usize, u32, Option<Vec<u8>>)>,
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// The value operation `i` of round `round` writes to key `k`: derived, so the expected
/// state names operations only. Sizes cross the inline threshold and the segment size.
fn value(round: u64, i: u64, k: u32) -> Vec<u8> {
    let mut v =
        format!("{{\"round\": {round}, \"op\": {i}, \"key\": {k}, \"pad\": \"").into_bytes();
    let len = [20usize, 200, 3000][((round + i + u64::from(k)) % 3) as usize];
    v.resize(v.len() + len, b'p');
    v.extend_from_slice(b"\"}");
    v
}

fn options(sync: bool) -> Options {
    let mut o = Options::default();
    o.sync = sync;
    o.memtable_bytes = 64 << 10;
    o.vlog_segment_bytes = 256 << 10;
    o.target_table_bytes = 32 << 10;
    o.level1_bytes = 128 << 10;
    o.inline_value_threshold = 64;
    o.vlog_gc_dead_ratio = 0.3;
    o.background_threads = 2;
    o
}

// ---------------------------------------------------------------------------------------
// The child: runs operations until it is killed.

/// The child's entry point: a test that does nothing unless the parent started it.
#[test]
fn crashtest_child() {
    let Ok(dir) = std::env::var("CERBERUS_CRASHTEST_CHILD_DIR") else {
        return;
    };
    let round: u64 = env("CERBERUS_CRASHTEST_ROUND").unwrap_or(0);
    let seed: u64 = env("CERBERUS_CRASHTEST_CHILD_SEED").unwrap_or(0);
    let sync = env::<u64>("CERBERUS_CRASHTEST_SYNC").unwrap_or(0) == 1;
    child(Path::new(&dir), round, seed, sync);
}

/// The workload's namespaces, in `NAMESPACES` order.
fn namespaces(db: &Db) -> Vec<cerberus_engine::Namespace> {
    let listed = db.list_namespaces();
    NAMESPACES
        .iter()
        .map(|name| {
            let id = listed
                .iter()
                .find(|n| n.name == *name)
                .unwrap_or_else(|| panic!("namespace {name} missing"))
                .nsid;
            db.namespace(id).expect("namespace handle")
        })
        .collect()
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

fn child(dir: &Path, round: u64, seed: u64, sync: bool) {
    let db = Db::open(dir.join("db"), options(sync)).expect("child: open");
    let ns = namespaces(&db);
    // Unbuffered: each line is in the kernel once `write` returns, as the engine's appends.
    let mut expected = std::fs::File::create(dir.join("expected.log")).expect("expected.log");
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in 0.. {
        let n = rng.gen_range(0..NAMESPACES.len());
        let roll = rng.gen_range(0..100);
        let line = match roll {
            0..=59 => {
                let k = rng.gen_range(0..KEYS);
                format!("p {n} {k}")
            }
            60..=74 => format!("d {n} {k}", k = rng.gen_range(0..KEYS)),
            75..=89 => {
                let writes: Vec<String> = (0..rng.gen_range(2..8))
                    .map(|_| {
                        let op = if rng.gen_bool(0.8) { 'p' } else { 'd' };
                        format!("{op}{}", rng.gen_range(0..KEYS))
                    })
                    .collect();
                format!("b {n} {}", writes.join(","))
            }
            90..=93 => "s".to_string(),
            94..=96 => "f".to_string(),
            97..=98 => "g".to_string(),
            _ => "c".to_string(),
        };
        let synced_write = rng.gen_bool(0.1);
        let begin = format!("B {i} {}{line}\n", if synced_write { "S " } else { "" });
        expected.write_all(begin.as_bytes()).unwrap();
        let handle = ns[n].with_write_options(WriteOptions { sync: synced_write });
        let r = match line.as_bytes()[0] {
            b'p' => {
                let k: u32 = line.split(' ').nth(2).unwrap().parse().unwrap();
                handle.put(&key(k), &value(round, i, k))
            }
            b'd' => {
                let k: u32 = line.split(' ').nth(2).unwrap().parse().unwrap();
                handle.delete(&key(k))
            }
            b'b' => {
                let mut batch = WriteBatch::new();
                for w in line.split(' ').nth(2).unwrap().split(',') {
                    let k: u32 = w[1..].parse().unwrap();
                    if &w[..1] == "p" {
                        batch.put(key(k), value(round, i, k));
                    } else {
                        batch.delete(key(k));
                    }
                }
                handle.write(batch)
            }
            b's' => db.sync_log(),
            b'f' => db.flush(),
            b'g' => db.gc_value_log().map(|_| ()),
            _ => db.compact_range(None, None),
        };
        match r {
            Ok(()) => expected.write_all(format!("A {i}\n").as_bytes()).unwrap(),
            Err(e) => panic!("child: operation {i} ({line}) failed: {e}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The parent: starts children, kills them, checks what recovered.

/// What the expected-state file says of a round: its operations in order (the last may be
/// in flight), how many were acknowledged, and how many of those were synced.
struct Expected {
    units: Vec<Unit>,
    acked: usize,
    synced: usize,
}

fn parse_expected(path: &Path, round: u64) -> Expected {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut units = Vec::new();
    // Per operation: a synced write or a `sync_log`, which makes every earlier one durable.
    let mut syncs = Vec::new();
    let mut acked = 0;
    // A line cut by the kill belongs to the operation in flight and is ignored.
    for line in text
        .split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
    {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts.as_slice() {
            ["A", i] => {
                let i: usize = i.parse().expect("ack number");
                assert_eq!(i + 1, units.len(), "ack {i} out of order");
                acked = units.len();
            }
            ["B", i, rest @ ..] => {
                let i: u64 = i.parse().expect("op number");
                let (synced, rest) = match rest {
                    ["S", r @ ..] => (true, r),
                    r => (false, r),
                };
                syncs.push(synced || rest.first() == Some(&"s"));
                units.push(parse_unit(round, i, rest));
            }
            _ => {}
        }
    }
    let synced = (0..acked).rev().find(|&i| syncs[i]).map_or(0, |i| i + 1);
    Expected {
        units,
        acked,
        synced,
    }
}

fn parse_unit(round: u64, i: u64, rest: &[&str]) -> Unit {
    let mut u = Unit::default();
    match rest {
        ["p", n, k] => {
            let k = k.parse().unwrap();
            u.writes
                .push((n.parse().unwrap(), k, Some(value(round, i, k))));
        }
        ["d", n, k] => u
            .writes
            .push((n.parse().unwrap(), k.parse().unwrap(), None)),
        ["b", n, ws] => {
            let n: usize = n.parse().unwrap();
            for w in ws.split(',') {
                let k: u32 = w[1..].parse().unwrap();
                let v = (&w[..1] == "p").then(|| value(round, i, k));
                u.writes.push((n, k, v));
            }
        }
        _ => {}
    }
    u
}

fn apply(state: &mut State, unit: &Unit) {
    for (n, k, v) in &unit.writes {
        match v {
            Some(v) => state.insert((*n, *k), v.clone()),
            None => state.remove(&(*n, *k)),
        };
    }
}

fn read_state(db: &Db) -> State {
    let mut s = State::new();
    for (n, ns) in namespaces(db).iter().enumerate() {
        for k in 0..KEYS {
            match ns.get(&key(k)) {
                Ok(Some(v)) => {
                    s.insert((n, k), v.to_vec());
                }
                Ok(None) => {}
                Err(e) => panic!("read of {}/{k} after recovery: {e}", NAMESPACES[n]),
            }
        }
    }
    s
}

/// Figures of a crash test run.
#[derive(Debug, Default)]
struct Figures {
    kills: u64,
    recoveries: u64,
    operations: u64,
    in_flight_kept: u64,
}

fn run_child(exe: &Path, dir: &Path, round: u64, seed: u64, sync: bool, ms: u64) {
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "crashtest_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("CERBERUS_CRASHTEST_CHILD_DIR", dir)
        .env("CERBERUS_CRASHTEST_ROUND", round.to_string())
        .env("CERBERUS_CRASHTEST_CHILD_SEED", seed.to_string())
        .env("CERBERUS_CRASHTEST_SYNC", u64::from(sync).to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the child");
    let until = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < until {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("round {round}: the child ended by itself ({status}): {err}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
}

/// Runs rounds of child, kill and check on one database from `seed` until `rounds` are done
/// or `deadline` passes.
fn crash_rounds(seed: u64, rounds: u64, deadline: Instant) -> Figures {
    let exe = std::env::current_exe().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().to_path_buf();
    let mut rng = SmallRng::seed_from_u64(seed);
    let sync = rng.gen_bool(0.5);
    {
        let db = Db::open(dir.join("db"), options(sync)).unwrap();
        for name in NAMESPACES {
            db.create_namespace(name).unwrap();
        }
        db.close().unwrap();
    }
    let mut state = State::new();
    let mut f = Figures::default();
    for round in 0..rounds {
        if Instant::now() >= deadline {
            break;
        }
        let ms = rng.gen_range(30..1500);
        // A child killed before it made its own file must not leave the last one's.
        let _ = std::fs::remove_file(dir.join("expected.log"));
        run_child(&exe, &dir, round, rng.gen(), sync, ms);
        f.kills += 1;
        let e = parse_expected(&dir.join("expected.log"), round);
        let db = Db::open(dir.join("db"), options(sync))
            .unwrap_or_else(|err| panic!("seed {seed} round {round}: reopen failed: {err}"));
        f.recoveries += 1;
        let got = read_state(&db);
        let mut at = state.clone();
        for u in &e.units[..e.acked] {
            apply(&mut at, u);
        }
        let kept = if got == at {
            e.acked
        } else {
            let mut with_next = at.clone();
            match e.units.get(e.acked) {
                Some(u)
                    if {
                        apply(&mut with_next, u);
                        got == with_next
                    } =>
                {
                    f.in_flight_kept += 1;
                    e.acked + 1
                }
                _ => panic!(
                    "seed {seed} round {round} (sync {sync}): the recovered state is not the \
                     state after the {} acknowledged operations (synced {}), nor with the one \
                     in flight: {}",
                    e.acked,
                    e.synced,
                    diff(&got, &at)
                ),
            }
        };
        f.operations += e.acked as u64;
        let report = db.verify().unwrap();
        assert!(report.is_clean(), "seed {seed} round {round}: {report:?}");
        db.gc_value_log()
            .unwrap_or_else(|err| panic!("seed {seed} round {round}: GC after recovery: {err}"));
        db.close().unwrap();
        drop(db);
        state = got;
        let _ = kept;
    }
    f
}

fn diff(got: &State, want: &State) -> String {
    let keys: std::collections::BTreeSet<_> = got.keys().chain(want.keys()).collect();
    keys.into_iter()
        .filter(|k| got.get(k) != want.get(k))
        .take(5)
        .map(|k| {
            let show = |v: Option<&Vec<u8>>| {
                v.map(|v| String::from_utf8_lossy(&v[..v.len().min(30)]).into_owned())
            };
            format!(
                "{k:?}: got {:?}, want {:?}",
                show(got.get(k)),
                show(want.get(k))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The CI form: one fixed seed, a few dozen kills. `scripts/crashtest` runs new seeds for
/// `CERBERUS_CRASHTEST_MINUTES`.
#[test]
fn crashtest_kills_and_recovers() {
    if std::env::var("CERBERUS_CRASHTEST_CHILD_DIR").is_ok() {
        return;
    }
    let start = Instant::now();
    let mut total = Figures::default();
    let mut seeds = Vec::new();
    match (
        env::<u64>("CERBERUS_CRASHTEST_MINUTES"),
        env::<u64>("CERBERUS_CRASHTEST_SEED"),
    ) {
        (Some(minutes), None) => {
            let deadline = start + Duration::from_secs(minutes * 60);
            let mut seed = rand::random::<u32>() as u64;
            while Instant::now() < deadline {
                eprintln!("crashtest: seed {seed}");
                let f = crash_rounds(seed, 40, deadline);
                seeds.push(seed);
                add(&mut total, &f);
                seed += 1;
            }
        }
        (_, seed) => {
            let seed = seed.unwrap_or(20261129);
            let rounds = env("CERBERUS_CRASHTEST_ROUNDS").unwrap_or(24);
            let f = crash_rounds(seed, rounds, start + Duration::from_secs(3600));
            seeds.push(seed);
            add(&mut total, &f);
        }
    }
    eprintln!(
        "crashtest: {} seeds, {} kills, {} recoveries checked, {} acknowledged operations, \
         {} in-flight operations kept, in {:.0} s",
        seeds.len(),
        total.kills,
        total.recoveries,
        total.operations,
        total.in_flight_kept,
        start.elapsed().as_secs_f64()
    );
    assert!(total.recoveries > 0 && total.operations > 0);
}

fn add(total: &mut Figures, f: &Figures) {
    total.kills += f.kills;
    total.recoveries += f.recoveries;
    total.operations += f.operations;
    total.in_flight_kept += f.in_flight_kept;
}
