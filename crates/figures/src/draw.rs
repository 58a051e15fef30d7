//! Drawing the charts with plotters (cargo feature `plot`).

use super::charts::{format_y, Chart, Legend, Series};
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
    // Lines: category i sits at 2i + 1 on an axis from 0 to 2n, half a step of margin each
    // side. Bars: each category takes 2k + 2 units for k series, a bar 2 units wide each and
    // a unit of margin each side, its label at the middle.
    let k = i32::try_from(c.series.len().max(1)).map_err(|e| input(format!("series: {e}")))?;
    let n = i32::try_from(n).map_err(|e| input(format!("too many categories: {e}")))?;
    let step = if c.bars { 2 * k + 2 } else { 2 };
    let x = (0..step * n).with_key_points((0..n).map(|i| step * i + step / 2).collect());
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, (FONT, 20))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x, 0.0..y_max)?;
    let label = |x: &i32| match usize::try_from(x / step) {
        Ok(i) if x % step == step / 2 => c.categories.get(i).cloned().unwrap_or_default(),
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
        .disable_x_mesh()
        .draw()?;
    for (j, s) in c.series.iter().enumerate() {
        let j = i32::try_from(j).map_err(|e| input(format!("series: {e}")))?;
        if c.bars {
            bars(&mut chart, s, step, 1 + 2 * j)?;
        } else {
            lines(&mut chart, s, c.series.len() as i32 - 1 - j)?;
        }
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

type Area<'a> = ChartContext<
    'a,
    BitMapBackend<'a>,
    Cartesian2d<
        plotters::coord::combinators::WithKeyPoints<plotters::coord::types::RangedCoordi32>,
        plotters::coord::types::RangedCoordf64,
    >,
>;

/// One series as a line through its values, broken where a category has none, with a
/// marker at each value and the runs' range as a vertical bar. `rest`: series drawn after
/// it; lines drawn first are wider and their markers larger, so that a line drawn over
/// another with the same values leaves it visible on both sides.
fn lines(chart: &mut Area<'_>, s: &Series, rest: i32) -> Result<()> {
    let color = rgb(s.color);
    let rest = rest.clamp(0, 3);
    let width = 2 + 2 * rest as u32;
    let marker = 4 + 2 * rest;
    let at = |i: usize| 2 * i as i32 + 1;
    // The values between two missing ones: a line each.
    let at_values: Vec<Option<(i32, f64)>> = (s.values.iter().enumerate())
        .map(|(i, v)| v.map(|v| (at(i), v)))
        .collect();
    let runs = at_values
        .split(Option::is_none)
        .map(|r| r.iter().flatten().copied());
    for (r, points) in runs.enumerate() {
        let points: Vec<(i32, f64)> = points.collect();
        let drawn =
            chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(width)))?;
        if r == 0 {
            drawn.label(s.name.as_str()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(width))
            });
        }
        chart.draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, marker, color.filled())),
        )?;
    }
    // The range of the runs a value is the median of: a bar from min to max.
    let ranges = s.ranges.iter().enumerate().filter_map(|(i, r)| {
        r.map(|(lo, hi)| PathElement::new(vec![(at(i), lo), (at(i), hi)], color.stroke_width(2)))
    });
    chart.draw_series(ranges)?;
    Ok(())
}

/// One series as a bar per category with a value, `offset` units into each category's
/// `step`, the runs' range as a whisker over it.
fn bars(chart: &mut Area<'_>, s: &Series, step: i32, offset: i32) -> Result<()> {
    let color = rgb(s.color);
    let left = |i: usize| step * i as i32 + offset;
    let rects = s.values.iter().enumerate().filter_map(|(i, v)| {
        v.map(|v| Rectangle::new([(left(i), 0.0), (left(i) + 2, v)], color.filled()))
    });
    chart
        .draw_series(rects)?
        .label(s.name.as_str())
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], color.filled()));
    // A whisker at the bar's middle: the left edge of its second unit.
    let whiskers = s.ranges.iter().enumerate().filter_map(|(i, r)| {
        r.map(|(lo, hi)| {
            PathElement::new(
                vec![(left(i) + 1, lo), (left(i) + 1, hi)],
                BLACK.stroke_width(2),
            )
        })
    });
    chart.draw_series(whiskers)?;
    Ok(())
}
