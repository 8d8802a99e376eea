//! A sweep folder's `report.html`, in the run report's conventions (one
//! self-contained page, inline CSS and SVG, no scripts, no links leaving
//! the file): the sweep, the table of configurations with their means and
//! 95 % intervals, the charts, and the failed runs.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::{Cell, HtmlError, REPORT_HTML, STYLE, escape, long, num, push_cell, text};
use crate::chart::sweep::DrawnChart;
use crate::read::sim_time;
use crate::schema::sweep::{Statistics, SweepDocument};
use crate::sweep::Metric;

/// Writes `dir/report.html` for `document` with its `charts` (through a
/// temporary file and a rename). `kept_reports` are the runs whose full
/// reports are in `dir/runs/`.
pub fn write_sweep_html(
    dir: &Path,
    document: &SweepDocument,
    charts: &[DrawnChart],
    kept_reports: &[String],
) -> Result<PathBuf, HtmlError> {
    let html = render_sweep(document, charts, kept_reports);
    crate::atomic::write_file(dir, REPORT_HTML, |out| out.write_all(html.as_bytes())).map_err(
        |error| match error {
            crate::atomic::ReportDirError::Io { path, source } => HtmlError::Io { path, source },
            other => HtmlError::Io {
                path: dir.join(REPORT_HTML),
                source: io::Error::other(other.to_string()),
            },
        },
    )
}

/// A number with at most `decimals` decimals, trailing zeros dropped.
fn short(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        let trimmed = text.trim_end_matches('0').trim_end_matches('.');
        if trimmed == "-0" {
            "0".to_string()
        } else {
            trimmed.to_string()
        }
    } else {
        text
    }
}

/// How a metric's numbers are shown.
fn shown(metric: Metric, value: f64) -> String {
    match metric {
        Metric::Cost => format!("${}", short(value, 4)),
        Metric::Evictions => short(value, 1),
        Metric::PendingP95 => format!("{}s", short(value, 1)),
        Metric::NodeHours => short(value, 2),
        Metric::CostEfficiency => format!("{}%", short(value * 100.0, 1)),
    }
}

/// `mean` and `[low, high]` cells of one metric.
fn metric_cells(metric: Metric, statistics: Option<&Statistics>) -> [Cell; 2] {
    match statistics {
        None => [num("-"), num("-")],
        Some(s) => {
            let interval = match (s.ci95_low, s.ci95_high) {
                (Some(low), Some(high)) => {
                    format!("{} – {}", shown(metric, low), shown(metric, high))
                }
                _ => "-".to_string(),
            };
            [num(shown(metric, s.mean)), num(interval)]
        }
    }
}

/// The page.
pub fn render_sweep(
    document: &SweepDocument,
    charts: &[DrawnChart],
    kept_reports: &[String],
) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<title>karpsim sweep: {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n",
        escape(&document.sweep)
    ));
    out.push_str(&format!(
        "<header>\n<h1>{}</h1>\n",
        escape(&format!("karpsim sweep: {}", document.sweep))
    ));
    let duration_ms = (document.duration_s * 1000.0).round().max(0.0) as u64;
    out.push_str(&format!(
        "<p class=\"meta\">{}</p>\n",
        escape(&format!(
            "scenario {}, {} simulated per run; {} configuration(s) × {} seed(s) = {} runs; {} failed",
            document.scenario,
            sim_time(duration_ms),
            document.configurations.len(),
            document.seeds.len(),
            document.runs,
            document.runs_failed
        ))
    ));
    if let Some(shard) = document.shard {
        out.push_str(&format!(
            "<p class=\"meta\">{}</p>\n",
            escape(&format!(
                "Shard {} of {}: the statistics are over this shard's runs only.",
                shard.index, shard.count
            ))
        ));
    }
    let pricing = document
        .pricing
        .as_ref()
        .and_then(|p| p.as_object())
        .map(|p| {
            let field = |key: &str| p.get(key).and_then(serde_json::Value::as_str);
            let details: Vec<&str> = [field("region"), field("date")]
                .into_iter()
                .flatten()
                .collect();
            format!(
                "{} ({})",
                field("file").unwrap_or("bundled"),
                details.join(", ")
            )
        });
    if let Some(pricing) = pricing {
        out.push_str(&format!(
            "<p class=\"meta\">Prices: {}</p>\n",
            escape(&pricing)
        ));
    }
    out.push_str(
        "<nav><a href=\"#configurations\">Configurations</a><a href=\"#charts\">Charts</a><a href=\"#failed\">Failed runs</a></nav>\n</header>\n",
    );

    out.push_str("<section id=\"configurations\">\n<h2>Configurations</h2>\n");
    out.push_str(&format!(
        "<p>{}</p>\n",
        escape(&format!(
            "Means over each configuration's seeds, each with the 95 % interval of the mean: {}. ★ marks the Pareto frontier of mean cost and mean evictions.",
            document.statistics.ci95
        ))
    ));
    let mut header = vec![
        text("id"),
        text("configuration"),
        num("runs"),
        num("failed"),
    ];
    for metric in Metric::ALL {
        header.push(num(metric.title()));
        header.push(num("95 % interval"));
    }
    header.push(text("Pareto"));
    let rows: Vec<Vec<Cell>> = document
        .configurations
        .iter()
        .map(|c| {
            let mut row = vec![
                text(&c.id),
                text(&c.label),
                num(c.runs.to_string()),
                num(c.failed.to_string()),
            ];
            for metric in Metric::ALL {
                row.extend(metric_cells(metric, metric.of(&c.metrics)));
            }
            row.push(text(if c.pareto { "★" } else { "" }));
            row
        })
        .collect();
    full_table(&mut out, &header, &rows);
    if !kept_reports.is_empty() {
        out.push_str(&format!(
            "<p class=\"meta\">{}</p>\n",
            escape(&format!(
                "The full report of each of the {} run(s) is in runs/<run id>/ beside this page.",
                kept_reports.len()
            ))
        ));
    }
    out.push_str("</section>\n");

    out.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n<div class=\"charts\">\n");
    for chart in charts {
        out.push_str("<figure>\n");
        out.push_str(super::inline_svg(&chart.svg).as_deref().unwrap_or_default());
        out.push_str(&format!(
            "\n<figcaption>{}</figcaption>\n</figure>\n",
            escape(&chart.caption)
        ));
    }
    out.push_str("</div>\n</section>\n");

    out.push_str("<section id=\"failed\">\n<h2>Failed runs</h2>\n");
    let failed: Vec<Vec<Cell>> = document
        .failed_runs
        .iter()
        .map(|f| vec![text(&f.id), long(&f.error)])
        .collect();
    if failed.is_empty() {
        out.push_str("<p class=\"none\">None.</p>\n");
    } else {
        full_table(&mut out, &[text("run"), text("error")], &failed);
    }
    out.push_str("</section>\n</main>\n</body>\n</html>\n");
    out
}

/// A table of every row (a sweep's configurations are its subject, none
/// is left out).
fn full_table(out: &mut String, header: &[Cell], rows: &[Vec<Cell>]) {
    out.push_str("<table>\n<thead><tr>");
    for cell in header {
        push_cell(out, "th", cell);
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            push_cell(out, "td", cell);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}
