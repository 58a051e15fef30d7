//! `cerberus cluster` against devices on loopback: tenants spread by `owner`, a move of a
//! tenant from 1 to 3 devices while a reader reads the old placement, and devices that are
//! down.

use crate::common;

use cerberus_host::cluster::{self, owner, ClusterDescription, Digest};
use cerberus_host::{BlockingNamespace, WriteBatch};
use common::{errors, start, text, Serve};
use rand::Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Devices on loopback and a cluster description naming them d0, d1, ... (or as given).
pub(crate) struct Cluster {
    pub(crate) devices: Vec<Serve>,
    pub(crate) names: Vec<String>,
    pub(crate) file: PathBuf,
    pub(crate) dir: tempfile::TempDir,
}

impl Cluster {
    pub(crate) fn start(n: usize) -> Cluster {
        let names: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
        Cluster::start_named(&names.iter().map(String::as_str).collect::<Vec<_>>())
    }

    pub(crate) fn start_named(names: &[&str]) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("cluster");
        std::fs::create_dir(&folder).unwrap();
        let file = folder.join("cluster.toml");
        let mut devices = Vec::new();
        for i in 0..names.len() {
            let data = dir.path().join(format!("data{i}"));
            std::fs::create_dir(&data).unwrap();
            devices.push(start(&data, &[]));
        }
        let c = Cluster {
            devices,
            names: names.iter().map(|n| n.to_string()).collect(),
            file,
            dir,
        };
        c.ok(&["init"]);
        for (name, d) in c.names.iter().zip(&c.devices) {
            let secret = d.dir.join("admin.secret");
            let secret = secret.to_str().unwrap();
            c.ok(&["add-device", name, &d.addr, "--admin-secret-file", secret]);
        }
        c
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_cerberus"))
            .arg("cluster")
            .arg("--file")
            .arg(&self.file)
            .args(args)
            .env_remove("CERBERUS_CLUSTER")
            .output()
            .unwrap()
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", errors(&o));
        text(&o)
    }

    /// Records a move of tenant "t" to d1 (namespace "t.g2", id `nsid`, its `secret` kept
    /// where the tool keeps it) as a move whose process died would leave it; the secret's
    /// path.
    pub(crate) fn record_a_move_to_d1(&self, nsid: u32, secret: &str) -> PathBuf {
        let rel = cluster::secret_path("d1", "t.g2", nsid);
        // As the tool makes it: closed to others (it refuses to write into an open one).
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(self.base().join("secrets/d1"))
            .unwrap();
        std::fs::write(self.base().join(&rel), secret).unwrap();
        let mut desc = self.desc();
        let t = desc.tenants.get_mut("t").unwrap();
        t.moving_to = Some(vec!["d1".into()]);
        t.moving_parts.insert(
            "d1".into(),
            cluster::Part {
                namespace: "t.g2".into(),
                nsid: Some(nsid),
                secret_file: rel.clone(),
            },
        );
        desc.save(&self.file).unwrap();
        rel
    }

    pub(crate) fn desc(&self) -> ClusterDescription {
        ClusterDescription::load(&self.file).unwrap()
    }

    pub(crate) fn base(&self) -> &Path {
        self.file.parent().unwrap()
    }

    /// The current parts of `tenant`, opened, in the order of its device list.
    pub(crate) fn parts(&self, tenant: &str) -> (Vec<String>, Vec<BlockingNamespace>) {
        let desc = self.desc();
        let t = desc.tenant(tenant).unwrap();
        let parts = t
            .devices
            .iter()
            .map(|d| cluster::open_part(&desc, self.base(), d, &t.parts[d]).unwrap())
            .collect();
        (t.devices.clone(), parts)
    }

    /// The ids and names of the namespaces of device `name`.
    pub(crate) fn namespaces_with_ids(&self, name: &str) -> Vec<(u32, String)> {
        let c = cluster::connect_admin(&self.desc(), self.base(), name).unwrap();
        let list = c.list_namespaces().unwrap();
        list.into_iter().map(|e| (e.nsid, e.name)).collect()
    }

    /// The namespace names of device `i`.
    pub(crate) fn namespaces(&self, i: usize) -> Vec<String> {
        let c = cluster::connect_admin(&self.desc(), self.base(), &self.names[i]).unwrap();
        c.list_namespaces()
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    }
}

pub(crate) fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

pub(crate) fn value(i: usize) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(i % 50)).into_bytes()
}

