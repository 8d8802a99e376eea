//! The charts themselves, each drawable on any plotters backend (SVG and
//! bitmap alike): the cost comparison across variants, and per variant the
//! stacked node counts, allocation efficiency, pending pods and the
//! eviction timeline.

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::data::{Gappy, Stack, VariantSeries};
use super::style::{
    self, CPU, DESC_SIZE, FAMILY, GRID, INK, LABEL_SIZE, LEGEND_WIDTH, MEMORY, PENDING, Swatch,
};

/// Size of a single-panel chart (px).
pub const PANEL_SIZE: (u32, u32) = (1000, 560);
/// Size of the two-panel cost comparison (px).
pub const COMPARISON_SIZE: (u32, u32) = (1000, 860);
/// How many instance types get their own colour before "other".
pub const TOP_INSTANCE_TYPES: usize = 8;

/// The result of drawing on backend `DB`.
pub type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The kind of backend a figure is drawn on, for the few places where
/// they need different handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `SVGBackend`.
    Svg,
    /// `BitMapBackend`.
    Bitmap,
}

/// A chart that can be drawn on any backend.
pub trait Figure {
    /// The file name without extension (`cost`, `nodes-by-type`, ...).
    fn name(&self) -> &'static str;
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws the whole chart on `root`, a `target` backend.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, target: Target) -> Drawn<DB>;
}

/// "scenario / variant: what" (the scenario left out when unknown).
fn variant_title(series: &VariantSeries, what: &str) -> String {
    if series.scenario.is_empty() {
        format!("{}: {what}", series.name)
    } else {
        format!("{} / {}: {what}", series.scenario, series.name)
    }
}

/// A plot area and a legend area.
pub(super) type Split<DB> = (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>);

/// Fills `root`, writes the title and splits off the legend column:
/// returns (plot area, legend area).
pub(super) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<Split<DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let body = root.titled(title, style::title_font())?;
    let width = body.dim_in_pixel().0;
    Ok(body.split_horizontally(width.saturating_sub(LEGEND_WIDTH)))
}

/// The chart builder every panel uses: room for the y caption on top and
/// for tick labels on the left and bottom.
pub(super) fn builder<'a, 'b, DB: DrawingBackend>(
    plot: &'a DrawingArea<DB, Shift>,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(plot);
    builder
        .margin_top(30)
        .margin_right(20)
        .margin_left(10)
        .margin_bottom(8)
        .x_label_area_size(48)
        .y_label_area_size(64);
    builder
}

/// Shared mesh look: light grid, readable ticks, hours on x.
fn mesh_look<X: Ranged, Y: Ranged, DB: DrawingBackend>(mesh: &mut MeshStyle<'_, '_, X, Y, DB>) {
    mesh.x_desc("time (hours)")
        .axis_desc_style((FAMILY, DESC_SIZE).into_font().color(&INK))
        .label_style((FAMILY, LABEL_SIZE).into_font().color(&INK))
        .axis_style(INK)
        .bold_line_style(GRID)
        .light_line_style(WHITE)
        .x_labels(12)
        .y_labels(8);
}

/// `points` without those landing on the pixel of the point before: both
/// backends draw whole pixels, so nothing visible is lost, SVG files stay
/// small, and no zero-length segment reaches the bitmap's wide strokes
/// (their outline breaks on them).
fn on_pixels<DB: DrawingBackend, Y: Ranged<ValueType: Copy>>(
    chart: &ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    points: impl IntoIterator<Item = (f64, Y::ValueType)>,
) -> Vec<(f64, Y::ValueType)> {
    let mut kept = Vec::new();
    let mut last_pixel = None;
    for point in points {
        let pixel = chart.backend_coord(&point);
        if last_pixel != Some(pixel) {
            last_pixel = Some(pixel);
            kept.push(point);
        }
    }
    kept
}

/// Dashes of the lower-bound lines: dash and gap length (px).
const DASH: (u32, u32) = (6, 4);

