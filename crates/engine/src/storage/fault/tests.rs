use super::*;
use crate::storage::{read_all, IoPurpose, RandomAccessFile, Storage, WritableFile};

const P: IoPurpose = IoPurpose::Other;

fn read(fs: &FaultStorage, name: &str) -> Vec<u8> {
    read_all(fs, name, P).unwrap()
}

fn crash_and_restart(fs: &FaultStorage) {
    fs.crash();
    assert!(fs.is_crashed());
    fs.restart();
    assert!(!fs.is_crashed());
}

#[test]
fn unsynced_appends_vanish_synced_ones_stay() {
    let fs = FaultStorage::new();
    let f = fs.create("a").unwrap();
    fs.sync_dir().unwrap();
    f.append(b"hello ", P).unwrap();
    f.sync().unwrap();
    f.append(b"world", P).unwrap();
    assert_eq!(read(&fs, "a"), b"hello world");
    assert_eq!(fs.file_len("a"), Some(11));
    crash_and_restart(&fs);
    assert_eq!(read(&fs, "a"), b"hello ");
    assert_eq!(fs.file_len("a"), Some(6));
}

#[test]
fn created_file_without_sync_dir_is_gone() {
    let fs = FaultStorage::new();
    let f = fs.create("a").unwrap();
    f.append(b"data", P).unwrap();
    f.sync().unwrap();
    crash_and_restart(&fs);
    assert!(!fs.exists("a").unwrap());
    assert_eq!(fs.file_len("a"), None);
    assert!(fs.list().unwrap().is_empty());
}

#[test]
fn rename_and_delete_are_durable_only_after_sync_dir() {
    let fs = FaultStorage::new();
    let f = fs.create("tmp").unwrap();
    f.append(b"v1", P).unwrap();
    f.sync().unwrap();
    fs.sync_dir().unwrap();
    fs.rename("tmp", "final").unwrap();
    crash_and_restart(&fs);
    assert!(fs.exists("tmp").unwrap());
    assert!(!fs.exists("final").unwrap());
    assert_eq!(read(&fs, "tmp"), b"v1");

    fs.rename("tmp", "final").unwrap();
    fs.sync_dir().unwrap();
    fs.delete("final").unwrap();
    crash_and_restart(&fs);
    assert_eq!(fs.list().unwrap(), vec!["final".to_string()]);
    assert_eq!(read(&fs, "final"), b"v1");

    fs.delete("final").unwrap();
    fs.sync_dir().unwrap();
    crash_and_restart(&fs);
    assert!(!fs.exists("final").unwrap());
}

#[test]
fn create_over_existing_name_keeps_old_file_until_sync_dir() {
    let fs = FaultStorage::new();
    let f = fs.create("m").unwrap();
    f.append(b"old", P).unwrap();
    f.sync().unwrap();
    fs.sync_dir().unwrap();
    let g = fs.create("m").unwrap();
    g.append(b"new", P).unwrap();
    g.sync().unwrap();
    assert_eq!(read(&fs, "m"), b"new");
    crash_and_restart(&fs);
    assert_eq!(read(&fs, "m"), b"old");
}

#[test]
fn stale_handles_fail_after_crash_and_storage_fails_while_crashed() {
    let fs = FaultStorage::new();
    let w = fs.create("a").unwrap();
    w.append(b"abc", P).unwrap();
    w.sync().unwrap();
    fs.sync_dir().unwrap();
    let r = fs.open("a").unwrap();
    fs.crash();

    for e in [
        fs.create("b").err(),
        fs.open("a").err(),
        fs.delete("a").err(),
        fs.rename("a", "b").err(),
        fs.list().err(),
        fs.exists("a").err(),
        fs.sync_dir().err(),
    ] {
        let e = e.expect("operation should fail while crashed");
        assert_eq!(e.to_string(), "simulated crash");
    }

    fs.restart();
    let stale = |e: io::Error| {
        assert_eq!(e.kind(), io::ErrorKind::Other);
        assert_eq!(e.to_string(), "simulated crash: stale handle");
    };
    stale(w.append(b"x", P).unwrap_err());
    stale(w.sync().unwrap_err());
    stale(r.read_at(0, 1, P).unwrap_err());
    stale(r.len().unwrap_err());
    // New handles work.
    let r2 = fs.open("a").unwrap();
    assert_eq!(r2.read_at(0, 3, P).unwrap(), b"abc");
}

