//! Writing and reading the CSV files through their [`Row`] types: the
//! header is the row type's columns, each row one serialized struct; a
//! file is read back by header name (columns in any order, extra ones
//! ignored), and a bad value is reported with its file, line and column.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::rows::Row;

/// Why a CSV file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The file is not well formed (e.g. a row with too few fields).
    #[error("{}: line {line}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Its line (1-based; 0 when unknown).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The header lacks a column.
    #[error("{}: missing column {column:?}", path.display())]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
    },
    /// A value cannot be used.
    #[error("{}: line {line}, column {column:?}: {message}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// Its line (1-based, the header being line 1).
        line: u64,
        /// The column's name.
        column: String,
        /// What is wrong.
        message: String,
    },
}

/// A CSV file being written: the header first, then one row at a time.
pub struct RowWriter<W: Write> {
    csv: csv::Writer<W>,
}

impl<W: Write> RowWriter<W> {
    /// Starts a file of `R` rows: writes its header.
    pub fn new<R: Row>(out: W) -> io::Result<RowWriter<W>> {
        let mut csv = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(out);
        csv.write_record(R::columns()).map_err(io::Error::other)?;
        Ok(RowWriter { csv })
    }

    /// Writes one row (of the type the file was started with).
    pub fn write(&mut self, row: &impl Serialize) -> io::Result<()> {
        self.csv.serialize(row).map_err(io::Error::other)
    }

    /// Flushes the rows and returns the writer.
    pub fn finish(self) -> io::Result<W> {
        self.csv
            .into_inner()
            .map_err(|e| io::Error::other(e.to_string()))
    }
}

/// Writes a whole file: the header of `R`, then `rows`.
pub fn write_rows<R: Row + Serialize>(
    out: impl Write,
    rows: impl IntoIterator<Item = R>,
) -> io::Result<()> {
    let mut file = RowWriter::new::<R>(out)?;
    for row in rows {
        file.write(&row)?;
    }
    file.finish()?.flush()
}

/// A CSV file being read one row at a time.
pub struct RowReader {
    path: PathBuf,
    reader: csv::Reader<BufReader<File>>,
    headers: csv::StringRecord,
    record: csv::StringRecord,
}

impl RowReader {
    /// Opens a file of `R` rows and checks its header has every column
    /// `R` needs.
    pub fn open<R: Row>(path: &Path) -> Result<RowReader, CsvError> {
        let file = File::open(path).map_err(|source| CsvError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = csv::Reader::from_reader(BufReader::new(file));
        let headers = match reader.headers() {
            Ok(headers) => headers.clone(),
            Err(error) => return Err(csv_error(path, error)),
        };
        let missing = R::columns()
            .iter()
            .find(|c| !R::OPTIONAL_COLUMNS.contains(c) && !headers.iter().any(|h| h == **c));
        if let Some(column) = missing {
            return Err(CsvError::MissingColumn {
                path: path.to_path_buf(),
                column: column.to_string(),
            });
        }
        Ok(RowReader {
            path: path.to_path_buf(),
            reader,
            headers,
            record: csv::StringRecord::new(),
        })
    }

    /// Whether the header has `column`.
    pub fn has_column(&self, column: &str) -> bool {
        self.headers.iter().any(|h| h == column)
    }

    /// The next row with its line number, or `None` at the end. A row of
    /// `&str` fields borrows them from the reader.
    pub fn next<'r, R: Deserialize<'r>>(&'r mut self) -> Result<Option<(u64, R)>, CsvError> {
        match self.reader.read_record(&mut self.record) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(error) => return Err(csv_error(&self.path, error)),
        }
        let line = self.record.position().map_or(0, |p| p.line());
        let row = R::deserialize(RecordDeserializer {
            headers: &self.headers,
            record: &self.record,
        })
        .map_err(|error| match error.column {
            Some(column) => CsvError::Field {
                path: self.path.clone(),
                line,
                column: self.headers.get(column).unwrap_or_default().to_string(),
                message: error.message,
            },
            None => CsvError::Malformed {
                path: self.path.clone(),
                line,
                message: error.message,
            },
        })?;
        Ok(Some((line, row)))
    }

    /// The error for a value of `column` at `line` that reads but cannot
    /// be used.
    pub fn invalid(&self, line: u64, column: &str, message: &str) -> CsvError {
        CsvError::Field {
            path: self.path.clone(),
            line,
            column: column.to_string(),
            message: message.to_string(),
        }
    }
}

/// Reads every row of a file of `R` rows.
pub fn read_rows<R: Row + DeserializeOwned>(path: &Path) -> Result<Vec<R>, CsvError> {
    let mut reader = RowReader::open::<R>(path)?;
    let mut rows = Vec::new();
    while let Some((_, row)) = reader.next()? {
        rows.push(row);
    }
    Ok(rows)
}

