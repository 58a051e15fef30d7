//! The cost model of the get phase (Eq. 1 of the Cerberus paper): the terms of each search
//! step and ALKA, the average latency of a key-value access, computed from them.

use super::TenantResult;
use cerberus_engine::StepCost;
use serde::Serialize;

/// The cost-model terms of one search step over the get phase (Eq. 1 of the Cerberus paper).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepTerms {
    pub step: String,
    /// HR: gets answered at this step over the gets that reached it (null if none did).
    pub hr: Option<f64>,
    /// HT: mean time of a get answered here, in this step, value read included (null if no
    /// hit).
    pub ht_us: Option<f64>,
    /// MP: mean time a get that went on spent in this step (null if no miss).
    pub mp_us: Option<f64>,
    /// Gets that searched this step: its hits plus its misses.
    pub gets_reaching: u64,
}

/// The terms of every step, in search order.
pub fn step_terms(search: &[StepCost]) -> Vec<StepTerms> {
    search
        .iter()
        .map(|s| {
            let reaching = s.hits + s.misses;
            let mean_us = |nanos: u64, n: u64| (n > 0).then(|| nanos as f64 / n as f64 / 1e3);
            StepTerms {
                step: s.step.clone(),
                hr: (reaching > 0).then(|| s.hits as f64 / reaching as f64),
                ht_us: mean_us(s.hit_nanos, s.hits),
                mp_us: mean_us(s.miss_nanos, s.misses),
                gets_reaching: reaching,
            }
        })
        .collect()
}

/// ALKA (average latency of a key-value access) by Eq. 1, from the last step up:
/// `ALKA_i = HR_i*HT_i + (1 - HR_i)*(MP_i + ALKA_{i+1})`, and `ALKA_n = HR_n*HT_n` for the
/// last step n that answered any get. A step no get reached adds nothing. In microseconds;
/// `None` when no step answered a get.
pub fn alka_us(steps: &[StepTerms]) -> Option<f64> {
    let last = steps.iter().rposition(|s| s.ht_us.is_some())?;
    let hit = |s: &StepTerms| s.hr.unwrap_or(0.0) * s.ht_us.unwrap_or(0.0);
    let mut alka = hit(&steps[last]);
    for s in steps[..last].iter().rev() {
        if let Some(hr) = s.hr {
            alka = hit(s) + (1.0 - hr) * (s.mp_us.unwrap_or(0.0) + alka);
        }
    }
    Some(alka)
}

/// A tenant's cost model over the get phase, next to its measured mean get latency.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostModel {
    pub steps: Vec<StepTerms>,
    pub alka_us: Option<f64>,
    /// The mean of the tenant's get latencies (its thread's clock).
    pub measured_mean_get_us: Option<f64>,
    /// `alka_us / measured_mean_get_us`.
    pub ratio: Option<f64>,
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub fn cost_model(search: &[StepCost], measured_mean_get_us: Option<f64>) -> CostModel {
    let steps = step_terms(search);
    let alka_us = alka_us(&steps);
    CostModel {
        steps,
        alka_us,
        measured_mean_get_us,
        ratio: ratio(alka_us, measured_mean_get_us),
    }
}

/// The tenant's mean get latency in microseconds (`None` without gets).
pub(super) fn measured_mean_get_us(t: &TenantResult) -> Option<f64> {
    (t.get.latency.count() > 0).then(|| t.get.latency.mean() / 1e3)
}

/// The cost model of a tenant's get phase, `None` when the engine keeps no namespace
/// counters.
pub fn tenant_cost_model(t: &TenantResult) -> Option<CostModel> {
    let d = t.get_delta()?;
    Some(cost_model(&d.search, measured_mean_get_us(t)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multitenant::fixtures::step;

    #[test]
    fn alka_follows_the_recurrence_from_the_last_step_up() {
        // memtable: 10 hits of 2 us, 90 misses of 1 us; L0: 90 misses of 5 us; runs: not
        // reached; L1: 60 hits of 100 us, 30 misses of 10 us; L2: 30 hits of 200 us; L3: none.
        let search = [
            step("memtable", 10, 2, 90, 1),
            step("L0", 0, 0, 90, 5),
            step("runs", 0, 0, 0, 0),
            step("L1", 60, 100, 30, 10),
            step("L2", 30, 200, 0, 0),
            step("L3", 0, 0, 0, 0),
        ];
        let steps = step_terms(&search);
        assert_eq!(steps[0].hr, Some(0.1));
        assert_eq!(steps[0].ht_us, Some(2.0));
        assert_eq!(steps[0].mp_us, Some(1.0));
        assert_eq!(steps[0].gets_reaching, 100);
        assert_eq!(steps[1].hr, Some(0.0));
        assert_eq!(steps[1].ht_us, None);
        assert_eq!(steps[2].hr, None);
        assert_eq!(steps[2].gets_reaching, 0);
        assert!((steps[3].hr.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(steps[4].hr, Some(1.0));
        assert_eq!(steps[5].hr, None);
        // By hand: ALKA_L2 = 1 * 200 = 200; ALKA_L1 = 2/3 * 100 + 1/3 * (10 + 200) =
        // 136.667; runs (not reached) passes it on; ALKA_L0 = 0 + 1 * (5 + 136.667) =
        // 141.667; ALKA_memtable = 0.1 * 2 + 0.9 * (1 + 141.667) = 128.6. That is all the
        // time spent in steps over the gets: (20 + 90 + 450 + 6000 + 300 + 6000) / 100.
        let alka = alka_us(&steps).unwrap();
        assert!((alka - 128.6).abs() < 1e-9, "{alka}");

        let m = cost_model(&search, Some(160.75));
        assert_eq!(m.alka_us, Some(alka));
        assert!((m.ratio.unwrap() - 0.8).abs() < 1e-9);
        assert_eq!(cost_model(&search, None).ratio, None);
        assert_eq!(cost_model(&search, Some(0.0)).ratio, None);

        // The last step that answered gets adds its hit term only: gets that went on from it
        // found nothing (HR < 1) and count as no time.
        let last = [step("memtable", 5, 2, 5, 1), step("L0", 0, 0, 0, 0)];
        assert_eq!(alka_us(&step_terms(&last)), Some(1.0));
        // Nothing counted yet (the engine before its search counters): no ALKA, no NaN.
        let zero = [step("memtable", 0, 0, 0, 0), step("L0", 0, 0, 0, 0)];
        let m = cost_model(&zero, Some(3.0));
        assert_eq!(m.alka_us, None);
        assert_eq!(m.ratio, None);
        assert!(m.steps.iter().all(|s| s.hr.is_none() && s.mp_us.is_none()));
        assert_eq!(cost_model(&[], Some(3.0)).alka_us, None);
        let text = serde_json::to_string(&m).unwrap();
        assert!(
            !text.contains("NaN") && text.contains(r#""alka_us":null"#),
            "{text}"
        );
    }
}
