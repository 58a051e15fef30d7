use super::*;
use std::time::Duration;

fn sched(policy: Policy, cores: usize) -> Scheduler {
    Scheduler::new(
        cores,
        SchedulerConfig {
            policy,
            sample_every: 1,
            ..SchedulerConfig::default()
        },
        2,
    )
}

fn work() -> Work {
    Work::Dedup(DedupWork::Forget { ns: 1 })
}

fn queued(s: &Scheduler) -> Vec<usize> {
    s.cores.iter().map(|c| c.queue.lock().len()).collect()
}

#[test]
fn policies_place_a_task_as_they_say() {
    // Off: nothing runs.
    let s = sched(Policy::Off, 2);
    assert!(!on_behalf_of(Some(0), || s.submit(work(), Priority::Low)));

    // Inline: on the core that made it, however loaded.
    let s = sched(Policy::Inline, 3);
    s.set_loads(&[0.7, 0.0, 0.0]);
    on_behalf_of(Some(0), || s.submit(work(), Priority::Low));
    on_behalf_of(Some(2), || s.submit(work(), Priority::Low));
    assert_eq!(queued(&s), [1, 0, 1]);
    assert_eq!(s.stats().migrations, 0);

    // BTS: a task of a core with connections goes to an idle core (none); an idle core's
    // stays.
    let s = sched(Policy::Bts, 3);
    assert_eq!(s.place_connection(), 0);
    s.set_loads(&[0.5, 0.0, 0.0]);
    on_behalf_of(Some(0), || s.submit(work(), Priority::Low));
    on_behalf_of(Some(2), || s.submit(work(), Priority::Low));
    assert_eq!(queued(&s), [0, 1, 1]);
    let st = s.stats();
    assert_eq!(
        (
            st.migrations,
            st.cores[0].migrated_out,
            st.cores[1].migrated_in
        ),
        (1, 1, 1)
    );
}

#[test]
fn above_the_threshold_tasks_stay_where_they_were_made() {
    for (threshold, expect) in [(0.05, [1, 0, 0]), (0.9, [0, 0, 1])] {
        let s = Scheduler::new(
            3,
            SchedulerConfig {
                policy: Policy::Bts,
                sample_every: 1,
                load_threshold: threshold,
                ..SchedulerConfig::default()
            },
            2,
        );
        // Cores 0 and 1 serve connections and are loaded; core 2 is idle.
        assert_eq!((s.place_connection(), s.place_connection()), (0, 1));
        s.set_loads(&[0.25, 0.25, 0.0]);
        on_behalf_of(Some(0), || s.submit(work(), Priority::Low));
        assert_eq!(queued(&s), expect, "threshold {threshold}: {:?}", s.stats());
    }
}

#[test]
fn a_sample_measures_the_time_a_core_was_busy() {
    let s = sched(Policy::Bts, 2);
    s.sample();
    // Core 0 is busy for the whole window but the microseconds around the spin; core 1
    // does nothing. 20 ms of spin, so that only a stall of that order between the samples
    // could bring the measure under the half asked for.
    on_behalf_of(Some(0), || {
        let t = std::time::Instant::now();
        s.busy(false, || {
            while t.elapsed() < Duration::from_millis(20) {
                std::hint::spin_loop();
            }
        })
    });
    s.sample();
    let st = s.stats();
    assert!(st.cores[0].fg_load > 0.5, "{:?}", st.cores[0]);
    assert_eq!(st.cores[1].fg_load, 0.0, "{:?}", st.cores[1]);
}

#[test]
fn urgent_tasks_first_then_oldest_first() {
    let s = sched(Policy::Inline, 1);
    on_behalf_of(Some(0), || {
        s.submit(Work::Dedup(DedupWork::Forget { ns: 1 }), Priority::Low);
        s.submit(Work::Dedup(DedupWork::Forget { ns: 2 }), Priority::High);
        s.submit(Work::Dedup(DedupWork::Forget { ns: 3 }), Priority::Low);
    });
    let order: Vec<u32> = std::iter::from_fn(|| s.pop(0))
        .map(|(w, _)| match w {
            Work::Dedup(DedupWork::Forget { ns }) => ns,
            _ => 0,
        })
        .collect();
    assert_eq!(order, [2, 1, 3]);
}

#[test]
fn connections_fill_the_least_used_core() {
    let s = sched(Policy::Bts, 3);
    let placed: Vec<usize> = (0..4).map(|_| s.place_connection()).collect();
    assert_eq!(placed, [0, 1, 2, 0]);
    s.leave(1);
    assert_eq!(s.place_connection(), 1);
}

#[test]
fn a_connection_is_alone_once_it_reads_twice_with_no_other_between() {
    let s = sched(Policy::Bts, 1);
    // Three connections on the one core: none is alone by count.
    for _ in 0..3 {
        s.place_connection();
    }
    std::thread::spawn(move || {
        enter_core(0);
        // The first read of a connection after another's: not alone yet.
        assert!(!s.reads_alone(7));
        assert!(s.reads_alone(7));
        assert!(s.reads_alone(7));
        // Two busy connections take turns: neither is alone.
        for _ in 0..3 {
            assert!(!s.reads_alone(8));
            assert!(!s.reads_alone(7));
        }
        // The other went quiet.
        assert!(s.reads_alone(7));
        // A thread's only connection is alone from its first read.
        s.leave(0);
        s.leave(0);
        assert!(s.reads_alone(9));
    })
    .join()
    .unwrap();
}