#[test]
fn tenants_are_spread_by_owner_listed_and_destroyed() {
    let c = Cluster::start(3);
    c.ok(&["create", "t", "--devices", "d0,d1,d2"]);
    let list = c.ok(&["list"]);
    assert!(list.starts_with("TENANT"), "{list}");
    let row = list.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells, ["t", "1", "d0,d1,d2", "-"], "{list}");

    // Credentials are private to their owner, in a folder per device.
    let files: Vec<PathBuf> = ["d0", "d1", "d2"]
        .map(|d| c.desc().tenants["t"].parts[d].secret_file.clone())
        .into();
    for (d, f) in ["d0", "d1", "d2"].iter().zip(&files) {
        assert!(f.starts_with(format!("secrets/{d}")), "{}", f.display());
    }
    #[cfg(unix)]
    for f in &files {
        use std::os::unix::fs::PermissionsExt;
        let p = c.base().join(f);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", p.display());
    }

    let (devices, parts) = c.parts("t");
    let n = 600;
    for i in 0..n {
        let o = owner(&key(i), &devices).unwrap();
        parts[o].put(key(i), value(i)).unwrap();
    }
    let mut total = 0;
    for (i, p) in parts.iter().enumerate() {
        let keys = p.list_all("", 1000).unwrap();
        // Each device holds about a third, and only keys it owns.
        assert!(keys.len() > n / 5, "device {i}: {} keys", keys.len());
        for k in &keys {
            assert_eq!(owner(k, &devices), Some(i));
        }
        total += keys.len();
    }
    assert_eq!(total, n);

    let o = c.run(&["create", "t", "--devices", "d0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("tenant t exists"), "{}", errors(&o));

    c.ok(&["destroy", "t"]);
    assert_eq!(c.ok(&["list", "--json"]).trim(), "[]");
    for i in 0..3 {
        assert!(!c.namespaces(i).contains(&"t".to_string()));
    }
    assert!(files.iter().all(|f| !c.base().join(f).exists()));
}

#[test]
fn reshard_one_to_three_loses_nothing_while_reads_go_on() {
    let c = Cluster::start(3);
    c.ok(&["create", "t", "--devices", "d0"]);
    let n = 20_000;
    let (_, old) = c.parts("t");
    let old = old.into_iter().next().unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(key(i), value(i));
        }
        old.write(b).unwrap();
    }
    let before = Digest::of_namespace(&old).unwrap();
    assert_eq!(before.records, n as u64);

    // A reader of the old placement, until the move ends: every read returns what was
    // written, and fails only once the description has switched (the old part is gone).
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, file) = (stop.clone(), c.file.clone());
        std::thread::spawn(move || {
            let mut rng = rand::thread_rng();
            // Reads made, and those made while the description recorded the move.
            let (mut reads, mut during) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let moving = reads % 8 == 0
                    && ClusterDescription::load(&file).unwrap().tenants["t"]
                        .moving_to
                        .is_some();
                let i = rng.gen_range(0..n);
                match old.get(key(i)) {
                    Ok(v) => assert_eq!(v.as_deref(), Some(&value(i)[..]), "key {i}"),
                    Err(e) => {
                        let desc = ClusterDescription::load(&file).unwrap();
                        let generation = desc.tenants["t"].generation;
                        assert_eq!(generation, 2, "read failed before the switch: {e}");
                        break;
                    }
                }
                reads += 1;
                during += u64::from(moving);
            }
            (reads, during)
        })
    };
    let out = c.ok(&["reshard", "t", "--devices", "d0,d1,d2", "--batch", "1000"]);
    stop.store(true, Ordering::Relaxed);
    let (reads, during) = reader.join().unwrap();
    eprintln!("{reads} reads of the old placement, {during} seen during the move");
    assert!(during > 0, "{reads} reads, none during the move");
    assert!(out.contains(&format!("records: {n}")), "{out}");
    assert!(
        out.contains(&format!("digest: {:016x}", before.sum)),
        "{out}"
    );

    let desc = c.desc();
    let t = &desc.tenants["t"];
    assert_eq!(t.generation, 2);
    assert_eq!(t.devices, ["d0", "d1", "d2"]);
    assert!(t.moving_to.is_none() && t.moving_parts.is_empty());
    assert!(t.parts.values().all(|p| p.namespace == "t.g2"));
    assert_eq!(c.namespaces(0), ["t.g2"], "the old namespace is destroyed");

    let digest = c.ok(&["digest", "t", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&digest).unwrap();
    assert_eq!(v["records"], n as u64);
    assert_eq!(v["bytes"], before.bytes);
    assert_eq!(v["digest"], format!("{:016x}", before.sum));

    // Every key at its new owner.
    let (devices, parts) = c.parts("t");
    let mut by_owner = vec![Vec::new(); devices.len()];
    for i in 0..n {
        by_owner[owner(&key(i), &devices).unwrap()].push(i);
    }
    for (o, idx) in by_owner.iter().enumerate() {
        for chunk in idx.chunks(1000) {
            let keys = chunk.iter().map(|&i| key(i).into()).collect();
            let got = parts[o].get_many(keys).unwrap();
            for (&i, v) in chunk.iter().zip(got) {
                assert_eq!(v.as_deref(), Some(&value(i)[..]), "key {i} at d{o}");
            }
        }
    }

    // A move to where it is already is refused; a move back to one device works.
    let o = c.run(&["reshard", "t", "--devices", "d2,d1,d0"]);
    assert_eq!(o.status.code(), Some(2));
    let back = c.ok(&["reshard", "t", "--devices", "d1"]);
    assert!(back.contains(&format!("records: {n}")), "{back}");
    assert_eq!(c.desc().tenants["t"].parts["d1"].namespace, "t.g3");
}

