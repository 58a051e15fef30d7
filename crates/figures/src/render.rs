//! Drawing a list of charts into PNG files: with the `plot` feature, else an error that says
//! how to build with it.

use crate::charts::Chart;
use crate::error::Result;

/// Draws `charts` into `out` (made if missing), printing each file's path.
#[cfg(feature = "plot")]
pub(crate) fn draw_charts(
    font: Option<&std::path::Path>,
    out: &std::path::Path,
    charts: &[Chart],
) -> Result<()> {
    use crate::error::Context;
    use crate::font::find_font;

    let font = find_font(font)?;
    crate::draw::register_font(&font)?;
    std::fs::create_dir_all(out).with_context(|| format!("making {}", out.display()))?;
    for c in charts {
        let path = out.join(&c.file);
        crate::draw::chart(c, &path).with_context(|| format!("drawing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}

#[cfg(not(feature = "plot"))]
pub(crate) fn draw_charts(
    _: Option<&std::path::Path>,
    _: &std::path::Path,
    charts: &[Chart],
) -> Result<()> {
    crate::error::bail!(
        "this cerberus-bench was built without the `plot` feature ({} charts to draw); build it \
         with: cargo build --release -p cerberus-bench --features plot",
        charts.len()
    )
}
