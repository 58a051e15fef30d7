//! What an experiment is to the run: its name, what it reproduces and what runs it; and the
//! check every experiment's headlines pass.

use super::ctx::Ctx;
use anyhow::{bail, Result};
use cerberus_figures::docs::paper::ExperimentDoc;

/// One experiment: its name (the JSON's stem) and what runs it.
pub struct Experiment {
    pub name: &'static str,
    pub reproduces: &'static str,
    pub run: fn(&mut Ctx) -> Result<ExperimentDoc>,
}

/// Refuses headlines with a figure that is not a number (a run whose counters were
/// missing): JSON has no NaN, and a report must not show one as a result.
pub fn check_headlines(hs: &[cerberus_figures::docs::paper::Headline]) -> Result<()> {
    for h in hs {
        let (lo, hi) = h.ours_range;
        if ![h.paper, h.ours, lo, hi].iter().all(|v| v.is_finite())
            || h.model.is_some_and(|m| !m.is_finite())
        {
            bail!("headline `{}` has a figure that is not a number", h.claim);
        }
    }
    Ok(())
}
