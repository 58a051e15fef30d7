//! The simulator's property tests and scenarios.

use super::*;

fn options(layout: Layout, threads: usize) -> Options {
    Options {
        layout,
        background_threads: threads,
        max_immutable_memtables: 2,
        l0_compaction_trigger: 4,
        run_compaction_trigger: 3,
        target_table_bytes: 20_000,
        level1_bytes: 60_000,
        level_size_ratio: 4,
        num_levels: 5,
        idle_settle_ms: 1000,
        consolidate_below_bytes: Some(400_000),
        vlog_gc_dead_ratio: 0.5,
        ..Options::default()
    }
}

fn action(namespaces: u32) -> impl Strategy<Value = Action> {
    let span = (1..=namespaces, 0u64..10_000, 0u64..2_000);
    prop_oneof![
        6 => prop::collection::vec(span, 1..4).prop_map(Action::Write),
        6 => any::<usize>().prop_map(Action::Finish),
        1 => any::<usize>().prop_map(Action::FailNoSpace),
        1 => (0u64..400).prop_map(Action::Advance),
        1 => any::<bool>().prop_map(Action::Idle),
        1 => Just(Action::GcDue),
        1 => (1..=namespaces).prop_map(Action::Backfill),
        1 => Just(Action::Manual),
    ]
}