/// Draws a line (solid, or dashed and lighter) through `points`, 2 px wide. In SVG it is
/// one polyline. The bitmap backend fills wide strokes as polygons, and its
/// polygon filler smears nearly vertical ones down the whole image, so
/// there the line is drawn three times 1 px wide, shifted by a pixel right
/// and down.
pub(super) fn draw_line<DB: DrawingBackend, Y: Ranged<ValueType: Copy + 'static>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    points: Vec<(f64, Y::ValueType)>,
    colour: RGBColor,
    dashed: bool,
    target: Target,
) -> Drawn<DB> {
    let points = on_pixels(chart, points);
    // Lower bounds are dashed and a little lighter.
    let shade: ShapeStyle = if dashed {
        colour.mix(style::DASH_OPACITY).into()
    } else {
        colour.into()
    };
    match target {
        Target::Svg => {
            let style = ShapeStyle {
                stroke_width: 2,
                ..shade
            };
            if dashed {
                chart.draw_series(DashedLineSeries::new(points, DASH.0, DASH.1, style))?;
            } else {
                chart.draw_series(LineSeries::new(points, style))?;
            }
        }
        Target::Bitmap => {
            let area = chart.plotting_area();
            let (base_x, base_y) = area.get_base_pixel();
            let pixels: Vec<(i32, i32)> = points
                .iter()
                .map(|p| {
                    let (x, y) = chart.backend_coord(p);
                    (x - base_x, y - base_y)
                })
                .collect();
            let area = area.strip_coord_spec();
            let style = ShapeStyle {
                stroke_width: 1,
                ..shade
            };
            for (dx, dy) in [(0, 0), (1, 0), (0, 1)] {
                let shifted: Vec<(i32, i32)> =
                    pixels.iter().map(|(x, y)| (x + dx, y + dy)).collect();
                if dashed {
                    area.draw(&DashedPathElement::new(shifted, DASH.0, DASH.1, style))?;
                } else {
                    area.draw(&PathElement::new(shifted, style))?;
                }
            }
        }
    }
    Ok(())
}

fn hours_label(x: &f64) -> String {
    style::tick(*x)
}

fn count_label(y: &u32) -> String {
    y.to_string()
}

/// Draws `stack` as filled layers (straight lines between samples), and
/// its legend top layer first, so it reads top to bottom like the stack.
fn draw_stack<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &VariantSeries,
    stack: &Stack,
    colours: &[RGBColor],
    title: &str,
    heading: &str,
) -> Drawn<DB> {
    let (plot, legend) = frame(root, title)?;
    style::draw_y_caption(&plot, "nodes")?;
    let hours = series.hours();
    let totals: Vec<u32> = (0..hours.len()).map(|i| stack.total_at(i)).collect();
    let y_top = style::count_top(totals.iter().copied().max().unwrap_or(0));
    let mut chart = builder(&plot)
        .build_cartesian_2d(0f64..style::hours_top(series.duration_hours()), 0u32..y_top)?;
    let mut mesh = chart.configure_mesh();
    mesh_look(&mut mesh);
    mesh.x_label_formatter(&hours_label)
        .y_label_formatter(&count_label)
        .draw()?;

    // Keep a sample where any layer changes next to it, so all layers
    // share their corner points.
    let kept: Vec<usize> = (0..hours.len())
        .filter(|&i| {
            let differs = |a: usize, b: usize| stack.counts.iter().any(|c| c[a] != c[b]);
            i == 0 || i + 1 == hours.len() || differs(i - 1, i) || differs(i, i + 1)
        })
        .collect();
    let mut lower = vec![0u32; kept.len()];
    let mut layers = Vec::with_capacity(stack.labels.len());
    for counts in &stack.counts {
        let upper: Vec<u32> = kept
            .iter()
            .zip(&lower)
            .map(|(&i, low)| low + counts[i])
            .collect();
        layers.push((lower.clone(), upper.clone()));
        lower = upper;
    }
    for (index, (low, high)) in layers.iter().enumerate().rev() {
        let mut outline: Vec<(f64, u32)> = kept
            .iter()
            .zip(high)
            .map(|(&i, y)| (hours[i], *y))
            .collect();
        outline.extend(kept.iter().zip(low).rev().map(|(&i, y)| (hours[i], *y)));
        if outline.is_empty() {
            continue;
        }
        chart.draw_series(std::iter::once(Polygon::new(
            on_pixels(&chart, outline),
            colours[index].filled(),
        )))?;
    }
    let entries: Vec<(Swatch, String)> = stack
        .labels
        .iter()
        .enumerate()
        .rev()
        .map(|(index, label)| (Swatch::Fill(colours[index]), label.clone()))
        .collect();
    style::draw_legend(&legend, heading, &entries)?;
    root.present()
}

