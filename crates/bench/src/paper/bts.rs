//! (experiments being written)

use super::Experiment;

pub fn experiments() -> Vec<Experiment> {
    Vec::new()
}
