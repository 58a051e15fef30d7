//! The font the charts' text is drawn with: one given, or the best found on the machine.

use crate::error::{bail, input, Result};
use std::path::{Path, PathBuf};

/// The font for the charts' text: `explicit`, or the best sans-serif font under the usual
/// font directories.
#[cfg_attr(not(feature = "plot"), allow(dead_code))] // drawing only
pub fn find_font(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        bail!("font file {} not found", p.display());
    }
    let mut roots = vec![
        PathBuf::from("/usr/share/fonts"),
        PathBuf::from("/usr/local/share/fonts"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(Path::new(&home).join(".local/share/fonts"));
        roots.push(Path::new(&home).join(".fonts"));
    }
    find_font_under(&roots).ok_or_else(|| {
        input(
            "no TrueType or OpenType font found under /usr/share/fonts to draw the text with: \
             install one (Debian: apt-get install fonts-dejavu-core; scripts/repro-multitenant \
             does) or give one with --font FILE",
        )
    })
}

/// The best font file under `roots`: DejaVu Sans, Liberation Sans, then any plain (not bold,
/// italic, mono, ...) sans-serif font, then any plain font, then any font.
#[cfg_attr(not(feature = "plot"), allow(dead_code))] // drawing only
pub fn find_font_under(roots: &[PathBuf]) -> Option<PathBuf> {
    fn walk(dir: &Path, depth: u32, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if depth < 8 {
                    walk(&p, depth + 1, found);
                }
            } else if p
                .extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("ttf") || x.eq_ignore_ascii_case("otf"))
            {
                found.push(p);
            }
        }
    }
    let mut found = Vec::new();
    for r in roots {
        walk(r, 0, &mut found);
    }
    found.sort();
    let rank = |p: &PathBuf| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let styled = [
            "bold",
            "italic",
            "oblique",
            "mono",
            "condensed",
            "light",
            "thin",
            "black",
            "semi",
            "medium",
        ]
        .iter()
        .any(|s| name.contains(s));
        match name.as_str() {
            "dejavusans.ttf" => 0,
            "liberationsans-regular.ttf" => 1,
            _ if name.contains("sans") && !name.contains("serif") && !styled => 2,
            _ if !styled => 3,
            _ => 4,
        }
    };
    found.into_iter().min_by_key(rank)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fonts_are_found_by_preference() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        assert_eq!(find_font_under(std::slice::from_ref(&root)), None);
        let put = |rel: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
            p
        };
        let bold = put("a/NotoSans-Bold.ttf");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(bold));
        let serif = put("b/NotoSerif-Regular.otf");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(serif));
        let sans = put("c/d/NotoSans-Regular.TTF");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(sans));
        let dejavu = put("truetype/dejavu/DejaVuSans.ttf");
        put("truetype/dejavu/DejaVuSans-Bold.ttf");
        assert_eq!(find_font_under(std::slice::from_ref(&root)), Some(dejavu));
        assert!(find_font(Some(&root.join("missing.ttf"))).is_err());
    }
}