/// Nodes over time stacked by instance type (`nodes-by-type`).
pub struct NodesByType<'a>(pub &'a VariantSeries);

impl Figure for NodesByType<'_> {
    fn name(&self) -> &'static str {
        "nodes-by-type"
    }
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE
    }
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        _target: Target,
    ) -> Drawn<DB> {
        let stack = self.0.nodes_by_instance_type(TOP_INSTANCE_TYPES);
        let colours: Vec<RGBColor> = stack
            .labels
            .iter()
            .enumerate()
            .map(|(rank, label)| style::instance_type_colour(rank, label))
            .collect();
        let title = variant_title(self.0, "nodes by instance type");
        draw_stack(root, self.0, &stack, &colours, &title, "instance type")
    }
}

/// Nodes over time stacked by capacity type (`nodes-by-capacity`).
pub struct NodesByCapacity<'a>(pub &'a VariantSeries);

impl Figure for NodesByCapacity<'_> {
    fn name(&self) -> &'static str {
        "nodes-by-capacity"
    }
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE
    }
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        _target: Target,
    ) -> Drawn<DB> {
        let stack = self.0.nodes_by_capacity_type();
        let colours: Vec<RGBColor> = stack
            .labels
            .iter()
            .enumerate()
            .map(|(index, label)| style::capacity_colour(label, index))
            .collect();
        let title = variant_title(self.0, "nodes by capacity type");
        draw_stack(root, self.0, &stack, &colours, &title, "capacity type")
    }
}

/// CPU and memory allocation (requested / allocatable) over time
/// (`efficiency`).
pub struct Efficiency<'a>(pub &'a VariantSeries);

impl Figure for Efficiency<'_> {
    fn name(&self) -> &'static str {
        "efficiency"
    }
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, target: Target) -> Drawn<DB> {
        let series = self.0;
        let title = variant_title(series, "allocation efficiency (requested / allocatable)");
        let (plot, legend) = frame(root, &title)?;
        style::draw_y_caption(&plot, "allocated (%)")?;
        let (cpu, memory) = series.allocation_percent();
        let hours = series.hours();
        let peak = cpu
            .iter()
            .chain(&memory)
            .flatten()
            .fold(100.0f64, |m, v| m.max(*v));
        let y_top = if peak > 100.0 {
            style::axis_top(peak)
        } else {
            105.0
        };
        let mut chart = builder(&plot)
            .build_cartesian_2d(0f64..style::hours_top(series.duration_hours()), 0f64..y_top)?;
        let mut mesh = chart.configure_mesh();
        mesh_look(&mut mesh);
        mesh.x_label_formatter(&hours_label)
            .y_label_formatter(&|y| style::tick(*y))
            .draw()?;
        let mut entries = Vec::new();
        let (cpu_overall, memory_overall) = series.overall_allocation_percent();
        for (values, colour, label, overall) in [
            (&cpu, CPU, "CPU", cpu_overall),
            (&memory, MEMORY, "memory", memory_overall),
        ] {
            let points: Vec<(f64, Option<f64>)> =
                hours.iter().copied().zip(values.iter().copied()).collect();
            for run in style::segments(&points) {
                draw_line(&mut chart, run, colour, false, target)?;
            }
            let text = match overall {
                Some(percent) => format!("{label} (overall {percent:.0}%)"),
                None => label.to_string(),
            };
            entries.push((Swatch::Line(colour), text));
        }
        style::draw_legend(&legend, "resource", &entries)?;
        root.present()
    }
}

/// Pending pods over time (`pending`).
pub struct Pending<'a>(pub &'a VariantSeries);

