//! `report.html`: one self-contained page for a report folder — inline CSS,
//! the charts' SVG inlined, no scripts and no links leaving the file. It
//! shows the scenario and its variants, the comparison table, the charts
//! (the comparison's first, then each variant's), and per variant its
//! largest decisions and why pods stayed pending and nodes stayed up.
//!
//! Everything is read from the folder (see [`crate::read`]) and
//! written in a fixed order, so the same folder gives the same bytes. The
//! one exception is `events.csv`, which the page only tallies: a run that
//! has just written it hands over the tally it kept while writing, unless
//! that grew too large ([`EventDigest`]); it is the one a read of the file
//! makes.

mod sections;
pub mod sweep;
#[cfg(test)]
mod tests;

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::compare::comparison_rows;
use super::read::{
    Autoscaler, ReadError, VariantReport, read_variant_filtered, read_variant_with_events,
    sim_time, variant_dirs,
};
use super::schema::EventRow;

/// The file name of the page inside the report folder.
pub const REPORT_HTML: &str = "report.html";

/// Longest table shown; the rest is counted in a last row.
pub const MAX_ROWS: usize = 20;

/// Why the page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// The report folder could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A chart could not be read, or the page not written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// The page for `report_dir`, variants by name.
pub fn render_report(report_dir: &Path) -> Result<String, HtmlError> {
    render_report_ordered(report_dir, &[])
}

/// The page for `report_dir`, the variants named in `order` first (in that
/// order; the first is the comparison's base), the others after by name.
pub fn render_report_ordered(report_dir: &Path, order: &[String]) -> Result<String, HtmlError> {
    render_report_digested(report_dir, order, Vec::new())
}

/// What the page takes of one variant's `events.csv`, row by row: the
/// pending reasons counted, and the rows it shows one by one. Kept while
/// the file is written or made by reading it; either way the same.
#[derive(Debug, Default)]
pub struct EventDigest {
    pending: sections::PendingEvents,
    shown: Vec<EventRow>,
    shown_bytes: usize,
}

impl EventDigest {
    /// Takes in the next row of the file.
    pub fn add(&mut self, row: EventRow<&str>) {
        if !self.pending.count(&row) && sections::shown_row_by_row(row.reason) {
            self.shown_bytes += sections::ENTRY_BYTES
                + [row.kind, row.reason, row.object, row.message]
                    .iter()
                    .map(|s| s.len())
                    .sum::<usize>();
            self.shown.push(row.to_owned());
        }
    }

    /// About how many bytes it holds: it grows with the pods that were
    /// pending, the distinct messages and the rows shown one by one.
    pub fn held_bytes(&self) -> usize {
        self.pending.held_bytes() + self.shown_bytes
    }
}

/// [`render_report_ordered`], with the digests of the variants (by name)
/// whose `events.csv` need not be read again.
pub fn render_report_digested(
    report_dir: &Path,
    order: &[String],
    mut digests: Vec<(String, EventDigest)>,
) -> Result<String, HtmlError> {
    let mut variants = Vec::new();
    for (name, dir) in variant_dirs(report_dir)? {
        let variant = match digests.iter().position(|(n, _)| *n == name) {
            Some(at) => {
                let (_, digest) = digests.swap_remove(at);
                let variant = read_variant_with_events(&name, &dir, digest.shown)?;
                (variant, digest.pending)
            }
            None => {
                let mut digest = EventDigest::default();
                let mut variant = read_variant_filtered(&name, &dir, |event| {
                    digest.add(event.borrowed());
                    None
                })?;
                variant.events = digest.shown;
                (variant, digest.pending)
            }
        };
        variants.push(variant);
    }
    variants.sort_by_key(|(v, _)| {
        (
            order
                .iter()
                .position(|o| *o == v.name)
                .unwrap_or(usize::MAX),
            v.name.clone(),
        )
    });
    let comparison_charts = charts(report_dir, &COMPARISON_CHARTS)?;
    let mut variant_charts = Vec::new();
    for (variant, _) in &variants {
        variant_charts.push(charts(&variant.dir, &VARIANT_CHARTS)?);
    }
    let (variants, pending): (Vec<_>, Vec<_>) = variants.into_iter().unzip();
    Ok(page(
        &variants,
        &pending,
        &comparison_charts,
        &variant_charts,
    ))
}

