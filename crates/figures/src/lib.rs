//! The figures of the Cerberus benchmarks: the typed result documents the experiments of
//! `cerberus-bench` and `cerberus-paper` write as JSON ([`docs`]), and the commands that read them back and draw
//! them: PNG charts and markdown tables of a multitenant grid (`plot`, `grid-table`; `grid-median`: the median document of a
//! repeated point), of an
//! iterator sweep (`plot-iterators`), of the secondary-key queries (`plot-queries`), of the
//! scheduling policies (`plot-bts`) and of the noisy-neighbour experiment (`plot-noisy`,
//! [`noisy_table`]); and the one markdown table writer ([`Table`]).
//!
//! Reading the files, laying out the charts and finding a font is plain code, tested without
//! any feature. Only the drawing needs the cargo feature `plot` (plotters, drawing text with
//! its `ab_glyph` renderer from a TrueType font read at run time, so that the build needs no
//! system library). The bench and the paper depend on this crate, never the other way.

#![deny(missing_docs)]

mod bts;
mod charts;
mod data;
pub mod docs;
#[cfg(feature = "plot")]
mod draw;
mod error;
mod font;
mod grid;
mod grid_table;
mod iterators;
mod noisy;
pub mod paper;
mod queries;
mod render;
mod repeat;
mod table;

pub use bts::main as plot_bts;
pub use error::FigureError;
pub use grid::main as plot;
pub use grid_table::main as grid_table;
pub use iterators::main as plot_iterators;
pub use noisy::{main as plot_noisy, table as noisy_table};
pub use queries::main as plot_queries;
pub use repeat::main as grid_median;
pub use table::{median, thousands, Table};
