//! Plain-text tables, as the reports print them: aligned columns two
//! spaces apart (`dsh prompt --format explain`, `dsh diff`, `dsh
//! sessions`).

use std::fmt::Write as _;

/// One row of a table, from cells that are text.
pub fn row<const N: usize>(cells: [impl Into<String>; N]) -> Vec<String> {
    cells.into_iter().map(Into::into).collect()
}

/// Writes `rows` as aligned columns, two spaces apart, with a rule under
/// the header row: the `numeric` columns (by index) aligned right, the
/// others left.
pub fn table(out: &mut String, rows: &[Vec<String>], numeric: &[usize]) {
    lay_out(out, rows, numeric, true);
}

/// Writes `rows` as aligned columns, two spaces apart, left aligned,
/// without a rule.
pub fn columns(out: &mut String, rows: &[Vec<String>]) {
    lay_out(out, rows, &[], false);
}

fn lay_out(out: &mut String, rows: &[Vec<String>], numeric: &[usize], rule: bool) {
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (index, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            if column > 0 {
                line.push_str("  ");
            }
            let pad = std::iter::repeat_n(' ', widths[column] - cell.chars().count());
            if numeric.contains(&column) {
                line.extend(pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.extend(pad);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if index == 0 && rule {
            let rule: usize = widths.iter().sum::<usize>() + 2 * (columns - 1);
            let _ = writeln!(out, "{}", "-".repeat(rule));
        }
    }
}
