//! The points of a bts run, their medians over the rounds and the tables printed of them.

use cerberus_device::Policy;
pub use cerberus_figures::docs::bts::{Median, Point, RunDoc};
use cerberus_figures::{median, Table};

pub fn medians(points: &[Point], policies: &[Policy], threads: &[usize]) -> Vec<Median> {
    let mut out = Vec::new();
    for &t in threads {
        for &p in policies {
            let of: Vec<&Point> = points
                .iter()
                .filter(|x| x.policy == p && x.threads == t)
                .collect();
            let m = |f: fn(&Point) -> f64| median(of.iter().map(|x| f(x))).unwrap_or(0.0);
            out.push(Median {
                policy: p,
                threads: t,
                mean_us: m(|x| x.mean_us),
                p99_us: m(|x| x.p99_us),
                p999_us: m(|x| x.p999_us),
                puts_per_sec: m(|x| x.puts_per_sec),
                drain_seconds: m(|x| x.drain_seconds),
                migrations: m(|x| x.migrations as f64),
                backlog_at_end: m(|x| x.backlog_at_end as f64),
                service_us: m(|x| x.service_us),
                outside_us: m(|x| x.mean_us - x.service_us),
                fg_queueing_us: m(|x| x.fg_queueing_us),
                over_off: (p == Policy::Bts)
                    .then(|| ratio_in_rounds(points, t, Policy::Off))
                    .flatten(),
                over_inline: (p == Policy::Bts)
                    .then(|| ratio_in_rounds(points, t, Policy::Inline))
                    .flatten(),
            });
        }
    }
    out
}

pub fn print_tables(medians: &[Median], policies: &[Policy], threads: &[usize]) {
    println!("{}", table(medians, policies, threads));
    let mut t = Table::new(&[
        "client threads",
        "policy",
        "service us",
        "rest of the latency us",
        "background in the way us/command",
        "backlog at the end",
        "drain s",
        "migrations",
    ]);
    for m in medians {
        t.row([
            m.threads.to_string(),
            format!("{:?}", m.policy),
            format!("{:.1}", m.service_us),
            format!("{:.1}", m.outside_us),
            format!("{:.1}", m.fg_queueing_us),
            format!("{:.0}", m.backlog_at_end),
            format!("{:.2}", m.drain_seconds),
            format!("{:.0}", m.migrations),
        ]);
    }
    print!("\n{}", t.render());
}

/// The median over the rounds of `bts`'s mean latency over `other`'s at `threads` clients.
fn ratio_in_rounds(points: &[Point], threads: usize, other: Policy) -> Option<f64> {
    let mean = |p: Policy, r: usize| {
        points
            .iter()
            .find(|x| x.policy == p && x.threads == threads && x.round == r)
            .map(|x| x.mean_us)
    };
    let rounds = points.iter().map(|x| x.round).max()? + 1;
    let v: Vec<f64> = (0..rounds)
        .filter_map(|r| Some(mean(Policy::Bts, r)? / mean(other, r)?))
        .collect();
    median(v)
}

/// Mean latency per policy and thread count, and the two ratios the paper's figure shows
/// (medians of the ratios within each round).
fn table(medians: &[Median], policies: &[Policy], threads: &[usize]) -> String {
    let get = |p: Policy, t: usize| medians.iter().find(|m| m.policy == p && m.threads == t);
    let both = policies.contains(&Policy::Bts);
    let ratio_cols: Vec<(Policy, &str)> =
        [(Policy::Off, "bts / off"), (Policy::Inline, "bts / inline")]
            .into_iter()
            .filter(|(p, _)| both && policies.contains(p))
            .collect();
    let mut head = vec!["client threads".to_string()];
    for p in policies {
        head.push(format!("{p:?} mean us (p99)"));
        head.push(format!("{p:?} puts/s"));
    }
    head.extend(ratio_cols.iter().map(|(_, name)| name.to_string()));
    let mut table = Table::new(&head);
    for &t in threads {
        let mut row = vec![t.to_string()];
        for &p in policies {
            match get(p, t) {
                Some(m) => {
                    row.push(format!("{:.1} ({:.0})", m.mean_us, m.p99_us));
                    row.push(format!("{:.0}", m.puts_per_sec));
                }
                None => row.extend(["-".to_string(), "-".to_string()]),
            }
        }
        for (p, _) in &ratio_cols {
            let r = get(Policy::Bts, t).and_then(|b| match p {
                Policy::Off => b.over_off,
                _ => b.over_inline,
            });
            row.push(r.map_or("-".into(), |r| format!("{r:.2}")));
        }
        table.row(row);
    }
    table.render().trim_end().to_string()
}
