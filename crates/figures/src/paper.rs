//! The figures and the report of `cerberus-paper`: each experiment's figures drawn as
//! PNG (ours with the runs' ranges, the paper's values as a second series of the same colour
//! family), and `paper-results.md` written from the experiments' documents alone.

use crate::charts::{Chart, Legend, Series, PALETTE};
use crate::docs::paper::{ExperimentDoc, FigureDoc};
use crate::error::Result;
use std::fmt::Write;
use std::path::Path;

/// The charts of one experiment's figures.
pub fn charts(doc: &ExperimentDoc) -> Vec<Chart> {
    doc.figures.iter().map(chart).collect()
}

fn chart(f: &FigureDoc) -> Chart {
    let mut ours = 0usize;
    let series = f
        .series
        .iter()
        .map(|s| {
            // The paper's series take a lighter tone of the colour of ours before them.
            let color = if s.paper {
                let c = PALETTE[ours.saturating_sub(1) % PALETTE.len()];
                c.map(|v| v + (255 - v) / 2)
            } else {
                ours += 1;
                PALETTE[(ours - 1) % PALETTE.len()]
            };
            Series {
                name: s.name.clone(),
                color,
                values: s.values.clone(),
                ranges: s.ranges.clone(),
            }
        })
        .collect();
    Chart {
        file: f.file.clone(),
        title: f.title.clone(),
        x_desc: f.x_desc.clone(),
        y_desc: f.y_desc.clone(),
        categories: f.categories.clone(),
        series,
        percent: false,
        legend: Legend::UpperLeft,
        bars: f.bars,
    }
}

