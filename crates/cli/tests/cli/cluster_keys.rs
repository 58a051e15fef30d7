//! The cluster without the admin's keys (issue 61, attack 7): clients open their tenant with
//! its credentials alone, credential files never collide nor go with a failed move, and a
//! description read before another admin command saved is never written over it.

use crate::cluster::{key, value, Cluster};
use crate::common::errors;
use cerberus_host::cluster::{self, owner, ClusterDescription};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};

/// A client's folder: the description with every device's admin credential pointing at a
/// file that does not exist, and the credential files of `tenant` alone.
fn client_folder(c: &Cluster, tenant: &str) -> PathBuf {
    let folder = c.dir.path().join(format!("client-{tenant}"));
    std::fs::create_dir(&folder).unwrap();
    let mut text = std::fs::read_to_string(&c.file).unwrap();
    for d in &c.devices {
        let admin = d.dir.join("admin.secret");
        text = text.replace(admin.to_str().unwrap(), "no-such-admin.secret");
    }
    assert!(!text.contains("/admin.secret"), "{text}");
    let file = folder.join("cluster.toml");
    std::fs::write(&file, text).unwrap();
    for p in c.desc().tenants[tenant].parts.values() {
        let to = folder.join(&p.secret_file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(c.base().join(&p.secret_file), to).unwrap();
    }
    file
}

#[test]
fn a_client_without_the_admin_secret_reads_and_writes_its_tenant_only() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0,d1"]);
    c.ok(&["create", "u", "--devices", "d0,d1"]);
    let (_, u_parts) = c.parts("u");
    for p in &u_parts {
        p.put("u-key", "u-value").unwrap();
    }

    let file = client_folder(&c, "t");
    let base = file.parent().unwrap();
    let desc = ClusterDescription::load(&file).unwrap();
    let e = cluster::connect_admin(&desc, base, "d0").unwrap_err();
    assert!(e.to_string().contains("no-such-admin.secret"), "{e}");

    let t = desc.tenant("t").unwrap();
    let parts: Vec<_> = t
        .devices
        .iter()
        .map(|d| cluster::open_part(&desc, base, d, &t.parts[d]).unwrap())
        .collect();
    for i in 0..200 {
        parts[owner(&key(i), &t.devices).unwrap()]
            .put(key(i), value(i))
            .unwrap();
    }
    for i in 0..200 {
        let got = parts[owner(&key(i), &t.devices).unwrap()]
            .get(key(i))
            .unwrap();
        assert_eq!(got.as_deref(), Some(&value(i)[..]));
    }

    // Its connections cannot list, reconfigure or destroy another tenant's namespaces.
    let u = &c.desc().tenants["u"];
    for (p, d) in parts.iter().zip(&t.devices) {
        let conn = p.client();
        assert!(conn.list_namespaces().is_err(), "listed namespaces on {d}");
        let u_nsid = c
            .namespaces_with_ids(d)
            .into_iter()
            .find(|(_, n)| *n == u.parts[d].namespace)
            .unwrap()
            .0;
        assert!(
            conn.destroy_namespace(u_nsid).is_err(),
            "destroyed u on {d}"
        );
        assert!(
            conn.namespace(u_nsid).get("u-key").is_err(),
            "read u's key on {d}"
        );
    }
    // Nor open the other tenant: its credentials are not in the client's folder.
    let d = &desc.tenant("u").unwrap().devices[0];
    assert!(cluster::open_part(&desc, base, d, &desc.tenants["u"].parts[d]).is_err());
    for p in &u_parts {
        assert_eq!(p.get("u-key").unwrap().as_deref(), Some(&b"u-value"[..]));
    }
}

#[test]
fn credential_files_of_devices_x_and_g2_x_never_collide_nor_go_with_a_failed_move() {
    // Tenant a at generation 1 on device g2.x and at generation 2 on device x: the layout of
    // `secrets/{namespace}.{device}` named both secrets/a.g2.x.
    let c = Cluster::start_named(&["x", "g2.x", "y"]);
    c.ok(&["create", "a", "--devices", "g2.x"]);
    let (_, parts) = c.parts("a");
    for i in 0..300 {
        parts[0].put(key(i), value(i)).unwrap();
    }
    drop(parts);
    let live = c
        .base()
        .join(&c.desc().tenants["a"].parts["g2.x"].secret_file);
    let secret = std::fs::read(&live).unwrap();

    // A move that fails part-way: y has a namespace of the name the next generation takes,
    // so its creation fails after x's part is made.
    let y = cluster::connect_admin(&c.desc(), c.base(), "y").unwrap();
    let (nsid, _) = y.create_namespace("a.g2").unwrap();
    let o = c.run(&["reshard", "a", "--devices", "x,y"]);
    assert_eq!(o.status.code(), Some(2), "{}", errors(&o));
    assert_eq!(
        std::fs::read(&live).unwrap(),
        secret,
        "the live credential changed"
    );
    assert_all_readable(&c, "a", 300);

    // The same move, now able to complete: the new generation's credential sits beside the
    // old one's, and the tenant is read from its new placement.
    y.destroy_namespace(nsid).unwrap();
    c.ok(&["reshard", "a", "--devices", "x"]);
    assert_eq!(c.desc().tenants["a"].generation, 2);
    assert_all_readable(&c, "a", 300);
}