#[test]
fn a_device_down_fails_create_and_reshard_and_leaves_the_description() {
    let mut c = Cluster::start(2);
    // d1 goes down: its process is killed.
    drop(c.devices.pop());
    let before = std::fs::read(&c.file).unwrap();

    let o = c.run(&["create", "t", "--devices", "d0,d1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("device d1"), "{}", errors(&o));
    assert_eq!(std::fs::read(&c.file).unwrap(), before);
    assert!(c.namespaces(0).is_empty(), "nothing left on d0");

    c.ok(&["create", "t", "--devices", "d0"]);
    let before = std::fs::read(&c.file).unwrap();
    let o = c.run(&["reshard", "t", "--devices", "d0,d1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("device d1"), "{}", errors(&o));
    assert_eq!(std::fs::read(&c.file).unwrap(), before);
    assert_eq!(c.namespaces(0), ["t"]);

    // Unknown devices and tenants are named too.
    let o = c.run(&["create", "u", "--devices", "d9"]);
    assert!(errors(&o).contains("d9"), "{}", errors(&o));
    let o = c.run(&["destroy", "nobody"]);
    assert!(errors(&o).contains("nobody"), "{}", errors(&o));
}

#[test]
fn a_move_that_fails_part_way_is_undone_and_an_interrupted_one_aborted() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0"]);
    let (_, parts) = c.parts("t");
    parts[0].put("k", "v").unwrap();
    // d1 has a namespace of the name the move's next generation takes: creating it fails
    // after d0's is made.
    let d1 = cluster::connect_admin(&c.desc(), c.base(), "d1").unwrap();
    let (nsid, secret) = d1.create_namespace("t.g2").unwrap();
    let before = std::fs::read(&c.file).unwrap();
    let o = c.run(&["reshard", "t", "--devices", "d0,d1"]);
    assert_eq!(o.status.code(), Some(2));
    let e = errors(&o);
    assert!(e.contains("device d1") && e.contains("t.g2"), "{e}");
    assert_eq!(std::fs::read(&c.file).unwrap(), before);
    assert_eq!(c.namespaces(0), ["t"], "the part made on d0 is destroyed");
    let left: Vec<_> = std::fs::read_dir(c.base().join("secrets/d0"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(left.iter().all(|f| !f.starts_with("t.g2")), "{left:?}");

    // A move whose process died: its namespace on d1 and its record stay until --abort.
    let rel = c.record_a_move_to_d1(nsid, &secret);
    let list = c.ok(&["list"]);
    assert!(list.lines().nth(1).unwrap().ends_with("d1"), "{list}");
    let o = c.run(&["reshard", "t", "--devices", "d1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("--abort"), "{}", errors(&o));

    c.ok(&["reshard", "t", "--abort"]);
    assert!(c.desc().tenants["t"].moving_to.is_none());
    assert!(c.desc().tenants["t"].moving_parts.is_empty());
    assert!(!c.namespaces(1).contains(&"t.g2".to_string()));
    assert!(
        d1.open_namespace(nsid, &secret).is_err(),
        "the namespace is gone"
    );
    assert!(!c.base().join(&rel).exists());

    let out = c.ok(&["reshard", "t", "--devices", "d1"]);
    assert!(out.contains("records: 1"), "{out}");
    let (_, parts) = c.parts("t");
    assert_eq!(parts[0].get("k").unwrap().as_deref(), Some(&b"v"[..]));
}
