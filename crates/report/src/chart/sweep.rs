//! The charts of a sweep folder: `cost-vs-churn` (each configuration at
//! its mean evictions and mean cost, whiskers for the two 95 % intervals,
//! the Pareto frontier of the means drawn through its configurations) and
//! one box plot per metric (`box-cost`, `box-evictions`, …: per
//! configuration the quartile box, the median line, whiskers from min to
//! max, and the mean as a cross). Drawn from `sweep.json`'s statistics, so
//! a merged sweep draws the same bytes as an unsharded one.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::figures::{Drawn, Figure, Split, Target, builder, draw_line};
use super::style::{self, DESC_SIZE, FAMILY, GRID, INK, LABEL_SIZE, Swatch};
use super::{ChartError, render, write_atomically};
use crate::schema::sweep::SweepDocument;
use crate::sweep::{Metric, cost_and_churn};

/// Size of a sweep chart (px).
pub const SWEEP_CHART_SIZE: (u32, u32) = (1100, 620);

/// Width of a sweep chart's legend column (px): configurations are named
/// by their settings, longer than a run chart's series names.
const SWEEP_LEGEND_WIDTH: u32 = 330;

/// Fills `root`, writes the title and splits off the legend column.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<Split<DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let body = root.titled(title, style::title_font())?;
    let width = body.dim_in_pixel().0;
    Ok(body.split_horizontally(width.saturating_sub(SWEEP_LEGEND_WIDTH)))
}

/// Configurations listed in a legend before the rest are counted.
const LEGEND_ROWS: usize = 20;

/// The width of one character of a point's label (px, a little more than
/// the font's).
const LABEL_CHAR_WIDTH: i32 = 9;
/// The height of one id (px).
const LABEL_HEIGHT: i32 = 15;

/// Characters of a configuration's text in a legend.
const LEGEND_TEXT: usize = 38;

/// One chart drawn for the page: its file stem, caption and SVG text.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawnChart {
    /// The file stem (`cost-vs-churn`).
    pub name: String,
    /// What it shows.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

