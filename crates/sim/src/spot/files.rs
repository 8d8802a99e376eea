//! What the spot input readers share: the error type, which names the file,
//! the row (a CSV line or a JSON array item) and the field at fault, and a
//! small CSV table reader with named columns.

use std::fmt;

/// Where in a spot input file a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowRef {
    /// A CSV line, counted from 1 (the header is line 1).
    Line(u64),
    /// An item of the `SpotPriceHistory` array of a JSON response, from 0.
    Item(usize),
}

impl fmt::Display for RowRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowRef::Line(line) => write!(f, "line {line}"),
            RowRef::Item(index) => write!(f, "SpotPriceHistory[{index}]"),
        }
    }
}

/// Why a spot price history or interruption trace was rejected. Each
/// message is one line starting with the file name, like the scenario
/// reader's: `prices.csv:5: price: ...` or
/// `prices.json: SpotPriceHistory[3].SpotPrice: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpotFileError {
    /// The text is not valid JSON or CSV.
    #[error("{file}: {message}")]
    Syntax {
        /// The file as the caller named it.
        file: String,
        /// The parser's explanation, with its line when known.
        message: String,
    },
    /// The CSV header lacks a required column.
    #[error("{file}:1: missing column {column:?} (the header must name {})", required.join(", "))]
    MissingColumn {
        /// The file.
        file: String,
        /// The missing column.
        column: &'static str,
        /// Every required column.
        required: &'static [&'static str],
    },
    /// The CSV header names a column the format does not have.
    #[error("{file}:1: unknown column {column:?} (valid columns: {})", valid.join(", "))]
    UnknownColumn {
        /// The file.
        file: String,
        /// The column as written.
        column: String,
        /// Every valid column.
        valid: Vec<&'static str>,
    },
    /// One field of one row is wrong.
    #[error("{}: {reason}", located(file, *row, field))]
    Field {
        /// The file.
        file: String,
        /// The row.
        row: RowRef,
        /// The column or JSON key.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A row is wrong as a whole (a conflict with another row, a time
    /// outside the run).
    #[error("{}: {reason}", located(file, *row, ""))]
    Row {
        /// The file.
        file: String,
        /// The row.
        row: RowRef,
        /// What is wrong.
        reason: String,
    },
    /// The file as a whole is unusable.
    #[error("{file}: {reason}")]
    File {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
}

/// `file:line: field` or `file: SpotPriceHistory[i].field`.
fn located(file: &str, row: RowRef, field: &str) -> String {
    match (row, field.is_empty()) {
        (RowRef::Line(line), true) => format!("{file}:{line}"),
        (RowRef::Line(line), false) => format!("{file}:{line}: {field}"),
        (RowRef::Item(_), true) => format!("{file}: {row}"),
        (RowRef::Item(_), false) => format!("{file}: {row}.{field}"),
    }
}

/// A CSV file read into rows, with the position of each wanted column.
pub(crate) struct CsvTable {
    /// For each wanted column (required, then optional), its index.
    columns: Vec<Option<usize>>,
    /// `(line, record)` of each data row.
    pub(crate) rows: Vec<(u64, csv::StringRecord)>,
}

impl CsvTable {
    /// Reads `text`: one header line naming at least `required` and perhaps
    /// some of `optional`, in any order; lines starting with `#` are
    /// comments; fields are trimmed.
    pub(crate) fn read(
        text: &str,
        file: &str,
        required: &'static [&'static str],
        optional: &'static [&'static str],
    ) -> Result<CsvTable, SpotFileError> {
        // The text is a `&str`, so csv's only other errors (UTF-8, I/O)
        // cannot happen; rows of the wrong length are read (flexible) and
        // named below in karpsim's words.
        let syntax = |err: csv::Error| SpotFileError::Syntax {
            file: file.to_string(),
            message: match err.position() {
                Some(position) => format!(
                    "line {}: unreadable CSV row",
                    line_of_record(text, position.byte())
                ),
                None => "unreadable CSV".to_string(),
            },
        };
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .flexible(true)
            .from_reader(text.as_bytes());
        let header = reader.headers().map_err(syntax)?.clone();
        let valid: Vec<&'static str> = required.iter().chain(optional).copied().collect();
        for (i, name) in header.iter().enumerate() {
            if !valid.contains(&name) {
                return Err(SpotFileError::UnknownColumn {
                    file: file.to_string(),
                    column: name.to_string(),
                    valid,
                });
            }
            if header.iter().take(i).any(|earlier| earlier == name) {
                return Err(SpotFileError::File {
                    file: file.to_string(),
                    reason: format!("column {name:?} appears twice in the header"),
                });
            }
        }
        let position = |name: &str| header.iter().position(|column| column == name);
        for &column in required {
            if position(column).is_none() {
                return Err(SpotFileError::MissingColumn {
                    file: file.to_string(),
                    column,
                    required,
                });
            }
        }
        let columns = valid.iter().map(|name| position(name)).collect();
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(syntax)?;
            let line = record
                .position()
                .map_or(0, |position| line_of_record(text, position.byte()));
            if record.len() != header.len() {
                return Err(SpotFileError::Row {
                    file: file.to_string(),
                    row: RowRef::Line(line),
                    reason: format!(
                        "{} {}, but the header has {} columns ({})",
                        record.len(),
                        if record.len() == 1 { "field" } else { "fields" },
                        header.len(),
                        header.iter().collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            rows.push((line, record));
        }
        Ok(CsvTable { columns, rows })
    }

    /// The field of wanted column `wanted` (its index among required then
    /// optional columns) in `record`; `None` for an absent optional column
    /// or an empty field.
    pub(crate) fn field<'r>(
        &self,
        record: &'r csv::StringRecord,
        wanted: usize,
    ) -> Option<&'r str> {
        let index = self.columns.get(wanted).copied().flatten()?;
        record.get(index).filter(|value| !value.is_empty())
    }
}

