//! The look shared by every chart: the embedded font, the colours (fixed
//! per capacity type, eviction reason and series; by rank for instance
//! types and by position for variants), the legend column, axis tick text
//! and the point thinning that keeps SVG files small.

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

/// The font family every text uses; registered from the embedded DejaVu
/// Sans, so no system font is needed.
pub const FAMILY: &str = "sans-serif";

/// Title text size (px).
pub const TITLE_SIZE: u32 = 20;
/// Axis tick and legend text size (px).
pub const LABEL_SIZE: u32 = 14;
/// Axis description text size (px).
pub const DESC_SIZE: u32 = 15;
/// Opacity of dashed (lower-bound) lines, a little lighter than solid ones.
pub const DASH_OPACITY: f64 = 0.75;
/// Width of the legend column on the right (px).
pub const LEGEND_WIDTH: u32 = 230;

/// Registers DejaVu Sans (regular and bold) as [`FAMILY`] for the bitmap
/// backend, once per process; `Err` names what failed.
pub fn ensure_fonts() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "the embedded DejaVu Sans font is unreadable".to_string())?;
            plotters::style::register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold())
                .map_err(|_| "the embedded DejaVu Sans Bold font is unreadable".to_string())
        })
        .clone()
}

/// Ten well-separated colours (Tableau 10), used in order.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7), // blue
    RGBColor(0xf2, 0x8e, 0x2b), // orange
    RGBColor(0x59, 0xa1, 0x4f), // green
    RGBColor(0xe1, 0x57, 0x59), // red
    RGBColor(0xb0, 0x7a, 0xa1), // purple
    RGBColor(0x9c, 0x75, 0x5f), // brown
    RGBColor(0xff, 0x9d, 0xa7), // pink
    RGBColor(0x76, 0xb7, 0xb2), // teal
    RGBColor(0xed, 0xc9, 0x48), // yellow
    RGBColor(0x4b, 0x4b, 0x4b), // dark grey
];

/// The colour of groups without one of their own ("other").
pub const GREY: RGBColor = RGBColor(0xba, 0xb0, 0xac);
/// Text and axis colour.
pub const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);
/// Grid line colour.
pub const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);

/// The colour of the `index`-th variant of a report.
pub fn variant_colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// The colour of the `rank`-th instance type (by node-hours); "other" is
/// grey.
pub fn instance_type_colour(rank: usize, label: &str) -> RGBColor {
    if label == super::data::OTHER {
        GREY
    } else {
        PALETTE[rank % PALETTE.len()]
    }
}

/// Fixed colours for capacity types, so spot looks the same everywhere.
pub fn capacity_colour(label: &str, index: usize) -> RGBColor {
    match label {
        "on-demand" => PALETTE[0],
        "spot" => PALETTE[1],
        _ => PALETTE[2 + index % (PALETTE.len() - 2)],
    }
}

/// Fixed colours for the eviction reasons the simulator uses; others take
/// the colours left over, in order.
pub fn reason_colour(label: &str, index: usize) -> RGBColor {
    match label {
        "underutilized" => PALETTE[0],
        "empty" => PALETTE[7],
        "drifted" => PALETTE[4],
        "expired" => PALETTE[5],
        "interrupted" => PALETTE[3],
        "unspecified" => GREY,
        _ => {
            const FREE: [usize; 5] = [1, 2, 8, 6, 9];
            PALETTE[FREE[index % FREE.len()]]
        }
    }
}

/// CPU series colour.
pub const CPU: RGBColor = PALETTE[0];
/// Memory series colour.
pub const MEMORY: RGBColor = PALETTE[2];
/// Pending pods series colour.
pub const PENDING: RGBColor = PALETTE[3];

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy)]
pub enum Swatch {
    /// A filled square (areas and bars).
    Fill(RGBColor),
    /// A short solid line.
    Line(RGBColor),
    /// A short dashed line.
    Dashed(RGBColor),
    /// Nothing: the row continues the text of the row above.
    Blank,
}

/// Draws a legend in `area` (the right-hand column): a heading, then one
/// row per entry.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    heading: &str,
    entries: &[(Swatch, String)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let heading_font = (FAMILY, LABEL_SIZE, FontStyle::Bold)
        .into_font()
        .color(&INK);
    let font = (FAMILY, LABEL_SIZE).into_font().color(&INK);
    let top = 30;
    area.draw(&Text::new(heading.to_string(), (8, top), heading_font))?;
    for (row, (swatch, text)) in entries.iter().enumerate() {
        let y = top + 26 + 22 * i32::try_from(row).unwrap_or(0);
        match *swatch {
            Swatch::Fill(colour) => {
                area.draw(&Rectangle::new([(8, y), (22, y + 14)], colour.filled()))?;
            }
            Swatch::Line(colour) => {
                area.draw(&PathElement::new(
                    vec![(4, y + 7), (26, y + 7)],
                    colour.stroke_width(3),
                ))?;
            }
            Swatch::Dashed(colour) => {
                for x in [4, 12, 20] {
                    area.draw(&PathElement::new(
                        vec![(x, y + 7), (x + 5, y + 7)],
                        colour.mix(DASH_OPACITY).stroke_width(2),
                    ))?;
                }
            }
            Swatch::Blank => {}
        }
        area.draw(&Text::new(text.clone(), (32, y), font.clone()))?;
    }
    Ok(())
}

