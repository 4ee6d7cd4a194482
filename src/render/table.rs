//! A plain-text table: a header row, columns padded to their widest cell,
//! the first column left-aligned and the rest right-aligned (numbers),
//! unless marked as text with [`Table::left`].

use std::io::{self, Write};

/// Rows of cells, printed with [`Table::write`].
#[derive(Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
    /// Columns (besides the first) that hold text, left-aligned.
    left: Vec<usize>,
}

impl Table {
    /// A table whose first row is `header`.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        let mut t = Table::default();
        t.row(header);
        t
    }

    /// Left-aligns columns `cols` (text such as names and places).
    pub fn left(mut self, cols: &[usize]) -> Self {
        self.left.extend_from_slice(cols);
        self
    }

    /// Appends a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Writes the table, each line starting with `indent`.
    pub fn write(&self, out: &mut dyn Write, indent: &str) -> io::Result<()> {
        let ncols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width = |c: usize| {
            self.rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..ncols).map(width).collect();
        for r in &self.rows {
            let mut line = String::from(indent);
            for (c, cell) in r.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c == 0 {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else if self.left.contains(&c) {
                    line.push_str("  ");
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(["what", "ms"]);
        t.row(["compute", "12.50"]);
        t.row(["idle", "3.00"]);
        let mut out = Vec::new();
        t.write(&mut out, "  ").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  what        ms\n  compute  12.50\n  idle      3.00\n"
        );
    }

    #[test]
    fn text_columns_align_left() {
        let mut t = Table::new(["ms", "where"]).left(&[1]);
        t.row(["12.50", "aten::item"]);
        t.row(["3.00", "-"]);
        let mut out = Vec::new();
        t.write(&mut out, "").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ms     where\n12.50  aten::item\n3.00   -\n"
        );
    }
}