/// Runs `actions`, then lets the background finish everything, and checks the end state.
fn run(layout: Layout, threads: usize, namespaces: u32, actions: &[Action]) -> Sim {
    let mut sim = Sim::new(options(layout, threads));
    for a in actions {
        sim.watch_debts();
        sim.act(a);
    }
    assert!(sim.settle(100_000), "the background never came to rest");
    let o = &sim.opts;
    assert!(sim.frozen.is_empty(), "frozen memtables left");
    assert!(sim.version.levels[0].len() < o.l0_compaction_trigger);
    for ((_, level), score) in sim.debts() {
        assert!(score < 1.0, "a debt of level {level} left: score {score}");
    }
    assert!(sim.gc_due.is_empty(), "a segment worth collecting left");
    assert_eq!(
        sim.backfills_asked, sim.backfills_done,
        "a backfill never ran"
    );
    assert_eq!(
        sim.manual_waiting, 0,
        "a manual compaction never got the slots"
    );
    let _ = namespaces;
    sim
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Never two jobs in one slot nor two compactions on one table (checked at every start
    /// and end), and once the workload stops every debt is paid.
    #[test]
    fn per_namespace_jobs_never_overlap_and_debts_get_paid(
        threads in 2usize..5,
        actions in prop::collection::vec(action(6), 1..400),
    ) {
        run(Layout::PerNamespace, threads, 6, &actions);
    }

    #[test]
    fn shared_tree_jobs_never_overlap_and_debts_get_paid(
        threads in 2usize..5,
        actions in prop::collection::vec(action(6), 1..400),
    ) {
        run(Layout::Shared, threads, 6, &actions);
    }

    /// Idle, L0 and the runs drain into the trees.
    #[test]
    fn an_idle_engine_drains_l0_and_runs(
        actions in prop::collection::vec(action(4), 1..200),
    ) {
        let mut sim = run(Layout::PerNamespace, 2, 4, &actions);
        sim.idle = true;
        prop_assert!(sim.settle(100_000));
        prop_assert!(sim.version.levels[0].is_empty());
        prop_assert!(sim.version.runs.is_empty());
        // Every tree below the consolidation bound is at one level, consolidated at most
        // once an idle period of its namespace (the actions may go idle between writes).
        let bound = sim.opts.consolidation_bound();
        for (ns, bytes) in crate::compaction::tree_bytes(&sim.version, Layout::PerNamespace) {
            let levels = bytes.iter().filter(|&&b| b > 0).count();
            if bytes.iter().sum::<u64>() < bound {
                prop_assert_eq!(levels, 1, "namespace {} at {:?}", ns, bytes);
            }
            let done = sim.consolidations.get(&ns).copied().unwrap_or(0);
            let periods = idle_periods(&actions, ns);
            prop_assert!(done <= periods, "namespace {} consolidated {} times in {} idle periods", ns, done, periods);
        }
    }
}

/// The most idle periods namespace `ns` can have had in `actions` and the idle end after
/// them: a period begins once the engine is idle after a write of the namespace (a write
/// while idle may begin one at once). At least one: the final idle period.
fn idle_periods(actions: &[Action], ns: Nsid) -> u64 {
    let (mut idle, mut wrote, mut periods) = (false, false, 0);
    for a in actions {
        match a {
            Action::Idle(on) => idle = *on,
            Action::Write(spans) => wrote |= spans.iter().any(|s| s.0 == ns),
            _ => {}
        }
        if idle && wrote {
            periods += 1;
            wrote = false;
        }
    }
    periods + u64::from(wrote || periods == 0)
}

/// One namespace writes without pause while seven write now and then: every debt is paid
/// within [`AGING_PICKS`] picks plus one for each other debt there can be (8 namespaces, each
/// with runs and levels 1 to 3), however much larger the busy namespace's debts are.
#[test]
fn a_quiet_namespace_is_not_starved_by_a_busy_one() {
    let mut sim = Sim::new(options(Layout::PerNamespace, 2));
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for step in 0..5_000u64 {
        sim.watch_debts();
        let mut spans = vec![(1, next() % 20_000, 3_000)];
        if step % 7 == 0 {
            spans.push((2 + (next() % 7) as Nsid, next() % 20_000, 500));
        }
        sim.act(&Action::Write(spans));
        sim.act(&Action::Finish(next() as usize));
    }
    assert!(sim.settle(100_000));
    let debts = 8 * (1 + sim.opts.num_levels as u64 - 2);
    assert!(
        sim.longest_wait <= AGING_PICKS + debts,
        "a debt waited {} picks",
        sim.longest_wait
    );
}

/// Idle, each namespace's tree is consolidated into one level once per idle period: not
/// again while it stays idle (no loop), again once it has written and is idle once more.
#[test]
fn a_consolidation_runs_once_per_idle_period() {
    let mut sim = Sim::new(options(Layout::PerNamespace, 2));
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for step in 0..300u64 {
        let ns = 1 + (step % 3) as Nsid;
        sim.act(&Action::Write(vec![(ns, next() % 2_700, 300)]));
        sim.act(&Action::Finish(next() as usize));
    }
    assert!(sim.settle(100_000));
    assert!(sim.consolidations.is_empty(), "consolidated while writing");
    let places = |sim: &Sim, ns: Nsid| {
        let levels = (1..sim.version.num_levels())
            .filter(|&l| {
                sim.version.levels[l]
                    .iter()
                    .any(|t| ikey_nsid(&t.props.smallest) == ns)
            })
            .count();
        levels + sim.version.runs_of(ns).len()
    };
    assert!(
        (1..=3).any(|ns| places(&sim, ns) >= 2),
        "no tree to consolidate"
    );
    sim.idle = true;
    assert!(sim.settle(100_000));
    let first = sim.consolidations.clone();
    for ns in 1..=3 {
        assert_eq!(places(&sim, ns), 1, "namespace {ns} not at one level");
        assert!(first.get(&ns).copied().unwrap_or(0) <= 1);
    }
    // Idle for longer: nothing more.
    for _ in 0..5 {
        sim.act(&Action::Advance(1_000));
        assert!(sim.settle(100_000));
    }
    assert_eq!(
        sim.consolidations, first,
        "consolidated twice in one idle period"
    );
    // Namespace 1 writes and goes idle again: it alone is consolidated once more.
    sim.act(&Action::Write(vec![(1, 0, 2_699)]));
    assert!(sim.settle(100_000));
    sim.idle = true;
    assert!(sim.settle(100_000));
    let count = |c: &BTreeMap<Nsid, u64>, ns| c.get(&ns).copied().unwrap_or(0);
    assert_eq!(count(&sim.consolidations, 1), count(&first, 1) + 1);
    for ns in 2..=3 {
        assert_eq!(count(&sim.consolidations, ns), count(&first, ns));
    }
    assert_eq!(places(&sim, 1), 1);
}