/// The 1-based line where the record read from byte `start` begins. The
/// csv crate's own line count skips blank lines, and a record's byte
/// position is where the reader resumed, before any blank or comment lines.
fn line_of_record(text: &str, start: u64) -> u64 {
    let bytes = text.as_bytes();
    let mut at = usize::try_from(start)
        .unwrap_or(bytes.len())
        .min(bytes.len());
    loop {
        match bytes.get(at) {
            Some(b'\n' | b'\r') => at += 1,
            Some(b'#') => {
                at = bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |end| at + end + 1);
            }
            _ => break,
        }
    }
    bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_row_and_field() {
        let field = SpotFileError::Field {
            file: "p.csv".into(),
            row: RowRef::Line(5),
            field: "price".into(),
            reason: "bad".into(),
        };
        assert_eq!(field.to_string(), "p.csv:5: price: bad");
        let item = SpotFileError::Field {
            file: "p.json".into(),
            row: RowRef::Item(3),
            field: "SpotPrice".into(),
            reason: "bad".into(),
        };
        assert_eq!(
            item.to_string(),
            "p.json: SpotPriceHistory[3].SpotPrice: bad"
        );
        let row = SpotFileError::Row {
            file: "t.csv".into(),
            row: RowRef::Line(2),
            reason: "why".into(),
        };
        assert_eq!(row.to_string(), "t.csv:2: why");
    }

    #[test]
    fn csv_columns_in_any_order_with_comments() {
        let text = "# a note\nzone,time\nus-east-1a, 5m\n\n# another\n\nus-east-1b,0\n";
        let table = CsvTable::read(text, "t.csv", &["time", "zone"], &["node"]).unwrap();
        let rows: Vec<(u64, [Option<&str>; 3])> = table
            .rows
            .iter()
            .map(|(line, r)| (*line, [0, 1, 2].map(|i| table.field(r, i))))
            .collect();
        assert_eq!(
            rows,
            vec![
                (3, [Some("5m"), Some("us-east-1a"), None]),
                (7, [Some("0"), Some("us-east-1b"), None])
            ]
        );
    }

    #[test]
    fn csv_header_problems_are_errors() {
        let missing = CsvTable::read("time\n0\n", "t.csv", &["time", "zone"], &[])
            .err()
            .unwrap();
        assert_eq!(
            missing.to_string(),
            "t.csv:1: missing column \"zone\" (the header must name time, zone)"
        );
        let unknown = CsvTable::read("time,zone,when\n", "t.csv", &["time", "zone"], &[])
            .err()
            .unwrap();
        assert!(unknown.to_string().contains("unknown column \"when\""));
        let ragged = CsvTable::read("time,zone\n0,a\n\n1m\n", "t.csv", &["time", "zone"], &[])
            .err()
            .unwrap();
        assert_eq!(
            ragged.to_string(),
            "t.csv:4: 1 field, but the header has 2 columns (time, zone)"
        );
        let long = CsvTable::read("time,zone\n0,a,b\n", "t.csv", &["time", "zone"], &[])
            .err()
            .unwrap();
        assert_eq!(
            long.to_string(),
            "t.csv:2: 3 fields, but the header has 2 columns (time, zone)"
        );
    }
}
