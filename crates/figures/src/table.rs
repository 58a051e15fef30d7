//! Markdown tables, the one writer of every table the bench prints or writes: a heading row,
//! an alignment row and a row per line, `| a | b |`.

/// A markdown table being built.
pub struct Table {
    out: String,
}

impl Table {
    /// A table with these column headings, every column left-aligned (`---`).
    pub fn new<S: AsRef<str>>(head: &[S]) -> Table {
        Table::aligned(head.iter().map(|h| (h.as_ref(), false)))
    }

    /// A table with these columns, each a heading and whether it is right-aligned (`---:`).
    pub fn aligned<'a>(cols: impl IntoIterator<Item = (&'a str, bool)>) -> Table {
        let (head, align): (Vec<&str>, Vec<&str>) = cols
            .into_iter()
            .map(|(h, right)| (h, if right { "---:" } else { "---" }))
            .unzip();
        let mut t = Table { out: String::new() };
        t.row(head);
        t.out += &format!("|{}|\n", align.join("|"));
        t
    }

    /// Adds a row of cells.
    pub fn row<S: AsRef<str>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Table {
        let cells: Vec<String> = cells.into_iter().map(|c| c.as_ref().to_string()).collect();
        self.out += &format!("| {} |\n", cells.join(" | "));
        self
    }

    /// The table, each line ending in a newline.
    pub fn render(&self) -> &str {
        &self.out
    }
}

/// `1234567.8` -> `1,234,568`.
pub fn thousands(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let n = x.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// The median of the values (the mean of the middle two for an even count); `None` if empty.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_alignment() {
        let mut t = Table::aligned([("a", false), ("b", true)]);
        t.row(["1", ""]);
        assert_eq!(t.render(), "| a | b |\n|---|---:|\n| 1 |  |\n");
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median([]), None);
        assert_eq!(median([f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
