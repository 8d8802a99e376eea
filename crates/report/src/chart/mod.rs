//! Cost and capacity charts of a `karpsim run` report, as SVG and PNG.
//!
//! Per variant folder: `nodes-by-type`, `nodes-by-capacity`, `efficiency`,
//! `pending` and `disruptions`; per report folder: `cost` (cumulative cost
//! and cost rate of every variant, two panels sharing the time axis). Each
//! chart is written as `NAME.svg` and `NAME.png`, each file atomically (a
//! temporary file in the same folder, then a rename). `karpsim run` draws
//! them from the run just made, `karpsim chart` from the folder's files
//! (see [`data`]).
//!
//! Text is drawn with DejaVu Sans embedded in the binary, so PNGs render the
//! same on machines without fonts; SVGs name the generic `sans-serif`
//! family and leave the font to the viewer. Same input, same bytes.

pub mod data;
pub mod figures;
pub mod style;
pub mod sweep;

#[cfg(test)]
mod tests;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

pub use data::VariantSeries;
use figures::{
    CostComparison, Disruptions, Efficiency, Figure, NodesByCapacity, NodesByType, Pending, Target,
};

use crate::schema::CsvError;

/// Why charts could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A CSV file is not well formed (e.g. a row with too few fields).
    #[error("{}: line {line}: {message}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// Its line (1-based; 0 when unknown).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A CSV file lacks a column the charts need.
    #[error("{}: missing column {column:?}", path.display())]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
    },
    /// A value in a CSV file cannot be used.
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
    /// `summary.json` is not what `karpsim run` writes.
    #[error("{}: {message}", path.display())]
    Summary {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A variant folder has neither `nodeclaims.csv` nor `nodes.csv`.
    #[error("{}: neither nodeclaims.csv nor nodes.csv", dir.display())]
    MissingNodes {
        /// The variant folder.
        dir: PathBuf,
    },
    /// A report folder holds no variant folder (one with `summary.json`).
    #[error("{}: no variant folders (folders with a summary.json) in this report", dir.display())]
    NoVariants {
        /// The report folder.
        dir: PathBuf,
    },
    /// Drawing or encoding a chart failed.
    #[error("cannot draw {chart}: {message}")]
    Draw {
        /// The chart's file name.
        chart: String,
        /// What went wrong.
        message: String,
    },
}

impl From<CsvError> for ChartError {
    fn from(error: CsvError) -> ChartError {
        match error {
            CsvError::Io { path, source } => ChartError::Io { path, source },
            CsvError::Malformed {
                path,
                line,
                message,
            } => ChartError::Csv {
                path,
                line,
                message,
            },
            CsvError::MissingColumn { path, column } => ChartError::MissingColumn { path, column },
            CsvError::Field {
                path,
                line,
                column,
                message,
            } => ChartError::Field {
                path,
                line,
                column,
                message,
            },
        }
    }
}

/// The SVG text and PNG bytes of `figure`.
pub fn render<F: Figure>(figure: &F) -> Result<(String, Vec<u8>), ChartError> {
    let name = figure.name();
    let failed = |message: String| ChartError::Draw {
        chart: name.to_string(),
        message,
    };
    style::ensure_fonts().map_err(failed)?;
    let (width, height) = figure.size();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        figure
            .draw(&root, Target::Svg)
            .map_err(|e| failed(e.to_string()))?;
    }
    let pixels = usize::try_from(u64::from(width) * u64::from(height) * 3)
        .map_err(|e| failed(e.to_string()))?;
    let mut rgb = vec![0u8; pixels];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        figure
            .draw(&root, Target::Bitmap)
            .map_err(|e| failed(e.to_string()))?;
    }
    let png = encode_png(&rgb, width, height).map_err(|e| failed(e.to_string()))?;
    Ok((svg, png))
}

/// Encodes 8-bit RGB pixels as a PNG.
fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}

/// Writes `bytes` to `dir/name` through a temporary file in `dir` and a
/// rename, so readers never see a half-written chart.
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ChartError> {
    use std::io::Write;
    super::atomic::write_file(dir, name, |out| out.write_all(bytes))
        .map(|_| ())
        .map_err(|error| match error {
            super::atomic::ReportDirError::Io { path, source } => ChartError::Io { path, source },
            other => ChartError::Io {
                path: dir.join(name),
                source: io::Error::other(other.to_string()),
            },
        })
}

/// Renders `figure` and writes `NAME.svg` and `NAME.png` into `dir`;
/// returns the two file names.
fn write_figure<F: Figure>(figure: &F, dir: &Path) -> Result<[String; 2], ChartError> {
    let (svg, png) = render(figure)?;
    let svg_name = format!("{}.svg", figure.name());
    let png_name = format!("{}.png", figure.name());
    write_atomically(dir, &svg_name, svg.as_bytes())?;
    write_atomically(dir, &png_name, &png)?;
    Ok([svg_name, png_name])
}

/// Writes the charts of one variant into `dir` (which must exist): nodes
/// by instance type and by capacity type, allocation efficiency, pending
/// pods and evictions. Returns the file names written.
pub fn write_variant_charts(series: &VariantSeries, dir: &Path) -> Result<Vec<String>, ChartError> {
    let mut names = Vec::new();
    names.extend(write_figure(&NodesByType(series), dir)?);
    names.extend(write_figure(&NodesByCapacity(series), dir)?);
    names.extend(write_figure(&Efficiency(series), dir)?);
    names.extend(write_figure(&Pending(series), dir)?);
    names.extend(write_figure(&Disruptions(series), dir)?);
    Ok(names)
}

/// Writes the cost comparison of `series` (in this order, which sets the
/// colours) into `dir`. Returns the file names written.
pub fn write_comparison_charts(
    series: &[VariantSeries],
    dir: &Path,
) -> Result<Vec<String>, ChartError> {
    Ok(write_figure(&CostComparison(series), dir)?.to_vec())
}

/// The variant folders of a report: its sub-folders holding a
/// `summary.json`, by name (hidden folders, such as the temporary ones of a
/// report being written, are skipped).
pub fn variant_dirs(report_dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let io_error = |source| ChartError::Io {
        path: report_dir.to_path_buf(),
        source,
    };
    let mut dirs = Vec::new();
    for entry in fs::read_dir(report_dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && path.is_dir() && path.join("summary.json").is_file() {
            dirs.push(path);
        }
    }
    dirs.sort();
    if dirs.is_empty() {
        return Err(ChartError::NoVariants {
            dir: report_dir.to_path_buf(),
        });
    }
    Ok(dirs)
}

/// Redraws every chart of the report in `report_dir`: each variant's, then
/// the comparison. All variants are read before anything is written, so a
/// malformed file leaves the charts as they were. Returns the paths written.
pub fn redraw(report_dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    let dirs = variant_dirs(report_dir)?;
    let series = dirs
        .iter()
        .map(|dir| VariantSeries::read_dir(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let mut written = Vec::new();
    for (dir, variant) in dirs.iter().zip(&series) {
        for name in write_variant_charts(variant, dir)? {
            written.push(dir.join(name));
        }
    }
    for name in write_comparison_charts(&series, report_dir)? {
        written.push(report_dir.join(name));
    }
    Ok(written)
}
