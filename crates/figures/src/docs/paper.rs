//! The document of one experiment of `cerberus-paper`: what ran, the figures it draws
//! (ours as medians with ranges, the paper's values beside them where it gives numbers) and
//! its headlines (the paper's claim, ours, the ratio, and why they differ).

use serde::{Deserialize, Serialize};

/// One experiment: one JSON in the output directory, one or more figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentDoc {
    /// File stem, e.g. `cerberus-fig8`.
    pub name: String,
    /// The paper and its figure(s), e.g. `Cerberus (TECS 2023), Fig. 8 and 10a`.
    pub source: String,
    /// What the experiment measures, in a sentence.
    pub title: String,
    /// `quick` or `full`.
    pub scale: String,
    /// Runs of each point (the figures show their median and range).
    pub rounds: usize,
    /// Seconds the experiment took.
    pub seconds: f64,
    /// The command lines it ran, in order (one per point and round).
    pub commands: Vec<String>,
    /// Its figures.
    pub figures: Vec<FigureDoc>,
    /// The paper's headlines and ours.
    pub headlines: Vec<Headline>,
    /// Where the setup differs from the paper's (devices, scale, datasets), term by term.
    pub differences: Vec<String>,
}

/// A chart over categories (tenant counts, queries, degrees): lines, or grouped bars.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FigureDoc {
    /// The PNG's file name (in the output directory).
    pub file: String,
    /// Its title, naming the paper's figure it redraws.
    pub title: String,
    /// The x axis.
    pub x_desc: String,
    /// The y axis, with its unit.
    pub y_desc: String,
    /// The x axis' categories.
    pub categories: Vec<String>,
    /// Its lines (or bars).
    pub series: Vec<SeriesDoc>,
    /// Drawn as a bar per series in each category, as the paper draws its comparisons
    /// (false: lines, as for sweeps; documents from before bars have none).
    #[serde(default)]
    pub bars: bool,
}

impl FigureDoc {
    /// The same figure drawn as grouped bars.
    pub fn as_bars(self) -> FigureDoc {
        FigureDoc { bars: true, ..self }
    }
}

/// One line: a value per category (`None`: no point there).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesDoc {
    /// Its legend.
    pub name: String,
    /// The paper's values (drawn as the second series of a pair), not ours.
    pub paper: bool,
    /// Per category, the median of the runs.
    pub values: Vec<Option<f64>>,
    /// Per category, the runs' range (min, max); empty for the paper's values.
    pub ranges: Vec<Option<(f64, f64)>>,
}

/// A claim of the paper and ours: both as the same measure (a ratio between systems, most
/// often), so that their ratio says how far ours is from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// The claim, e.g. `gets/s per tenant, per-namespace over baseline, 8 tenants`.
    pub claim: String,
    /// The paper's value.
    pub paper: f64,
    /// Ours: the median of the runs.
    pub ours: f64,
    /// Ours: the runs' range.
    pub ours_range: (f64, f64),
    /// What the cost model predicts ours to be on this machine (None: no model term).
    pub model: Option<f64>,
    /// The command (or the point of `commands`) that measured it.
    pub command: String,
    /// Why ours and the paper's differ, term by term (empty where they agree).
    pub why: String,
    /// The reference is a bar ours must reach (a peer's, not a paper figure): the headline
    /// holds when ours is at least it.
    #[serde(default)]
    pub floor: bool,
}

impl Headline {
    /// Ours over the paper's.
    pub fn ratio(&self) -> f64 {
        self.ours / self.paper
    }

    /// Whether ours points the same way as the paper's: both above 1 (a gain), both below
    /// 1 (a loss), or both within 5 % of 1 (no difference), for claims that are ratios; for
    /// a bar (`floor`), whether ours reaches it.
    pub fn same_direction(&self) -> bool {
        if self.floor {
            return self.ours >= self.paper;
        }
        let side = |v: f64| {
            if (v - 1.0).abs() <= 0.05 {
                0
            } else if v > 1.0 {
                1
            } else {
                -1
            }
        };
        side(self.paper) == side(self.ours)
    }

    /// Whether the cost model accounts for ours within 15 % (None: no model).
    pub fn model_holds(&self) -> Option<bool> {
        self.model
            .map(|m| m > 0.0 && (self.ours / m - 1.0).abs() <= 0.15)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headline(paper: f64, ours: f64, model: Option<f64>) -> Headline {
        Headline {
            claim: "x".into(),
            paper,
            ours,
            ours_range: (ours, ours),
            model,
            command: String::new(),
            why: String::new(),
            floor: false,
        }
    }

    #[test]
    fn directions_and_model() {
        assert!(headline(2.9, 1.2, None).same_direction());
        assert!(!headline(2.9, 0.9, None).same_direction());
        assert!(headline(1.01, 0.97, None).same_direction());
        assert!(!headline(1.01, 1.2, None).same_direction());
        assert!(headline(0.5, 0.8, None).same_direction());
        assert_eq!(headline(2.9, 1.2, Some(1.1)).model_holds(), Some(true));
        assert_eq!(headline(2.9, 1.2, Some(1.5)).model_holds(), Some(false));
        assert_eq!(headline(2.9, 1.2, None).model_holds(), None);
        assert!((headline(2.0, 1.0, None).ratio() - 0.5).abs() < 1e-12);
        let bar = |ours| Headline {
            floor: true,
            ..headline(1.0, ours, None)
        };
        assert!(bar(3.9).same_direction() && bar(1.0).same_direction());
        assert!(!bar(0.99).same_direction());
    }
}