fn csv_error(path: &Path, error: csv::Error) -> CsvError {
    let line = error.position().map_or(0, |p| p.line());
    let message = error.to_string();
    match error.into_kind() {
        csv::ErrorKind::Io(source) => CsvError::Io {
            path: path.to_path_buf(),
            source,
        },
        _ => CsvError::Malformed {
            path: path.to_path_buf(),
            line,
            message,
        },
    }
}

/// Why a row did not deserialize, and in which column when known.
#[derive(Debug)]
struct ValueError {
    column: Option<usize>,
    message: String,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ValueError {}

impl de::Error for ValueError {
    fn custom<T: fmt::Display>(message: T) -> ValueError {
        ValueError {
            column: None,
            message: message.to_string(),
        }
    }
}

/// One record as a map from header names to its fields.
struct RecordDeserializer<'r> {
    headers: &'r csv::StringRecord,
    record: &'r csv::StringRecord,
}

impl<'r> de::Deserializer<'r> for RecordDeserializer<'r> {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'r>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_map(RecordAccess {
            headers: self.headers,
            record: self.record,
            column: 0,
        })
    }

    serde::forward_to_deserialize_any! {
        <W: Visitor<'r>>
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct RecordAccess<'r> {
    headers: &'r csv::StringRecord,
    record: &'r csv::StringRecord,
    column: usize,
}

impl<'r> MapAccess<'r> for RecordAccess<'r> {
    type Error = ValueError;

    fn next_key_seed<K: DeserializeSeed<'r>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ValueError> {
        match self.headers.get(self.column) {
            None => Ok(None),
            Some(name) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(name))
                .map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'r>>(&mut self, seed: V) -> Result<V::Value, ValueError> {
        let column = self.column;
        self.column += 1;
        let text = self.record.get(column).unwrap_or_default();
        seed.deserialize(FieldDeserializer(text))
            .map_err(|mut error| {
                error.column.get_or_insert(column);
                error
            })
    }
}

/// One field's text: strings as they are, numbers parsed, an empty field
/// as `None` for an optional value.
struct FieldDeserializer<'r>(&'r str);

impl FieldDeserializer<'_> {
    fn count<T: std::str::FromStr>(&self) -> Result<T, ValueError> {
        self.0
            .parse()
            .map_err(|_| de::Error::custom(format!("not a count: {:?}", self.0)))
    }
}

impl<'r> de::Deserializer<'r> for FieldDeserializer<'r> {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'r>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_u32<V: Visitor<'r>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_u32(self.count()?)
    }

    fn deserialize_u64<V: Visitor<'r>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_u64(self.count()?)
    }

    fn deserialize_i64<V: Visitor<'r>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_i64(self.count()?)
    }

    fn deserialize_option<V: Visitor<'r>>(self, visitor: V) -> Result<V::Value, ValueError> {
        if self.0.is_empty() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_ignored_any<V: Visitor<'r>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        <W: Visitor<'r>>
        bool i8 i16 i32 i128 u8 u16 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier
    }
}

#[cfg(test)]
mod tests {
    use super::super::rows::{EventRow, TimeseriesRow};
    use super::*;

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.csv");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn rows_read_by_header_name_in_any_order() {
        let (_dir, path) =
            file("message,extra,time_s,object,type,reason\n\"a, b\",x,1.5,pod/p,Normal,Evicted\n");
        let mut reader = RowReader::open::<EventRow>(&path).unwrap();
        let (line, row) = reader.next::<EventRow<&str>>().unwrap().unwrap();
        assert_eq!(line, 2);
        assert_eq!(
            (row.time_ms, row.message, row.kind),
            (1500, "a, b", "Normal")
        );
        assert!(reader.next::<EventRow<&str>>().unwrap().is_none());
    }

    #[test]
    fn a_bad_value_names_line_and_column() {
        let (_dir, path) = file("time_s,type,reason,object,message\n1.000,N,R,o,m\n2.0x,N,R,o,m\n");
        let error = read_rows::<EventRow>(&path).unwrap_err();
        assert!(
            matches!(&error, CsvError::Field { line: 3, column, .. } if column == "time_s"),
            "{error}"
        );
        assert!(error.to_string().contains("\"2.0x\""), "{error}");
    }

    #[test]
    fn only_optional_columns_may_be_missing() {
        let header = TimeseriesRow::columns().join(",");
        let without_bound = header.trim_end_matches(",lower_bound_usd_per_hour");
        let (_dir, path) = file(&format!(
            "{without_bound}\n0.000,1,1,0.1,1,2,1.000,2.000,0\n"
        ));
        let rows = read_rows::<TimeseriesRow>(&path).unwrap();
        assert_eq!(rows[0].lower_bound_usd_per_hour, None);
        let (_dir, path) = file(&header.replace("pending_pods", "waiting"));
        let error = read_rows::<TimeseriesRow>(&path).unwrap_err();
        assert!(
            matches!(&error, CsvError::MissingColumn { column, .. } if column == "pending_pods"),
            "{error}"
        );
    }
}
