//! The files of a variant folder, each defined once for the writer that
//! makes it and the readers that read it back: `summary.json` is a
//! [`Summary`]; each CSV file has one row struct ([`rows`]) whose fields
//! are its columns, written and read through [`csv_file`]. Numbers are
//! exact decimals ([`values`]), so the same run always gives the same
//! bytes and a file read back holds the numbers it was written from.

pub mod csv_file;
pub mod rows;
pub mod summary;
pub mod sweep;
pub mod values;

pub use csv_file::{CsvError, RowReader, RowWriter, read_rows, write_rows};
pub use rows::{
    DISRUPTION_FILE, DisruptionRow, EVENTS_FILE, EventRow, LOWER_BOUND_COLUMN, NODECLAIMS_FILE,
    NODES_FILE, NodeClaimRow, Row, SCALEDOWN_FILE, ScaleDownRow, TIMESERIES_FILE, TimeseriesRow,
};
pub use summary::{
    ChurnSummary, SUMMARY_FILE, SpotSummary, Summary, SummaryError, UnschedulableReason,
};
pub use values::{Decimal, Thousandths, Usd};
