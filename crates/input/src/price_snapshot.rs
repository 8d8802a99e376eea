//! Pinned pricing snapshot files (`karpsim pricing` writes them, a scenario
//! may pin one): read from disk here, parsed by `karpsim_catalog::snapshot`.

use std::path::Path;

use crate::snapshot::{PriceSnapshot, SnapshotFileError};

/// Reads and parses the snapshot file at `path`; errors name the file.
pub fn read_price_snapshot(path: &Path) -> Result<PriceSnapshot, SnapshotFileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| SnapshotFileError {
        file: file.clone(),
        reason: format!("cannot read it: {err}"),
    })?;
    PriceSnapshot::parse(&text, &file)
}