/// Writes every sweep chart into `dir` (SVG and PNG) and returns them in
/// display order.
pub fn write_sweep_charts(
    document: &SweepDocument,
    dir: &Path,
) -> Result<Vec<DrawnChart>, ChartError> {
    let mut drawn = Vec::new();
    let scatter = CostVsChurn(document);
    drawn.push(write(&scatter, dir, "Cost against evictions per configuration: means with 95 % intervals; the line joins the Pareto frontier")?);
    for metric in Metric::ALL {
        let figure = BoxPlot { document, metric };
        let caption = format!(
            "{} by configuration: quartile box, median line, min–max whiskers, mean ×",
            capitalized(metric.title())
        );
        drawn.push(write(&figure, dir, &caption)?);
    }
    Ok(drawn)
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn write<F: Figure>(figure: &F, dir: &Path, caption: &str) -> Result<DrawnChart, ChartError> {
    let (svg, png) = render(figure)?;
    write_atomically(dir, &format!("{}.svg", figure.name()), svg.as_bytes())?;
    write_atomically(dir, &format!("{}.png", figure.name()), &png)?;
    Ok(DrawnChart {
        name: figure.name().to_string(),
        caption: caption.to_string(),
        svg,
    })
}

/// `text` cut to [`LEGEND_TEXT`] characters.
fn clip(text: String) -> String {
    if text.chars().count() > LEGEND_TEXT {
        let mut cut: String = text.chars().take(LEGEND_TEXT - 1).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

/// The legend rows of the configurations: each one's id and settings'
/// values (its base alone when it has no settings), under a row naming
/// the base when the sweep has several; at most [`LEGEND_ROWS`]
/// configurations, then a count of the rest.
fn configuration_legend(document: &SweepDocument) -> Vec<(Swatch, String)> {
    let configurations = &document.configurations;
    let several_bases = configurations
        .iter()
        .any(|c| c.base != configurations[0].base);
    let mut entries = Vec::new();
    for (index, configuration) in configurations.iter().enumerate().take(LEGEND_ROWS) {
        let new_base = index == 0 || configurations[index - 1].base != configuration.base;
        if several_bases && new_base && !configuration.settings.is_empty() {
            entries.push((Swatch::Blank, clip(format!("{}:", configuration.base))));
        }
        let mut text = configuration.id.clone();
        if configuration.settings.is_empty() {
            text.push(' ');
            text.push_str(&configuration.base);
        }
        for setting in &configuration.settings {
            text.push(' ');
            text.push_str(&setting.value);
        }
        entries.push((Swatch::Fill(style::variant_colour(index)), clip(text)));
    }
    if configurations.len() > LEGEND_ROWS {
        entries.push((
            Swatch::Blank,
            format!("… {} more", configurations.len() - LEGEND_ROWS),
        ));
    }
    entries
}

/// An axis range around `low..high` with room on both sides (and a unit
/// range around a single value).
fn padded(low: f64, high: f64) -> std::ops::Range<f64> {
    if !(low.is_finite() && high.is_finite()) {
        return 0.0..1.0;
    }
    let span = high - low;
    let pad = if span > 0.0 {
        span * 0.08
    } else {
        (high.abs() * 0.05).max(0.5)
    };
    (low - pad)..(high + pad)
}

/// The scatter of mean cost against mean evictions (`cost-vs-churn`).
pub struct CostVsChurn<'a>(pub &'a SweepDocument);

impl Figure for CostVsChurn<'_> {
    fn name(&self) -> &'static str {
        "cost-vs-churn"
    }
    fn size(&self) -> (u32, u32) {
        SWEEP_CHART_SIZE
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, target: Target) -> Drawn<DB> {
        let document = self.0;
        let title = format!(
            "{} / {}: cost against churn",
            document.sweep, document.scenario
        );
        let (plot, legend) = frame(root, &title)?;
        style::draw_y_caption(&plot, "mean cost (USD)")?;
        // (index, mean evictions, mean cost, evictions interval, cost interval).
        type Point = (usize, f64, f64, Option<(f64, f64)>, Option<(f64, f64)>);
        let points: Vec<Point> = document
            .configurations
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let (cost, churn) = cost_and_churn(c)?;
                let interval = |s: Option<&crate::schema::sweep::Statistics>| {
                    let s = s?;
                    Some((s.ci95_low?, s.ci95_high?))
                };
                Some((
                    i,
                    churn,
                    cost,
                    interval(c.metrics.evictions.as_ref()),
                    interval(c.metrics.cost_usd.as_ref()),
                ))
            })
            .collect();
        let x_values = points
            .iter()
            .flat_map(|p| [Some(p.1), p.3.map(|r| r.0), p.3.map(|r| r.1)])
            .flatten();
        let y_values = points
            .iter()
            .flat_map(|p| [Some(p.2), p.4.map(|r| r.0), p.4.map(|r| r.1)])
            .flatten();
        let (x_low, x_high) = bounds(x_values);
        let (y_low, y_high) = bounds(y_values);
        let x_range = padded(x_low.min(0.0), x_high);
        let mut chart = builder(&plot).build_cartesian_2d(x_range, padded(y_low, y_high))?;
        chart
            .configure_mesh()
            .x_desc("mean evictions per run")
            .axis_desc_style((FAMILY, DESC_SIZE).into_font().color(&INK))
            .label_style((FAMILY, LABEL_SIZE).into_font().color(&INK))
            .axis_style(INK)
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .x_labels(10)
            .y_labels(8)
            .x_label_formatter(&|x| style::tick(*x))
            .y_label_formatter(&|y| style::dollars(*y))
            .draw()?;
        // The frontier first, under the points: in order of evictions.
        let mut frontier: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| document.configurations[p.0].pareto)
            .map(|p| (p.1, p.2))
            .collect();
        frontier.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        if frontier.len() > 1 {
            draw_line(&mut chart, frontier, INK, true, target)?;
        }
        for (index, churn, cost, churn_interval, cost_interval) in &points {
            let colour = style::variant_colour(*index);
            let whisker = colour.stroke_width(2);
            if let Some((low, high)) = cost_interval {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(*churn, *low), (*churn, *high)],
                    whisker,
                )))?;
            }
            if let Some((low, high)) = churn_interval {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(*low, *cost), (*high, *cost)],
                    whisker,
                )))?;
            }
            chart.draw_series(std::iter::once(Circle::new(
                (*churn, *cost),
                6,
                colour.filled(),
            )))?;
        }
        // Ids beside their points (one label for points on the same
        // pixels), each moved down below the labels already placed that
        // it would cover.
        // (pixel, point, text).
        type Label = ((i32, i32), (f64, f64), String);
        let mut labels: Vec<Label> = Vec::new();
        for (index, churn, cost, _, _) in &points {
            let pixel = chart.backend_coord(&(*churn, *cost));
            let id = &document.configurations[*index].id;
            let same = labels
                .iter_mut()
                .find(|(at, _, _)| (at.0 - pixel.0).abs() <= 2 && (at.1 - pixel.1).abs() <= 2);
            match same {
                Some((_, _, text)) => {
                    text.push_str(", ");
                    text.push_str(id);
                }
                None => labels.push((pixel, (*churn, *cost), id.clone())),
            }
        }
        let mut placed: Vec<(i32, i32, i32)> = Vec::new();
        for ((x, y), at, text) in labels {
            let width = LABEL_CHAR_WIDTH * text.chars().count() as i32;
            let mut dy = -18;
            while placed.iter().any(|(px, py, pw)| {
                x < px + pw && *px < x + width && (py - (y + dy)).abs() < LABEL_HEIGHT
            }) {
                dy += LABEL_HEIGHT;
            }
            placed.push((x, y + dy, width));
            let font = (FAMILY, LABEL_SIZE).into_font().color(&INK);
            chart.draw_series(std::iter::once(
                EmptyElement::at(at) + Text::new(text, (8, dy), font),
            ))?;
        }
        let mut entries = configuration_legend(document);
        entries.push((Swatch::Dashed(INK), "Pareto frontier".to_string()));
        style::draw_legend(&legend, "configuration", &entries)?;
        root.present()
    }
}