/// Every record `0..n` of `tenant` is read back through a fresh load of the description.
fn assert_all_readable(c: &Cluster, tenant: &str, n: usize) {
    let (devices, parts) = c.parts(tenant);
    for i in 0..n {
        let got = parts[owner(&key(i), &devices).unwrap()]
            .get(key(i))
            .unwrap();
        assert_eq!(got.as_deref(), Some(&value(i)[..]), "key {i}");
    }
}

#[test]
fn a_description_read_before_another_command_saved_is_refused_not_written() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0"]);
    c.ok(&["create", "u", "--devices", "d1"]);
    let (_, parts) = c.parts("t");
    for i in 0..50 {
        parts[0].put(key(i), value(i)).unwrap();
    }
    drop(parts);
    // An admin reads the description, then another moves t (generation 2) meanwhile.
    let mut stale = c.desc();
    c.ok(&["reshard", "t", "--devices", "d1"]);
    cluster::destroy_tenant(&mut stale, c.base(), "u").unwrap();
    let e = stale.save(&c.file).unwrap_err().to_string();
    assert!(
        e.contains("changed since read") && e.contains("retry"),
        "{e}"
    );
    // The move's generation is still the one recorded, and readable.
    assert_eq!(c.desc().tenants["t"].generation, 2);
    assert_all_readable(&c, "t", 50);
    // Retried on a fresh read, the destroy goes through (it finishes what it started).
    c.ok(&["destroy", "u"]);
    assert!(!c.desc().tenants.contains_key("u"));
}

#[test]
fn two_admin_commands_at_once_one_saves_and_the_other_is_refused() {
    let c = Cluster::start(2);
    let (file, base) = (c.file.clone(), c.base().to_path_buf());
    let both_read = Arc::new(Barrier::new(2));
    let runs: Vec<_> = ["p", "q"]
        .into_iter()
        .map(|tenant| {
            let (file, base, both_read) = (file.clone(), base.clone(), both_read.clone());
            std::thread::spawn(move || {
                let mut desc = ClusterDescription::load(&file).unwrap();
                both_read.wait();
                cluster::create_tenant(&mut desc, &base, tenant, &["d0".into(), "d1".into()])
                    .unwrap();
                let saved = desc.save(&file);
                if saved.is_err() {
                    // As the CLI does: the namespaces nobody will find are taken back.
                    cluster::destroy_tenant(&mut desc, &base, tenant).unwrap();
                }
                (tenant, saved.map_err(|e| e.to_string()))
            })
        })
        .collect();
    let results: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    let won: Vec<_> = results.iter().filter(|(_, r)| r.is_ok()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    let lost = results.iter().find(|(_, r)| r.is_err()).unwrap();
    let e = lost.1.as_ref().unwrap_err();
    assert!(e.contains("changed since read"), "{e}");
    let desc = c.desc();
    assert_eq!(
        desc.tenants.keys().collect::<Vec<_>>(),
        [&won[0].0.to_string()]
    );
    for i in 0..2 {
        assert_eq!(c.namespaces(i), [won[0].0], "device d{i}");
    }
    let (_, parts) = c.parts(won[0].0);
    parts[0].put("k", "v").unwrap();
}

#[test]
fn a_description_from_before_recorded_ids_is_read_and_upgraded_by_record_ids() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0,d1"]);
    // As an earlier version wrote it: no ids, credentials at secrets/{namespace}.{device}.
    let mut desc = c.desc();
    for (d, p) in desc.tenants.get_mut("t").unwrap().parts.iter_mut() {
        let old = PathBuf::from(format!("secrets/{}.{d}", p.namespace));
        std::fs::rename(c.base().join(&p.secret_file), c.base().join(&old)).unwrap();
        p.secret_file = old;
        p.nsid = None;
    }
    desc.save(&c.file).unwrap();
    // The admin reads it as before.
    let (devices, parts) = c.parts("t");
    for i in 0..40 {
        parts[owner(&key(i), &devices).unwrap()]
            .put(key(i), value(i))
            .unwrap();
    }
    // A client without the admin secret is told what to do.
    let file = client_folder(&c, "t");
    let client = ClusterDescription::load(&file).unwrap();
    let t = client.tenant("t").unwrap();
    let e = cluster::open_part(&client, file.parent().unwrap(), "d0", &t.parts["d0"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("record-ids"), "{e}");

    let out = c.run(&["record-ids"]);
    assert!(out.status.success(), "{}", errors(&out));
    assert!(errors(&out).contains("2 namespace ids recorded"));
    let desc = c.desc();
    for (d, p) in &desc.tenants["t"].parts {
        assert!(p.nsid.is_some());
        assert_eq!(p.secret_file, PathBuf::from(format!("secrets/t.{d}")));
    }
    // A fresh copy for the client, without admin secrets, now opens every part.
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    let file = client_folder(&c, "t");
    let base = file.parent().unwrap();
    let client = ClusterDescription::load(&file).unwrap();
    let t = client.tenant("t").unwrap();
    for i in 0..40 {
        let d = &t.devices[owner(&key(i), &t.devices).unwrap()];
        let ns = cluster::open_part(&client, base, d, &t.parts[d]).unwrap();
        assert_eq!(ns.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
}