/// Writes `report_dir/report.html` (through a temporary file and a rename,
/// so a reader never sees half a page) and returns its path.
pub fn write_report_html(report_dir: &Path) -> Result<PathBuf, HtmlError> {
    write_report_html_ordered(report_dir, &[])
}

/// [`write_report_html`] with the variant order of
/// [`render_report_ordered`].
pub fn write_report_html_ordered(
    report_dir: &Path,
    order: &[String],
) -> Result<PathBuf, HtmlError> {
    write_report_html_digested(report_dir, order, Vec::new())
}

/// [`write_report_html_ordered`] with [`render_report_digested`]'s
/// digests.
pub fn write_report_html_digested(
    report_dir: &Path,
    order: &[String],
    digests: Vec<(String, EventDigest)>,
) -> Result<PathBuf, HtmlError> {
    let html = render_report_digested(report_dir, order, digests)?;
    super::atomic::write_file(report_dir, REPORT_HTML, |out| {
        out.write_all(html.as_bytes())
    })
    .map_err(|error| match error {
        super::atomic::ReportDirError::Io { path, source } => HtmlError::Io { path, source },
        other => HtmlError::Io {
            path: report_dir.join(REPORT_HTML),
            source: io::Error::other(other.to_string()),
        },
    })
}

/// Known charts of the report folder, in display order, with captions.
const COMPARISON_CHARTS: [(&str, &str); 1] = [("cost", "Cost of each variant over time")];

/// Known charts of a variant folder, in display order, with captions.
const VARIANT_CHARTS: [(&str, &str); 5] = [
    ("nodes-by-type", "Nodes by instance type"),
    ("nodes-by-capacity", "Nodes by capacity type"),
    (
        "efficiency",
        "Allocation efficiency: requested over allocatable",
    ),
    ("pending", "Pending pods"),
    ("disruptions", "Disruptions"),
];

/// One chart to inline.
#[derive(Debug, Clone, PartialEq)]
struct Chart {
    caption: String,
    svg: String,
}

/// The `*.svg` files of `dir`: the known ones in their order, then any
/// others by name (captioned by file name).
fn charts(dir: &Path, known: &[(&str, &str)]) -> Result<Vec<Chart>, HtmlError> {
    let io_error = |source| HtmlError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut stems = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let path = entry.map_err(io_error)?.path();
        if path.extension().is_some_and(|e| e == "svg")
            && path.is_file()
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            stems.push(stem.to_string());
        }
    }
    stems.sort_by_key(|stem| {
        (
            known
                .iter()
                .position(|(k, _)| k == stem)
                .unwrap_or(usize::MAX),
            stem.clone(),
        )
    });
    let mut charts = Vec::new();
    for stem in stems {
        let path = dir.join(format!("{stem}.svg"));
        let text = fs::read_to_string(&path).map_err(|source| HtmlError::Io {
            path: path.clone(),
            source,
        })?;
        let Some(svg) = inline_svg(&text) else {
            continue;
        };
        let caption = known
            .iter()
            .find(|(k, _)| *k == stem)
            .map_or_else(|| stem.replace(['-', '_'], " "), |(_, c)| c.to_string());
        charts.push(Chart { caption, svg });
    }
    Ok(charts)
}

/// The `<svg>` element of an SVG file, without the XML prolog, doctype or
/// comments before it; `None` when there is no `<svg` element.
fn inline_svg(text: &str) -> Option<String> {
    let start = text.find("<svg")?;
    Some(text[start..].trim_end().to_string())
}

/// Escapes text for HTML element content and quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// An id for an anchor: letters, digits and `-` only.
fn anchor(prefix: &str, name: &str) -> String {
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}-{slug}")
}

/// How a cell is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellKind {
    /// A short word or name: kept on one line.
    Text,
    /// A number: right-aligned, on one line.
    Number,
    /// A sentence: may wrap.
    Long,
}

/// One table cell.
#[derive(Debug, Clone)]
struct Cell {
    text: String,
    kind: CellKind,
}

fn text(value: impl Into<String>) -> Cell {
    Cell {
        text: value.into(),
        kind: CellKind::Text,
    }
}

fn num(value: impl Into<String>) -> Cell {
    Cell {
        text: value.into(),
        kind: CellKind::Number,
    }
}

