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

/// Core 0 runs commands for about `busy` of every `period`; returns after `rounds` periods.
fn load_core0(s: &Scheduler, busy: Duration, period: Duration, rounds: u32) {
    on_behalf_of(Some(0), || {
        for _ in 0..rounds {
            let t = std::time::Instant::now();
            s.busy(true, || {
                while t.elapsed() < busy {
                    std::hint::spin_loop();
                }
            });
            std::thread::sleep(period.saturating_sub(t.elapsed()));
        }
    });
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
    load_core0(&s, Duration::from_millis(2), Duration::from_millis(3), 5);
    on_behalf_of(Some(0), || s.submit(work(), Priority::Low));
    on_behalf_of(Some(2), || s.submit(work(), Priority::Low));
    assert_eq!(queued(&s), [1, 0, 1]);
    assert_eq!(s.stats().migrations, 0);

    // BTS: a task of a core with connections goes to an idle core (none); an idle core's
    // stays.
    let s = sched(Policy::Bts, 3);
    assert_eq!(s.place_connection(), 0);
    load_core0(&s, Duration::from_millis(2), Duration::from_millis(4), 5);
    let st = s.stats();
    assert!(st.cores[0].fg_load > 0.2, "{:?}", st.cores[0]);
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
                pin_cores: false,
            },
            2,
        );
        // Cores 0 and 1 serve connections and are loaded; core 2 is idle.
        assert_eq!((s.place_connection(), s.place_connection()), (0, 1));
        std::thread::scope(|t| {
            for core in [0, 1] {
                let s = &s;
                t.spawn(move || {
                    on_behalf_of(Some(core), || {
                        for _ in 0..5 {
                            std::thread::sleep(Duration::from_millis(3));
                            let t = std::time::Instant::now();
                            s.busy(true, || {
                                while t.elapsed() < Duration::from_millis(1) {
                                    std::hint::spin_loop();
                                }
                            });
                        }
                    })
                });
            }
        });
        // The last commands sampled the loads (about 0.25 each).
        on_behalf_of(Some(0), || s.submit(work(), Priority::Low));
        assert_eq!(queued(&s), expect, "threshold {threshold}: {:?}", s.stats());
    }
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
