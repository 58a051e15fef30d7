//! Drawing the charts with plotters (cargo feature `plot`).

use super::charts::{format_y, Chart, Legend};
use crate::error::{input, Context, Result};
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;
use std::path::Path;

const FONT: &str = "sans-serif";
const SIZE: (u32, u32) = (1200, 720);

/// Reads the font file and gives it to plotters for every family the charts may ask for.
pub fn register_font(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    // plotters keeps fonts for the whole run.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    for family in ["sans-serif", "serif", "monospace"] {
        plotters::style::register_font(family, FontStyle::Normal, bytes).map_err(|_| {
            input(format!(
                "{} is not a TrueType or OpenType font",
                path.display()
            ))
        })?;
    }
    Ok(())
}

fn rgb(c: [u8; 3]) -> RGBColor {
    RGBColor(c[0], c[1], c[2])
}

pub fn chart(c: &Chart, path: &Path) -> Result<()> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let n = c.categories.len().max(1);
    let y_max = if c.percent {
        104.0
    } else {
        let max = c
            .series
            .iter()
            .flat_map(|s| {
                let tops = s.ranges.iter().flatten().map(|r| r.1);
                s.values.iter().flatten().copied().chain(tops)
            })
            .fold(0.0f64, f64::max);
        if max > 0.0 {
            max * 1.15
        } else {
            1.0
        }
    };
    // Category i sits at 2i + 1 on an axis from 0 to 2n: half a step of margin each side.
    let n = i32::try_from(n).map_err(|e| input(format!("too many categories: {e}")))?;
    let x = (0..2 * n).with_key_points((0..n).map(|i| 2 * i + 1).collect());
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, (FONT, 20))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x, 0.0..y_max)?;
    let label = |x: &i32| match usize::try_from((x - 1) / 2) {
        Ok(i) if x % 2 == 1 => c.categories.get(i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let y_label = |y: &f64| {
        if c.percent {
            format!("{y:.0}%")
        } else {
            format_y(*y, y_max)
        }
    };
    chart
        .configure_mesh()
        .x_desc(c.x_desc.as_str())
        .y_desc(c.y_desc.as_str())
        .x_label_formatter(&label)
        .y_label_formatter(&y_label)
        .y_labels(8)
        .label_style((FONT, 17))
        .axis_desc_style((FONT, 19))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.04))
        .draw()?;
    for (i, s) in c.series.iter().enumerate() {
        let color = rgb(s.color);
        // Lines drawn first are wider and their markers larger, so that a line drawn over
        // another with the same values leaves it visible on both sides.
        let rest = u32::try_from(c.series.len() - 1 - i).unwrap_or(0).min(3);
        let width = 2 + 2 * rest;
        let marker = 4 + 2 * rest as i32;
        let points: Vec<(i32, f64)> = (1..)
            .step_by(2)
            .zip(&s.values)
            .filter_map(|(x, v)| v.map(|v| (x, v)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(width)))?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(width))
            });
        chart.draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, marker, color.filled())),
        )?;
        // The range of the runs a value is the median of: a bar from min to max.
        let bars = (1..).step_by(2).zip(&s.ranges).filter_map(|(x, r)| {
            r.map(|(lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], color.stroke_width(2)))
        });
        chart.draw_series(bars)?;
    }
    let position = match c.legend {
        Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
        Legend::UpperRight => SeriesLabelPosition::UpperRight,
        Legend::LowerRight => SeriesLabelPosition::LowerRight,
    };
    chart
        .configure_series_labels()
        .position(position)
        .margin(12)
        .label_font((FONT, 17))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.5))
        .draw()?;
    root.present()?;
    Ok(())
}