/// The smallest and largest of `values` (0, 1 when there are none).
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (low, high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if low.is_finite() {
        (low, high)
    } else {
        (0.0, 1.0)
    }
}

/// One metric's box plot by configuration (`box-cost`, …).
pub struct BoxPlot<'a> {
    /// The sweep.
    pub document: &'a SweepDocument,
    /// The metric.
    pub metric: Metric,
}

impl Figure for BoxPlot<'_> {
    fn name(&self) -> &'static str {
        self.metric.chart_name()
    }
    fn size(&self) -> (u32, u32) {
        SWEEP_CHART_SIZE
    }
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        _target: Target,
    ) -> Drawn<DB> {
        let document = self.document;
        let title = format!(
            "{} / {}: {} by configuration",
            document.sweep,
            document.scenario,
            self.metric.title()
        );
        let (plot, legend) = frame(root, &title)?;
        style::draw_y_caption(&plot, self.metric.title())?;
        let count = document.configurations.len().max(1);
        let (low, high) = bounds(
            document
                .configurations
                .iter()
                .filter_map(|c| self.metric.of(&c.metrics))
                .flat_map(|s| [s.min, s.max]),
        );
        let ids: Vec<String> = document
            .configurations
            .iter()
            .map(|c| c.id.clone())
            .collect();
        let id_at = move |x: &f64| {
            let nearest = x.round();
            if (x - nearest).abs() < 1e-6 && nearest >= 0.0 {
                ids.get(nearest as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut chart =
            builder(&plot).build_cartesian_2d(-0.6f64..(count as f64 - 0.4), padded(low, high))?;
        chart
            .configure_mesh()
            .x_desc("configuration")
            .axis_desc_style((FAMILY, DESC_SIZE).into_font().color(&INK))
            .label_style((FAMILY, LABEL_SIZE).into_font().color(&INK))
            .axis_style(INK)
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .disable_x_mesh()
            .x_labels(count.min(40))
            .y_labels(8)
            .x_label_formatter(&id_at)
            .y_label_formatter(&|y| style::tick(*y))
            .draw()?;
        for (index, configuration) in document.configurations.iter().enumerate() {
            let Some(s) = self.metric.of(&configuration.metrics) else {
                continue;
            };
            let colour = style::variant_colour(index);
            let x = index as f64;
            let (half, cap) = (0.3, 0.15);
            let line = INK.stroke_width(1);
            chart.draw_series([
                PathElement::new(vec![(x, s.min), (x, s.q1)], line),
                PathElement::new(vec![(x, s.q3), (x, s.max)], line),
                PathElement::new(vec![(x - cap, s.min), (x + cap, s.min)], line),
                PathElement::new(vec![(x - cap, s.max), (x + cap, s.max)], line),
            ])?;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x - half, s.q1), (x + half, s.q3)],
                colour.mix(0.35).filled(),
            )))?;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x - half, s.q1), (x + half, s.q3)],
                colour.stroke_width(1),
            )))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x - half, s.median), (x + half, s.median)],
                colour.stroke_width(3),
            )))?;
            chart.draw_series(std::iter::once(Cross::new(
                (x, s.mean),
                5,
                INK.stroke_width(2),
            )))?;
        }
        style::draw_legend(&legend, "configuration", &configuration_legend(document))?;
        root.present()
    }
}