/// Draws the y axis description horizontally above the axis, at the top
/// left of `area`: the bitmap backend cannot rotate text, and this reads
/// the same in both formats.
pub fn draw_y_caption<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let font = (FAMILY, DESC_SIZE).into_font().color(&INK);
    area.draw(&Text::new(caption.to_string(), (10, 6), font))
}

/// The title font.
pub fn title_font() -> TextStyle<'static> {
    (FAMILY, TITLE_SIZE, FontStyle::Bold)
        .into_font()
        .color(&INK)
}

/// Tick text: up to two decimals, trailing zeros dropped (`12`, `2.5`).
pub fn tick(value: f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// Money tick text: `$12`, `$2.5`.
pub fn dollars(value: f64) -> String {
    format!("${}", tick(value))
}

/// The upper end of an axis showing values up to `max`: a little headroom,
/// and never an empty range.
pub fn axis_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// The upper end of a count axis showing counts up to `max`.
pub fn count_top(max: u32) -> u32 {
    max + (max / 10).max(1)
}

/// The x axis end (hours) for a run of `hours`.
pub fn hours_top(hours: f64) -> f64 {
    if hours.is_finite() && hours > 0.0 {
        hours
    } else {
        1.0
    }
}

/// `points` without the inner points of runs of equal values: the line
/// drawn through what is left is the same, with far fewer points.
pub fn thin<Y: PartialEq + Copy>(points: &[(f64, Y)]) -> Vec<(f64, Y)> {
    let mut kept = Vec::with_capacity(points.len().min(1024));
    for (index, point) in points.iter().enumerate() {
        let same_before = index > 0 && points[index - 1].1 == point.1;
        let same_after = points.get(index + 1).is_some_and(|next| next.1 == point.1);
        if !(same_before && same_after) {
            kept.push(*point);
        }
    }
    kept
}

/// Splits a series with holes into runs of values, each thinned.
pub fn segments(points: &[(f64, Option<f64>)]) -> Vec<Vec<(f64, f64)>> {
    let mut runs = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (x, y) in points {
        match y {
            Some(y) => current.push((*x, *y)),
            None if !current.is_empty() => runs.push(thin(&std::mem::take(&mut current))),
            None => {}
        }
    }
    if !current.is_empty() {
        runs.push(thin(&current));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_text_drops_trailing_zeros() {
        assert_eq!(tick(12.0), "12");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.126), "0.13");
        assert_eq!(tick(-0.001), "0");
        assert_eq!(dollars(3.0), "$3");
    }

    #[test]
    fn thinning_keeps_the_ends_of_each_flat_run() {
        let points = [(0.0, 1), (1.0, 1), (2.0, 1), (3.0, 2), (4.0, 2), (5.0, 2)];
        assert_eq!(thin(&points), vec![(0.0, 1), (2.0, 1), (3.0, 2), (5.0, 2)]);
        assert_eq!(thin(&[(0.0, 1)]), vec![(0.0, 1)]);
    }

    #[test]
    fn holes_split_a_series() {
        let points = [
            (0.0, None),
            (1.0, Some(1.0)),
            (2.0, Some(2.0)),
            (3.0, None),
            (4.0, Some(5.0)),
        ];
        assert_eq!(
            segments(&points),
            vec![vec![(1.0, 1.0), (2.0, 2.0)], vec![(4.0, 5.0)]]
        );
    }

    #[test]
    fn axis_ends_are_never_empty() {
        assert_eq!(axis_top(0.0), 1.0);
        assert!(axis_top(10.0) > 10.0);
        assert_eq!(count_top(0), 1);
        assert_eq!(count_top(30), 33);
        assert_eq!(hours_top(0.0), 1.0);
    }

    #[test]
    fn spot_and_interruptions_keep_their_colours() {
        assert_eq!(capacity_colour("spot", 0), capacity_colour("spot", 5));
        assert_ne!(capacity_colour("spot", 0), capacity_colour("on-demand", 0));
        assert_eq!(
            reason_colour("interrupted", 0),
            reason_colour("interrupted", 3)
        );
        assert_eq!(instance_type_colour(3, "other"), GREY);
    }
}
