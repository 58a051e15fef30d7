use super::*;

#[test]
fn noisy_reports_every_phase_and_layout() {
    let args = Args::try_parse_from([
        "noisy",
        "--neighbours",
        "2",
        "--victim-keys",
        "400",
        "--victim-gets",
        "200",
        "--write-factor",
        "1",
        "--value-size",
        "100",
    ])
    .unwrap();
    let doc = run(&args).unwrap();
    let v = serde_json::to_value(&doc).unwrap();
    assert_eq!(v["workload"], "noisy");
    assert_eq!(v["engine"], "cerberus");
    assert_eq!(v["config"]["neighbours"], 2);
    let runs = v["runs"].as_array().unwrap();
    let mut seen = Vec::new();
    for r in runs {
        seen.push(format!(
            "{}/{}",
            r["storage"].as_str().unwrap(),
            r["layout"].as_str().unwrap()
        ));
        let names: Vec<&str> = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["alone", "noisy", "settled"]);
        for p in r["phases"].as_array().unwrap() {
            let f = |k: &str| p[k].as_f64().unwrap();
            assert!(
                f("victim_gets") > 0.0 && f("victim_gets_per_sec") > 0.0,
                "{p}"
            );
            let l = &p["victim_latency_us"];
            let (p50, p99, p999) = (
                l["p50"].as_f64().unwrap(),
                l["p99"].as_f64().unwrap(),
                l["p999"].as_f64().unwrap(),
            );
            assert!(p50 > 0.0 && p99 >= p50 && p999 >= p99, "{p}");
            assert_eq!(p["victim_misses"], 0, "{p}");
            assert!(
                f("filter_loads_per_get") >= 0.0 && f("page_reads_per_get") >= 0.0,
                "{p}"
            );
            let noisy = p["name"] == "noisy";
            assert_eq!(f("neighbour_puts") == 800.0, noisy, "{p}");
            assert_eq!(f("neighbour_puts_per_sec") > 0.0, noisy, "{p}");
        }
        assert_eq!(r["phases"][0]["victim_gets"], 200);
    }
    assert_eq!(
        seen,
        [
            "nand/per_namespace",
            "nand/shared",
            "nand/baseline",
            "posix/per_namespace",
            "posix/shared",
            "posix/baseline"
        ]
    );
    let text = cerberus_figures::noisy_table(&doc);
    assert!(text.contains("| baseline | settled |"), "{text}");
}

#[test]
fn noisy_through_the_device_runs_per_shares_and_priority() {
    let args = Args::try_parse_from([
        "noisy",
        "--device",
        "--storages",
        "posix",
        "--layouts",
        "per_namespace",
        "--shares",
        "on,off",
        "--neighbours-niced",
        "on,off",
        "--victim-reservation",
        "100",
        "--neighbour-batch",
        "8",
        "--neighbours",
        "2",
        "--victim-keys",
        "200",
        "--victim-gets",
        "100",
        "--write-factor",
        "1",
        "--value-size",
        "100",
    ])
    .unwrap();
    let doc = run(&args).unwrap();
    assert_eq!(doc.engine, "device");
    assert_eq!(doc.config.network_threads, Some(1));
    assert_eq!(doc.config.victim_reservation_ops, 100);
    let labels: Vec<String> = doc.runs.iter().map(|r| r.label()).collect();
    assert_eq!(
        labels,
        [
            "per_namespace, shares on, niced",
            "per_namespace, shares on",
            "per_namespace, shares off, niced",
            "per_namespace, shares off"
        ]
    );
    for r in &doc.runs {
        let on = r.shares == Some(true);
        for p in &r.phases {
            assert_eq!(p.victim_misses, 0, "{p:?}");
            assert!(p.victim_gets > 0 && p.victim_latency_us.p99 > 0.0, "{p:?}");
            // 2 neighbours x 200 keys, 8 at a time.
            assert_eq!(p.neighbour_puts, if p.name == "noisy" { 400 } else { 0 });
            let shares = p.victim_shares_served.as_ref().unwrap();
            assert_eq!(shares["enabled"], on, "{shares}");
            assert_eq!(shares["settings"]["reservation_ops"], 100, "{shares}");
        }
        // With shares on the gate counted the victim's gets (served_ops grows by phase).
        let served = |i: usize| {
            r.phases[i].victim_shares_served.as_ref().unwrap()["served_ops"]
                .as_u64()
                .unwrap()
        };
        if on {
            assert!(served(2) > served(0), "{r:?}");
        }
    }
    let text = cerberus_figures::noisy_table(&doc);
    assert!(text.contains("victim reservation 100 ops/s"), "{text}");
}