/// Draws the experiment's figures into `out` (with the `plot` feature).
pub fn draw(font: Option<&Path>, out: &Path, doc: &ExperimentDoc) -> Result<()> {
    crate::render::draw_charts(font, out, &charts(doc))
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        crate::table::thousands(v)
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A figure's values as a table: a row per category, a column per series (ours as the
/// median with the runs' range).
fn values(f: &FigureDoc) -> String {
    let mut out = format!("\n| {} |", f.x_desc);
    for s in &f.series {
        let _ = write!(out, " {} |", s.name);
    }
    out += "\n|---|";
    out += &"---|".repeat(f.series.len());
    for (i, c) in f.categories.iter().enumerate() {
        let _ = write!(out, "\n| {c} |");
        for s in &f.series {
            let v = s.values.get(i).copied().flatten();
            let r = s.ranges.get(i).copied().flatten();
            let cell = match (v, r) {
                (Some(v), Some((lo, hi))) if lo != hi => {
                    format!("{} ({}-{})", num(v), num(lo), num(hi))
                }
                (Some(v), _) => num(v),
                (None, _) => "-".into(),
            };
            let _ = write!(out, " {cell} |");
        }
    }
    out + "\n"
}

/// The report: per experiment its figures, its headlines (the paper's, ours with the range,
/// ours over the paper's, the direction, the cost model), the differences of setup and the
/// commands; made from the documents only, so that it says what the JSON says.
pub fn report(docs: &[ExperimentDoc], plots: &str) -> String {
    let mut out = String::from(
        "# The papers' figures, reproduced\n\n\
         Written by `cerberus-paper` from the JSON documents of its experiments (do not \
         edit by hand: run it again). Each value of ours is the median of the runs of its \
         point, with their range; the paper's values are those its text or figures give. A \
         headline holds its direction when ours and the paper's are both gains, both losses \
         or both within 5 % of even (for a peer's bar: when ours reaches it); the cost model's column is what this machine's model \
         predicts for ours, and holds when ours is within 15 % of it.\n",
    );
    let held = docs
        .iter()
        .flat_map(|d| &d.headlines)
        .filter(|h| h.same_direction())
        .count();
    let all = docs.iter().map(|d| d.headlines.len()).sum::<usize>();
    let _ = writeln!(
        out,
        "\n{held} of {all} headlines in the paper's direction, over {} experiments.",
        docs.len()
    );
    for d in docs {
        let _ = write!(
            out,
            "\n## {}: {}\n\n{} ({} scale, {} run(s) a point, {:.0} s).\n",
            d.name, d.source, d.title, d.scale, d.rounds, d.seconds
        );
        if !d.headlines.is_empty() {
            out +=
                "\n| claim | paper | ours (range) | ours / paper | direction | model | holds |\n\
                    |---|---|---|---|---|---|---|\n";
            for h in &d.headlines {
                let model = h.model.map_or("-".to_string(), num);
                let holds = match h.model_holds() {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "-",
                };
                let dir = match (h.floor, h.same_direction()) {
                    (false, true) => "same",
                    (false, false) => "**opposite**",
                    (true, true) => "meets the bar",
                    (true, false) => "**below the bar**",
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} ({}-{}) | {:.2} | {dir} | {model} | {holds} |",
                    h.claim,
                    num(h.paper),
                    num(h.ours),
                    num(h.ours_range.0),
                    num(h.ours_range.1),
                    h.ratio(),
                );
            }
            for h in d.headlines.iter().filter(|h| !h.why.is_empty()) {
                let _ = writeln!(out, "\n- *{}*: {}", h.claim, h.why);
            }
        }
        for f in &d.figures {
            let _ = write!(out, "\n![{}]({plots}/{})\n", f.title, f.file);
            out += &values(f);
        }
        if !d.differences.is_empty() {
            out += "\nWhere the setup differs from the paper's:\n\n";
            for x in &d.differences {
                let _ = writeln!(out, "- {x}");
            }
        }
        out += "\nCommands:\n\n```\n";
        for c in &d.commands {
            let _ = writeln!(out, "{c}");
        }
        out += "```\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::paper::{Headline, SeriesDoc};

    fn doc() -> ExperimentDoc {
        ExperimentDoc {
            name: "cerberus-fig8".into(),
            source: "Cerberus, Fig. 8".into(),
            title: "gets per tenant".into(),
            scale: "quick".into(),
            rounds: 3,
            seconds: 12.0,
            commands: vec!["cerberus-bench multitenant".into()],
            figures: vec![FigureDoc {
                file: "fig8c.png".into(),
                title: "Fig. 8c".into(),
                x_desc: "tenants".into(),
                y_desc: "gets/s".into(),
                categories: vec!["1".into(), "8".into()],
                series: vec![
                    SeriesDoc {
                        name: "ours".into(),
                        paper: false,
                        values: vec![Some(10.0), Some(5.0)],
                        ranges: vec![Some((9.0, 11.0)), None],
                    },
                    SeriesDoc {
                        name: "paper".into(),
                        paper: true,
                        values: vec![Some(1.0), None],
                        ranges: vec![],
                    },
                ],
                bars: true,
            }],
            headlines: vec![Headline {
                claim: "gets, ours over baseline, 8 tenants".into(),
                paper: 2.9,
                ours: 1.2,
                ours_range: (1.1, 1.3),
                model: Some(1.15),
                command: "x".into(),
                why: "the filters are on files".into(),
                floor: false,
            }],
            differences: vec!["files, not NAND".into()],
        }
    }

    #[test]
    fn the_report_says_what_the_documents_say() {
        let r = report(&[doc()], "plots");
        assert!(
            r.contains("1 of 1 headlines in the paper's direction"),
            "{r}"
        );
        assert!(r.contains("| gets, ours over baseline, 8 tenants | 2.90 | 1.20 (1.10-1.30) | 0.41 | same | 1.15 | yes |"), "{r}");
        assert!(r.contains("![Fig. 8c](plots/fig8c.png)"));
        assert!(r.contains("| tenants | ours | paper |\n|---|---|---|\n| 1 | 10.0 (9.00-11.0) | 1.00 |\n| 8 | 5.00 | - |"), "{r}");
        assert!(r.contains("- files, not NAND"));
        assert!(r.contains("*gets, ours over baseline, 8 tenants*: the filters are on files"));
    }

    #[test]
    fn the_papers_series_is_a_lighter_tone() {
        let c = charts(&doc());
        assert_eq!(c.len(), 1);
        let (ours, paper) = (c[0].series[0].color, c[0].series[1].color);
        assert_eq!(ours, PALETTE[0]);
        assert!(paper.iter().zip(ours).all(|(p, o)| *p >= o) && paper != ours);
    }

    #[test]
    fn bars_follow_the_figure_and_older_documents_read_as_lines() {
        let d = doc();
        assert!(charts(&d)[0].bars);
        let mut v = serde_json::to_value(&d).unwrap();
        v["figures"][0].as_object_mut().unwrap().remove("bars");
        let old: ExperimentDoc = serde_json::from_value(v).unwrap();
        assert!(!old.figures[0].bars && !charts(&old)[0].bars);
    }

    /// Bars, and a line with a category missing, are drawn (with the `plot` feature and a
    /// font on this machine).
    #[cfg(feature = "plot")]
    #[test]
    fn bars_and_broken_lines_are_drawn() {
        let dir = std::env::temp_dir().join(format!("paper-draw-{}", std::process::id()));
        let mut d = doc();
        let mut lines = d.figures[0].clone();
        lines.file = "lines.png".into();
        lines.bars = false;
        lines.categories.push("16".into());
        lines.series[0].values = vec![Some(10.0), None, Some(3.0)];
        d.figures.push(lines);
        if crate::font::find_font(None).is_err() {
            return; // no font here: nothing can be drawn
        }
        draw(None, &dir, &d).unwrap();
        for f in ["fig8c.png", "lines.png"] {
            assert!(std::fs::metadata(dir.join(f)).unwrap().len() > 1000, "{f}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