#[test]
fn readers_see_unsynced_data_and_deleted_open_files() {
    let fs = FaultStorage::new();
    let w = fs.create("a").unwrap();
    w.append(b"abcdef", P).unwrap();
    let r = fs.open("a").unwrap();
    assert_eq!(r.len().unwrap(), 6);
    assert_eq!(r.read_at(2, 3, P).unwrap(), b"cde");
    assert_eq!(
        r.read_at(4, 3, P).unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
    fs.delete("a").unwrap();
    assert!(fs.open("a").is_err());
    w.append(b"gh", P).unwrap();
    assert_eq!(r.read_at(0, 8, P).unwrap(), b"abcdefgh");
    // Still occupies space while open, freed once the last handle goes.
    assert_eq!(fs.total_bytes(), 8);
    drop(w);
    assert_eq!(fs.total_bytes(), 8);
    drop(r);
    assert_eq!(fs.total_bytes(), 0);
}

/// A fixed sequence of mutating operations (plus reads), for crash-point enumeration.
fn workload(fs: &FaultStorage) -> io::Result<()> {
    let f = fs.create("log")?; // op 1
    f.append(b"one", P)?; // op 2
    f.sync()?; // op 3
    fs.sync_dir()?; // op 4
    f.append(b"two", P)?; // op 5
    fs.rename("log", "log2")?; // op 6
    f.sync()?; // op 7
    Ok(())
}

#[test]
fn crash_after_ops_fires_at_the_right_op() {
    let fs = FaultStorage::new();
    workload(&fs).unwrap();
    let total = fs.ops_count();
    assert_eq!(total, 7);

    for k in 0..total {
        let fs = FaultStorage::new();
        fs.crash_after_ops(Some(k));
        let err = workload(&fs).unwrap_err();
        assert_eq!(err.to_string(), "simulated crash");
        assert!(fs.is_crashed());
        assert_eq!(fs.ops_count(), k, "crash point {k}");
        fs.restart();
        // What survived is exactly what the first k operations made durable.
        let durable = match k {
            0..=3 => None,
            _ => Some(b"one".to_vec()),
        };
        let got = fs.exists("log").unwrap().then(|| read(&fs, "log"));
        assert_eq!(got, durable, "crash point {k}");
        assert!(!fs.exists("log2").unwrap());
    }

    // With k == total the workload completes; disarming works too.
    let fs = FaultStorage::new();
    fs.crash_after_ops(Some(total));
    workload(&fs).unwrap();
    fs.crash_after_ops(None);
    fs.sync_dir().unwrap();
    assert!(!fs.is_crashed());
}

#[test]
fn crash_on_append_appends_nothing() {
    let fs = FaultStorage::new();
    let f = fs.create("a").unwrap();
    fs.sync_dir().unwrap();
    f.append(b"ab", P).unwrap();
    f.sync().unwrap();
    fs.crash_after_ops(Some(0));
    assert!(f.append(b"cd", P).is_err());
    fs.restart();
    assert_eq!(read(&fs, "a"), b"ab");
}

#[test]
fn space_limit_gives_storage_full_and_appends_nothing() {
    let fs = FaultStorage::new();
    fs.set_space_limit(Some(10));
    let a = fs.create("a").unwrap();
    let b = fs.create("b").unwrap();
    a.append(&[1; 6], P).unwrap();
    b.append(&[2; 4], P).unwrap();
    let e = b.append(&[3], P).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    assert_eq!(fs.file_len("b"), Some(4));
    assert_eq!(b.len(), 4);
    assert_eq!(fs.total_bytes(), 10);
    // Deleting a file whose last handle is gone frees its space.
    drop(a);
    fs.delete("a").unwrap();
    b.append(&[3; 6], P).unwrap();
    fs.set_space_limit(None);
    b.append(&[4; 100], P).unwrap();
    assert_eq!(fs.total_bytes(), 110);
}

#[test]
fn flip_byte_corrupts_one_byte() {
    let fs = FaultStorage::new();
    let f = fs.create("a").unwrap();
    f.append(&[0x0F, 0x00], P).unwrap();
    fs.flip_byte("a", 1).unwrap();
    assert_eq!(read(&fs, "a"), vec![0x0F, 0xFF]);
    assert_eq!(
        fs.flip_byte("a", 2).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        fs.flip_byte("nope", 0).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
}

#[test]
fn clones_share_state() {
    let fs = FaultStorage::new();
    let other = fs.clone();
    fs.create("a").unwrap();
    assert!(other.exists("a").unwrap());
    other.crash();
    assert!(fs.is_crashed());
}

#[test]
fn truncate_cuts_data_and_synced_length() {
    let fs = FaultStorage::new();
    let f = fs.create("a").unwrap();
    fs.sync_dir().unwrap();
    f.append(b"hello world", P).unwrap();
    f.sync().unwrap();
    let ops = fs.ops_count();
    let e = f.truncate(12).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert_eq!(fs.ops_count(), ops, "a refused truncate is no operation");
    f.truncate(5).unwrap();
    assert_eq!(fs.ops_count(), ops + 1);
    assert_eq!(f.len(), 5);
    assert_eq!(fs.file_len("a"), Some(5));
    assert_eq!(fs.total_bytes(), 5);
    f.append(b"!", P).unwrap();
    assert_eq!(read(&fs, "a"), b"hello!");
    // The cut reached the synced length, so a crash cannot bring " world" back.
    crash_and_restart(&fs);
    assert_eq!(read(&fs, "a"), b"hello");
}

#[test]
fn truncate_is_a_mutating_op_for_crash_injection() {
    let fs = FaultStorage::new();
    let f = fs.create("a").unwrap();
    fs.sync_dir().unwrap();
    f.append(b"abcd", P).unwrap();
    fs.crash_after_ops(Some(0));
    assert_eq!(f.truncate(2).unwrap_err().to_string(), "simulated crash");
    assert!(fs.is_crashed());
    fs.restart();
    // Nothing was synced, and the stale handle stays dead.
    assert_eq!(read(&fs, "a"), b"");
    assert_eq!(
        f.truncate(0).unwrap_err().to_string(),
        "simulated crash: stale handle"
    );
}

fn fault(kind: IoKind, nth: u64) -> Fault {
    Fault {
        kind,
        nth,
        error: FaultError::Eio,
        sticky: false,
        partial: false,
    }
}

/// Files for [`call`]: a writer and a reader on "a", and spare files to rename and delete.
struct Setup {
    fs: FaultStorage,
    w: Box<dyn WritableFile>,
    r: Arc<dyn RandomAccessFile>,
}

fn setup() -> Setup {
    let fs = FaultStorage::new();
    for i in 0..8 {
        fs.create(&format!("ren{i}")).unwrap();
        fs.create(&format!("del{i}")).unwrap();
    }
    let w = fs.create("a").unwrap();
    w.append(b"abc", P).unwrap();
    let r = fs.open("a").unwrap();
    Setup { fs, w, r }
}

/// Makes call number `i` of `kind`; each call is valid, so only an injection fails it.
fn call(s: &Setup, kind: IoKind, i: u64) -> io::Result<()> {
    match kind {
        IoKind::Create => s.fs.create(&format!("new{i}")).map(drop),
        IoKind::Append => s.w.append(b"x", P),
        IoKind::Sync => s.w.sync(),
        IoKind::SyncDir => s.fs.sync_dir(),
        IoKind::Rename => s.fs.rename(&format!("ren{i}"), &format!("renamed{i}")),
        IoKind::Delete => s.fs.delete(&format!("del{i}")),
        IoKind::Truncate => s.w.truncate(s.w.len()),
        IoKind::Open => s.fs.open("a").map(drop),
        IoKind::Read => s.r.read_at(0, 1, P).map(drop),
    }
}

fn is_eio(r: io::Result<()>) -> bool {
    r.is_err_and(|e| e.raw_os_error() == Some(libc::EIO))
}

#[test]
fn each_kind_fails_at_the_nth_call_and_not_before() {
    for kind in IoKind::ALL {
        for nth in 0..3 {
            let s = setup();
            // Calls made before arming do not count towards `nth`.
            call(&s, kind, 7).unwrap();
            s.fs.inject(Some(fault(kind, nth)));
            for i in 0..nth {
                call(&s, kind, i).unwrap_or_else(|e| panic!("{kind:?} call {i}: {e}"));
            }
            assert!(is_eio(call(&s, kind, nth)), "{kind:?} call {nth}");
            assert_eq!(s.fs.faults_fired(), 1);
            // Not sticky: the next call goes through.
            call(&s, kind, nth + 1).unwrap();
            assert_eq!(s.fs.faults_fired(), 1);
            // Calls of other kinds are never failed.
            for other in IoKind::ALL.into_iter().filter(|k| *k != kind) {
                call(&s, other, 5).unwrap_or_else(|e| panic!("{other:?} with {kind:?}: {e}"));
            }
            assert!(!s.fs.is_crashed());
        }
    }
}

#[test]
fn failed_calls_have_no_effect() {
    let once = |fs: &FaultStorage, kind| fs.inject(Some(fault(kind, 0)));
    let fs = FaultStorage::new();
    let w = fs.create("a").unwrap();
    w.append(b"abc", P).unwrap();
    w.sync().unwrap();
    fs.sync_dir().unwrap();
    let ops = fs.ops_count();

    once(&fs, IoKind::Create);
    assert!(fs.create("b").is_err());
    assert!(!fs.exists("b").unwrap());
    once(&fs, IoKind::Append);
    assert!(w.append(b"def", P).is_err());
    assert_eq!(w.len(), 3);
    assert_eq!(read(&fs, "a"), b"abc");
    once(&fs, IoKind::Truncate);
    assert!(w.truncate(1).is_err());
    assert_eq!(w.len(), 3);
    once(&fs, IoKind::Rename);
    assert!(fs.rename("a", "b").is_err());
    assert!(fs.exists("a").unwrap() && !fs.exists("b").unwrap());
    once(&fs, IoKind::Delete);
    assert!(fs.delete("a").is_err());
    assert!(fs.exists("a").unwrap());
    once(&fs, IoKind::Open);
    assert!(fs.open("a").is_err());
    once(&fs, IoKind::Read);
    let r = fs.open("a").unwrap();
    assert!(r.read_at(0, 3, P).is_err());
    assert_eq!(r.len().unwrap(), 3);
    assert_eq!(ops, fs.ops_count(), "failed calls are no operations");

    // A failed sync or sync_dir makes nothing durable.
    w.append(b"def", P).unwrap();
    let c = fs.create("c").unwrap();
    c.append(b"c", P).unwrap();
    c.sync().unwrap();
    once(&fs, IoKind::Sync);
    assert!(w.sync().is_err());
    once(&fs, IoKind::SyncDir);
    assert!(fs.sync_dir().is_err());
    fs.inject(None);
    crash_and_restart(&fs);
    assert_eq!(read(&fs, "a"), b"abc");
    assert!(!fs.exists("c").unwrap());
}

#[test]
fn sticky_faults_fail_every_later_call_until_disarmed() {
    let s = setup();
    s.fs.inject(Some(Fault {
        sticky: true,
        ..fault(IoKind::Read, 1)
    }));
    call(&s, IoKind::Read, 0).unwrap();
    for i in 1..5 {
        assert!(is_eio(call(&s, IoKind::Read, i)), "read {i}");
    }
    assert_eq!(s.fs.faults_fired(), 4);
    s.fs.inject(None);
    call(&s, IoKind::Read, 5).unwrap();
    // Disarming keeps the tally; arming a new fault resets it.
    assert_eq!(s.fs.faults_fired(), 4);
    s.fs.inject(Some(fault(IoKind::Read, 0)));
    assert_eq!(s.fs.faults_fired(), 0);
    assert!(is_eio(call(&s, IoKind::Read, 6)));
    call(&s, IoKind::Read, 7).unwrap();
    assert_eq!(s.fs.faults_fired(), 1);
}

#[test]
fn inject_replaces_the_armed_fault_and_restarts_the_count() {
    let s = setup();
    s.fs.inject(Some(fault(IoKind::Sync, 1)));
    call(&s, IoKind::Sync, 0).unwrap();
    // The new fault counts from zero again and the old one is gone.
    s.fs.inject(Some(fault(IoKind::Append, 1)));
    call(&s, IoKind::Sync, 1).unwrap();
    call(&s, IoKind::Append, 0).unwrap();
    assert!(is_eio(call(&s, IoKind::Append, 1)));
}

#[test]
fn partial_append_leaves_exactly_half_and_truncate_removes_it() {
    let fs = FaultStorage::new();
    let w = fs.create("log").unwrap();
    fs.sync_dir().unwrap();
    w.append(b"head", P).unwrap();
    w.sync().unwrap();
    fs.inject(Some(Fault {
        partial: true,
        ..fault(IoKind::Append, 0)
    }));
    let e = w.append(b"1234567", P).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
    assert_eq!(w.len(), 7);
    assert_eq!(fs.file_len("log"), Some(7));
    assert_eq!(read(&fs, "log"), b"head123");
    // The writer cleans up and goes on.
    w.truncate(4).unwrap();
    assert_eq!(read(&fs, "log"), b"head");
    w.append(b"tail", P).unwrap();
    w.sync().unwrap();
    assert_eq!(read(&fs, "log"), b"headtail");
    crash_and_restart(&fs);
    assert_eq!(read(&fs, "log"), b"headtail");
}

#[test]
fn partial_append_prefix_is_unsynced_and_obeys_the_space_limit() {
    let fs = FaultStorage::new();
    let w = fs.create("log").unwrap();
    fs.sync_dir().unwrap();
    w.append(b"ab", P).unwrap();
    w.sync().unwrap();
    fs.set_space_limit(Some(5));
    fs.inject(Some(Fault {
        partial: true,
        error: FaultError::NoSpace,
        ..fault(IoKind::Append, 0)
    }));
    // Half of 10 bytes is 5, but only 3 fit.
    assert!(w.append(&[7; 10], P).is_err());
    assert_eq!(w.len(), 5);
    assert_eq!(fs.total_bytes(), 5);
    crash_and_restart(&fs);
    assert_eq!(read(&fs, "log"), b"ab");
}

#[test]
fn no_space_fault_maps_to_engine_no_space() {
    use crate::error::Error;
    let e = FaultError::NoSpace.to_io_error();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    assert_eq!(e.raw_os_error(), Some(28));
    assert!(matches!(Error::io("f", e), Error::NoSpace { .. }));
    let e = FaultError::Eio.to_io_error();
    assert_eq!(e.raw_os_error(), Some(5));
    assert!(matches!(Error::io("f", e), Error::Io { .. }));

    // And as returned by an injected call.
    let s = setup();
    s.fs.inject(Some(Fault {
        error: FaultError::NoSpace,
        ..fault(IoKind::Append, 0)
    }));
    let e = call(&s, IoKind::Append, 0).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    assert!(matches!(Error::io("a", e), Error::NoSpace { .. }));
}

#[test]
fn injected_faults_neither_crash_nor_use_up_the_countdown() {
    let fs = FaultStorage::new();
    let w = fs.create("a").unwrap();
    fs.sync_dir().unwrap();
    w.append(b"abc", P).unwrap();
    let ops = fs.ops_count();
    fs.crash_after_ops(Some(1));
    fs.inject(Some(Fault {
        sticky: true,
        ..fault(IoKind::Sync, 0)
    }));
    for _ in 0..3 {
        assert!(w.sync().is_err());
    }
    assert!(!fs.is_crashed());
    assert_eq!(fs.ops_count(), ops);
    fs.inject(None);
    w.sync().unwrap(); // the one allowed operation
    assert_eq!(fs.ops_count(), ops + 1);
    assert_eq!(
        w.append(b"d", P).unwrap_err().to_string(),
        "simulated crash"
    );
    assert!(fs.is_crashed());
    assert_eq!(fs.io_counts()[&IoKind::Sync], 4);
    assert_eq!(fs.faults_fired(), 3);
}

#[test]
fn io_counts_count_every_call_of_each_kind() {
    let fs = FaultStorage::new();
    assert!(fs.io_counts().values().all(|n| *n == 0));
    assert_eq!(fs.io_counts().len(), IoKind::ALL.len());
    workload(&fs).unwrap();
    let r = fs.open("log2").unwrap();
    r.read_at(0, 3, P).unwrap();
    r.read_at(0, 99, P).unwrap_err(); // failed calls count too
    r.len().unwrap(); // not counted
    fs.exists("log2").unwrap(); // not counted
    fs.list().unwrap(); // not counted
    fs.delete("log2").unwrap();
    fs.delete("log2").unwrap_err();
    fs.create("t").unwrap().truncate(0).unwrap();
    let want = [
        (IoKind::Create, 2),
        (IoKind::Append, 2),
        (IoKind::Sync, 2),
        (IoKind::SyncDir, 1),
        (IoKind::Rename, 1),
        (IoKind::Delete, 2),
        (IoKind::Truncate, 1),
        (IoKind::Open, 1),
        (IoKind::Read, 2),
    ];
    assert_eq!(fs.io_counts(), BTreeMap::from(want));
    // Calls refused by a crashed storage never reach it and are not counted.
    fs.crash();
    assert!(fs.create("u").is_err());
    assert_eq!(fs.io_counts()[&IoKind::Create], 2);
    // Crashes and injection do not reset the totals.
    fs.restart();
    fs.inject(Some(fault(IoKind::Create, 0)));
    assert!(fs.create("u").is_err());
    assert_eq!(fs.io_counts()[&IoKind::Create], 3);
}

#[test]
fn armed_fault_survives_a_crash() {
    let fs = FaultStorage::new();
    fs.inject(Some(fault(IoKind::Create, 1)));
    fs.create("a").unwrap();
    crash_and_restart(&fs);
    assert!(fs.create("b").is_err());
    fs.create("c").unwrap();
}

#[test]
fn io_kind_names_are_distinct() {
    let names: std::collections::HashSet<_> = IoKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(names.len(), IoKind::ALL.len());
    assert_eq!(IoKind::SyncDir.name(), "sync_dir");
}
