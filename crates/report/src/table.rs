//! A minimal aligned text table for terminal output.

use std::io::{self, Write};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// Writes `rows` under `header`, each column as wide as its widest cell,
/// separated by two spaces, with no trailing whitespace.
pub fn write_table(
    out: &mut impl Write,
    header: &[(&str, Align)],
    rows: &[Vec<String>],
) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|(h, _)| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header_cells: Vec<String> = header.iter().map(|(h, _)| h.to_string()).collect();
    for row in std::iter::once(&header_cells).chain(rows) {
        let mut line = String::new();
        for (i, ((cell, width), (_, align))) in row.iter().zip(&widths).zip(header).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = width - cell.chars().count();
            match align {
                Align::Left => {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                }
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut out = Vec::new();
        write_table(
            &mut out,
            &[("NAME", Align::Left), ("CPU", Align::Right)],
            &[
                vec!["m5.large".into(), "2".into()],
                vec!["c5.12xlarge".into(), "48".into()],
            ],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "NAME         CPU\nm5.large       2\nc5.12xlarge   48\n"
        );
    }
}