impl Figure for Pending<'_> {
    fn name(&self) -> &'static str {
        "pending"
    }
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, target: Target) -> Drawn<DB> {
        let series = self.0;
        let (plot, legend) = frame(root, &variant_title(series, "pending pods"))?;
        style::draw_y_caption(&plot, "pods")?;
        let points: Vec<(f64, u32)> = series
            .hours()
            .into_iter()
            .zip(
                series
                    .samples
                    .iter()
                    .map(|s| u32::try_from(s.pending_pods).unwrap_or(u32::MAX)),
            )
            .collect();
        let peak = points.iter().map(|p| p.1).max().unwrap_or(0);
        let mut chart = builder(&plot).build_cartesian_2d(
            0f64..style::hours_top(series.duration_hours()),
            0u32..style::count_top(peak),
        )?;
        let mut mesh = chart.configure_mesh();
        mesh_look(&mut mesh);
        mesh.x_label_formatter(&hours_label)
            .y_label_formatter(&count_label)
            .draw()?;
        let line = on_pixels(&chart, style::thin(&points));
        if let (Some(first), Some(last)) = (line.first(), line.last()) {
            let mut area = line.clone();
            area.push((last.0, 0));
            area.push((first.0, 0));
            chart.draw_series(std::iter::once(Polygon::new(
                area,
                PENDING.mix(0.2).filled(),
            )))?;
            draw_line(&mut chart, line, PENDING, false, target)?;
        }
        let total_peak = format!("pending pods (peak {peak})");
        style::draw_legend(&legend, "series", &[(Swatch::Line(PENDING), total_peak)])?;
        root.present()
    }
}

/// Human text for a bucket width: `10 min`, `1 h`.
pub fn bucket_text(bucket_ms: u64) -> String {
    let minutes = bucket_ms / 60_000;
    if minutes >= 60 && minutes.is_multiple_of(60) {
        format!("{} h", minutes / 60)
    } else {
        format!("{minutes} min")
    }
}

/// Evictions per time bucket, stacked by reason (`disruptions`).
pub struct Disruptions<'a>(pub &'a VariantSeries);

impl Figure for Disruptions<'_> {
    fn name(&self) -> &'static str {
        "disruptions"
    }
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE
    }
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        _target: Target,
    ) -> Drawn<DB> {
        let series = self.0;
        let buckets = series.evictions_by_bucket();
        let width = bucket_text(buckets.bucket_ms);
        let title = variant_title(series, &format!("pod evictions per {width}"));
        let (plot, legend) = frame(root, &title)?;
        style::draw_y_caption(&plot, &format!("evictions per {width}"))?;
        let bars = buckets.counts.first().map_or(0, Vec::len);
        let peak = (0..bars)
            .map(|b| buckets.counts.iter().map(|c| c[b]).sum::<u32>())
            .max()
            .unwrap_or(0);
        let mut chart = builder(&plot).build_cartesian_2d(
            0f64..style::hours_top(series.duration_hours()),
            0u32..style::count_top(peak),
        )?;
        let mut mesh = chart.configure_mesh();
        mesh_look(&mut mesh);
        mesh.x_label_formatter(&hours_label)
            .y_label_formatter(&count_label)
            .draw()?;
        let bucket_hours = buckets.bucket_ms as f64 / 3_600_000.0;
        let colours: Vec<RGBColor> = buckets
            .reasons
            .iter()
            .enumerate()
            .map(|(index, reason)| style::reason_colour(reason, index))
            .collect();
        let mut bottoms = vec![0u32; bars];
        for (counts, colour) in buckets.counts.iter().zip(&colours) {
            let mut rects = Vec::new();
            for (bar, count) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                let start = bar as f64 * bucket_hours;
                let gap = bucket_hours * 0.1;
                let low = bottoms[bar];
                rects.push(Rectangle::new(
                    [
                        (start + gap, low),
                        (start + bucket_hours - gap, low + count),
                    ],
                    colour.filled(),
                ));
                bottoms[bar] += count;
            }
            chart.draw_series(rects)?;
        }
        if buckets.reasons.is_empty() {
            let font = (FAMILY, DESC_SIZE).into_font().color(&INK);
            let (w, h) = plot.dim_in_pixel();
            let x = i32::try_from(w / 2).unwrap_or(0) - 40;
            let y = i32::try_from(h / 2).unwrap_or(0);
            plot.draw(&Text::new("no evictions", (x, y), font))?;
        }
        let mut entries: Vec<(Swatch, String)> = buckets
            .reasons
            .iter()
            .zip(&buckets.counts)
            .zip(&colours)
            .map(|((reason, counts), colour)| {
                let total: u32 = counts.iter().sum();
                (Swatch::Fill(*colour), format!("{reason} ({total})"))
            })
            .collect();
        if entries.is_empty() {
            entries.push((Swatch::Blank, "none".to_string()));
        }
        style::draw_legend(&legend, "reason (evictions)", &entries)?;
        root.present()
    }
}