fn long(value: impl Into<String>) -> Cell {
    Cell {
        text: value.into(),
        kind: CellKind::Long,
    }
}

/// An HTML table of at most [`MAX_ROWS`] rows; a last row counts the rest.
/// The header's cells say which columns are numeric.
fn table(out: &mut String, header: &[Cell], rows: &[Vec<Cell>]) {
    if rows.is_empty() {
        out.push_str("<p class=\"none\">None.</p>\n");
        return;
    }
    out.push_str("<table>\n<thead><tr>");
    for cell in header {
        push_cell(out, "th", cell);
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows.iter().take(MAX_ROWS) {
        out.push_str("<tr>");
        for cell in row {
            push_cell(out, "td", cell);
        }
        out.push_str("</tr>\n");
    }
    if rows.len() > MAX_ROWS {
        out.push_str(&format!(
            "<tr class=\"more\"><td colspan=\"{}\">{} more not shown</td></tr>\n",
            header.len(),
            rows.len() - MAX_ROWS
        ));
    }
    out.push_str("</tbody>\n</table>\n");
}

fn push_cell(out: &mut String, tag: &str, cell: &Cell) {
    let class = match cell.kind {
        CellKind::Text => "",
        CellKind::Number => " class=\"num\"",
        CellKind::Long => " class=\"long\"",
    };
    out.push_str(&format!("<{tag}{class}>{}</{tag}>", escape(&cell.text)));
}

/// At most `limit` characters of `text`, with `…` when cut.
fn clip(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(limit).collect();
        cut.push('…');
        cut
    }
}

const STYLE: &str = "\
*{box-sizing:border-box}
body{margin:0;background:#f6f7f9;color:#1d2330;font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 28px 48px}
header{border-bottom:3px solid #3060c0;margin-bottom:18px;padding-bottom:10px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:20px;margin:32px 0 10px;padding-bottom:4px;border-bottom:1px solid #d5d9e0}
h3{font-size:15px;margin:20px 0 6px;color:#2b3a55}
p{margin:4px 0 8px}
.meta{color:#4a5468}
nav a{margin-right:14px;color:#3060c0;text-decoration:none}
section.variant{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:4px 20px 16px;margin-top:22px}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff;font-size:13px;max-width:100%}
th,td{border:1px solid #dde1e8;padding:4px 8px;text-align:left;vertical-align:top;white-space:nowrap}
td.long{white-space:normal;overflow-wrap:anywhere;min-width:280px}
th{background:#eef1f6;font-weight:600}
tbody tr:nth-child(even){background:#f9fafc}
td.num,th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
tr.sub td:first-child{padding-left:22px;color:#4a5468}
tr.more td{color:#6a7385;font-style:italic}
td.delta{color:#4a5468}
p.none{color:#6a7385;font-style:italic}
.charts{display:flex;flex-direction:column;gap:14px;margin:10px 0}
figure{margin:0;max-width:1000px;background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:8px}
figure svg{display:block;width:100%;height:auto}
figcaption{font-size:13px;color:#4a5468;margin-top:4px;text-align:center}
";

fn page(
    variants: &[VariantReport],
    pending: &[sections::PendingEvents],
    comparison: &[Chart],
    per_variant: &[Vec<Chart>],
) -> String {
    let scenario = variants
        .first()
        .map(|v| v.summary.scenario.as_str())
        .unwrap_or_default();
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<title>karpsim report: {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n",
        escape(scenario)
    ));
    header(&mut out, scenario, variants);
    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    summary_table(&mut out, variants);
    out.push_str("</section>\n");
    if !comparison.is_empty() {
        out.push_str("<section id=\"comparison-charts\">\n<h2>Comparison</h2>\n");
        figures(&mut out, comparison);
        out.push_str("</section>\n");
    }
    for ((variant, charts), pending) in variants.iter().zip(per_variant).zip(pending) {
        out.push_str(&format!(
            "<section class=\"variant\" id=\"{}\">\n<h2>{} <span class=\"meta\">({})</span></h2>\n",
            anchor("variant", &variant.name),
            escape(&variant.name),
            autoscaler_name(variant.autoscaler)
        ));
        figures(&mut out, charts);
        if variant.summary.steps_missing_target > 0 {
            out.push_str(&format!(
                "<p>{}</p>\n",
                escape(&format!(
                    "Warning: {} scale or delete steps named an object that did not exist \
                     (the NotFound rows of events.csv).",
                    variant.summary.steps_missing_target
                ))
            ));
        }
        sections::decisions(&mut out, variant);
        sections::why(&mut out, variant, pending);
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn autoscaler_name(autoscaler: Autoscaler) -> &'static str {
    match autoscaler {
        Autoscaler::Karpenter => "Karpenter",
        Autoscaler::ClusterAutoscaler => "Cluster Autoscaler",
    }
}

fn header(out: &mut String, scenario: &str, variants: &[VariantReport]) {
    out.push_str(&format!(
        "<header>\n<h1>{}</h1>\n",
        escape(&format!("karpsim report: {scenario}"))
    ));
    let duration_ms = variants
        .first()
        .map(|v| (v.summary.duration_s * 1000.0).round().max(0.0) as u64)
        .unwrap_or_default();
    let list: Vec<String> = variants
        .iter()
        .map(|v| format!("{} ({})", v.name, autoscaler_name(v.autoscaler)))
        .collect();
    out.push_str(&format!(
        "<p class=\"meta\">{} simulated; {} variant(s): {}</p>\n",
        escape(&sim_time(duration_ms)),
        variants.len(),
        escape(&list.join(", "))
    ));
    let mut prices: Vec<(String, &str)> = Vec::new();
    for variant in variants {
        if let Some(text) = variant.summary.pricing_text() {
            prices.push((text, variant.name.as_str()));
        }
    }
    let distinct: std::collections::BTreeSet<&str> =
        prices.iter().map(|(text, _)| text.as_str()).collect();
    if distinct.len() == 1 && prices.len() == variants.len() {
        out.push_str(&format!(
            "<p class=\"meta\">Prices: {}</p>\n",
            escape(&prices[0].0)
        ));
    } else {
        for (text, name) in &prices {
            out.push_str(&format!(
                "<p class=\"meta\">Prices of {}: {}</p>\n",
                escape(name),
                escape(text)
            ));
        }
    }
    out.push_str("<nav><a href=\"#summary\">Summary</a>");
    for variant in variants {
        out.push_str(&format!(
            "<a href=\"#{}\">{}</a>",
            anchor("variant", &variant.name),
            escape(&variant.name)
        ));
    }
    out.push_str("</nav>\n</header>\n");
}

/// The comparison table: one column per variant, and after each variant
/// but the first its delta against the first.
fn summary_table(out: &mut String, variants: &[VariantReport]) {
    let summaries: Vec<_> = variants.iter().map(|v| v.summary.clone()).collect();
    let base = variants
        .first()
        .map(|v| v.name.as_str())
        .unwrap_or_default();
    out.push_str("<table class=\"summary\">\n<thead><tr><th></th>");
    for (index, variant) in variants.iter().enumerate() {
        out.push_str(&format!("<th class=\"num\">{}</th>", escape(&variant.name)));
        if index > 0 {
            out.push_str(&format!(
                "<th class=\"num\">{}</th>",
                escape(&format!("Δ vs {base}"))
            ));
        }
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in comparison_rows(&summaries) {
        let sub = row.label.starts_with("  ");
        out.push_str(if sub { "<tr class=\"sub\">" } else { "<tr>" });
        out.push_str(&format!("<td>{}</td>", escape(row.label.trim())));
        for (index, value) in row.values.iter().enumerate() {
            out.push_str(&format!("<td class=\"num\">{}</td>", escape(value)));
            if index > 0 {
                let delta = row.deltas[index - 1]
                    .as_ref()
                    .map_or("-", |d| d.text.as_str());
                out.push_str(&format!("<td class=\"num delta\">{}</td>", escape(delta)));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

fn figures(out: &mut String, charts: &[Chart]) {
    if charts.is_empty() {
        return;
    }
    out.push_str("<div class=\"charts\">\n");
    for chart in charts {
        out.push_str("<figure>\n");
        out.push_str(&chart.svg);
        out.push_str(&format!(
            "\n<figcaption>{}</figcaption>\n</figure>\n",
            escape(&chart.caption)
        ));
    }
    out.push_str("</div>\n");
}