/// Cumulative cost (top) and cost rate (bottom) of every variant, overlaid
/// (`cost`); lower bounds dashed where the reports have them.
pub struct CostComparison<'a>(pub &'a [VariantSeries]);

impl Figure for CostComparison<'_> {
    fn name(&self) -> &'static str {
        "cost"
    }
    fn size(&self) -> (u32, u32) {
        COMPARISON_SIZE
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, target: Target) -> Drawn<DB> {
        let variants = self.0;
        let scenario = variants
            .iter()
            .map(|v| v.scenario.as_str())
            .find(|s| !s.is_empty());
        let title = match scenario {
            Some(name) => format!("{name}: cost per variant"),
            None => "cost per variant".to_string(),
        };
        let (plots, legend) = frame(root, &title)?;
        let half = plots.dim_in_pixel().1 / 2;
        let (upper, lower) = plots.split_vertically(half);
        let x_top = style::hours_top(
            variants
                .iter()
                .map(VariantSeries::duration_hours)
                .fold(0.0, f64::max),
        );
        let cumulative: Vec<Vec<(f64, f64)>> = variants
            .iter()
            .map(VariantSeries::cumulative_cost)
            .collect();
        let cumulative_bounds: Vec<Option<Vec<(f64, f64)>>> = variants
            .iter()
            .map(VariantSeries::cumulative_lower_bound)
            .collect();
        let rates: Vec<Vec<(f64, f64)>> = variants.iter().map(VariantSeries::cost_rate).collect();
        let rate_bounds: Vec<Option<Gappy>> = variants
            .iter()
            .map(VariantSeries::lower_bound_rate)
            .collect();

        let cumulative_top = cumulative
            .iter()
            .flatten()
            .chain(cumulative_bounds.iter().flatten().flatten())
            .fold(0.0f64, |m, p| m.max(p.1));
        style::draw_y_caption(&upper, "cumulative cost ($)")?;
        let mut chart = builder(&upper)
            .build_cartesian_2d(0f64..x_top, 0f64..style::axis_top(cumulative_top))?;
        let mut mesh = chart.configure_mesh();
        mesh_look(&mut mesh);
        mesh.x_label_formatter(&hours_label)
            .y_label_formatter(&|y| style::dollars(*y))
            .draw()?;
        for (index, (line, bound)) in cumulative.iter().zip(&cumulative_bounds).enumerate() {
            let colour = style::variant_colour(index);
            if let Some(bound) = bound {
                draw_line(&mut chart, style::thin(bound), colour, true, target)?;
            }
            draw_line(&mut chart, line.clone(), colour, false, target)?;
        }

        let rate_top = rates
            .iter()
            .flatten()
            .map(|p| p.1)
            .chain(rate_bounds.iter().flatten().flatten().filter_map(|p| p.1))
            .fold(0.0f64, f64::max);
        style::draw_y_caption(&lower, "cost rate ($/h)")?;
        let mut chart =
            builder(&lower).build_cartesian_2d(0f64..x_top, 0f64..style::axis_top(rate_top))?;
        let mut mesh = chart.configure_mesh();
        mesh_look(&mut mesh);
        mesh.x_label_formatter(&hours_label)
            .y_label_formatter(&|y| style::dollars(*y))
            .draw()?;
        for (index, (line, bound)) in rates.iter().zip(&rate_bounds).enumerate() {
            let colour = style::variant_colour(index);
            if let Some(bound) = bound {
                for run in style::segments(bound) {
                    draw_line(&mut chart, run, colour, true, target)?;
                }
            }
            draw_line(&mut chart, style::thin(line), colour, false, target)?;
        }

        let mut entries: Vec<(Swatch, String)> = variants
            .iter()
            .zip(&cumulative)
            .enumerate()
            .map(|(index, (variant, line))| {
                let total = line.last().map_or(0.0, |p| p.1);
                (
                    Swatch::Line(style::variant_colour(index)),
                    format!("{} (${total:.2})", variant.name),
                )
            })
            .collect();
        if variants.iter().any(|v| v.has_lower_bound) {
            entries.push((Swatch::Dashed(INK), "lower bound (cheapest".to_string()));
            entries.push((Swatch::Blank, "$/h for the requests)".to_string()));
        }
        style::draw_legend(&legend, "variant (total)", &entries)?;
        root.present()
    }
}
