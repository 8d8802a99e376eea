//! Tests of reading reports back and drawing their charts, on a small
//! hand-made report whose numbers are worked out in the comments.

use std::fs;
use std::path::Path;

use super::data::{self, VariantSeries};
use super::figures::{self, CostComparison, Efficiency, NodesByCapacity, NodesByType};
use super::*;

const SUMMARY: &str = r#"{
  "scenario": "tiny",
  "variant": "spot-first",
  "duration_s": 240.0,
  "total_cost_usd": 0.010833,
  "node_hours": 0.1083,
  "peak_nodes": 3,
  "nodeclaims_launched": 3,
  "cpu_allocation": 0.4286,
  "memory_allocation": 0.3333
}"#;

/// Five minutes. Nodes: a (spot m5.large) runs 30–150 s, b (on-demand
/// c5.large) from 60 s on, c (spot m5.large) 90–180 s; so 0, 2 (a b),
/// 3 (a b c), 1 (b), 1 (b) nodes at the samples.
const TIMESERIES: &str = "\
time_s,nodes,nodes_ready,cost_usd_per_hour,cpu_requested,cpu_allocatable,memory_requested_gib,memory_allocatable_gib,pending_pods
0.000,0,0,0.000000,0.000,0.000,0.000,0.000,3
60.000,2,1,0.200000,1.000,4.000,2.000,8.000,1
120.000,3,3,0.300000,3.000,6.000,4.000,12.000,0
180.000,1,1,0.100000,1.000,2.000,1.000,4.000,0
240.000,1,1,0.100000,1.000,2.000,1.000,4.000,0
";

/// Each node costs $0.1/h: a 120 s → 0.1 × 120 / 3600, b 180 s, c 90 s.
const NODECLAIMS: &str = "\
name,nodepool,instance_type,capacity_type,zone,price_usd_per_hour,launched_at_s,ready_at_s,deleted_at_s,reason_deleted,cost_usd,reason_launched
a,default,m5.large,spot,us-east-1a,0.100000,30.000,50.000,150.000,underutilized,0.003333,provisioning
b,default,c5.large,on-demand,us-east-1a,0.100000,60.000,80.000,,,0.005000,provisioning
c,default,m5.large,spot,us-east-1b,0.100000,90.000,110.000,180.000,interrupted,0.002500,provisioning
";

const EVENTS: &str = "\
time_s,type,reason,object,message
100.000,Normal,Evicted,pod/default/web-1,Evicted pod from node a: underutilized
110.000,Normal,Evicted,pod/default/web-2,Evicted pod from node c: interrupted
120.000,Normal,Evicted,pod/default/web-3,Evicted pod from node c: interrupted
130.000,Normal,Killing,pod/default/web-4,\"Stopping container web, grace 30s\"
";

/// Writes the tiny variant into `dir/name`; `timeseries` replaces the
/// default time series.
fn write_variant(dir: &Path, name: &str, timeseries: &str) -> std::path::PathBuf {
    let variant = dir.join(name);
    fs::create_dir_all(&variant).unwrap();
    fs::write(
        variant.join("summary.json"),
        SUMMARY.replace("spot-first", name),
    )
    .unwrap();
    fs::write(variant.join("timeseries.csv"), timeseries).unwrap();
    fs::write(variant.join("nodeclaims.csv"), NODECLAIMS).unwrap();
    fs::write(variant.join("events.csv"), EVENTS).unwrap();
    fs::write(variant.join("disruption.csv"), "node,time_s,reason\n").unwrap();
    variant
}

/// The tiny time series with a lower bound of 0, 0.1, 0.2, 0.05, 0.05 $/h.
fn with_lower_bound() -> String {
    let bounds = [
        "", "0.000000", "0.100000", "0.200000", "0.050000", "0.050000",
    ];
    TIMESERIES
        .lines()
        .zip(bounds)
        .map(|(line, bound)| {
            let extra = if bound.is_empty() {
                data::LOWER_BOUND_COLUMN
            } else {
                bound
            };
            format!("{line},{extra}\n")
        })
        .collect()
}

fn tiny() -> VariantSeries {
    let dir = tempfile::tempdir().unwrap();
    let variant = write_variant(dir.path(), "spot-first", TIMESERIES);
    VariantSeries::read_dir(&variant).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn reads_a_variant_folder() {
    let series = tiny();
    assert_eq!(series.name, "spot-first");
    assert_eq!(series.scenario, "tiny");
    assert_eq!(series.duration_ms, 240_000);
    assert_eq!(series.samples.len(), 5);
    assert_eq!(series.samples[2].nodes, 3);
    assert!(!series.has_lower_bound);
    assert_eq!(series.nodes.len(), 3);
    assert_eq!(series.nodes[1].deleted_at_ms, None);
    let reasons: Vec<&str> = series.evictions.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(reasons, ["underutilized", "interrupted", "interrupted"]);
}

#[test]
fn capacity_stack_adds_up_to_the_nodes_column() {
    let series = tiny();
    let stack = series.nodes_by_capacity_type();
    assert_eq!(stack.labels, ["on-demand", "spot"]);
    assert_eq!(stack.counts, [vec![0, 1, 1, 1, 1], vec![0, 1, 2, 0, 0]]);
    for (index, sample) in series.samples.iter().enumerate() {
        assert_eq!(
            u64::from(stack.total_at(index)),
            sample.nodes,
            "sample {index}"
        );
    }
}

#[test]
fn instance_types_beyond_the_top_go_to_other() {
    let series = tiny();
    // m5.large: 120 s + 90 s; c5.large: 180 s.
    let hours = series.node_hours_by_type();
    assert!(close(hours["m5.large"], 210.0 / 3600.0));
    let top_one = series.nodes_by_instance_type(1);
    assert_eq!(top_one.labels, ["m5.large", data::OTHER]);
    assert_eq!(top_one.counts, [vec![0, 1, 2, 0, 0], vec![0, 1, 1, 1, 1]]);
    let all = series.nodes_by_instance_type(8);
    assert_eq!(all.labels, ["m5.large", "c5.large"]);
}

#[test]
fn cumulative_cost_is_exact_at_every_point() {
    let series = tiny();
    let points = series.cumulative_cost();
    let times: Vec<f64> = points.iter().map(|p| p.0 * 3600.0).collect();
    let expected_times = [0.0, 30.0, 60.0, 90.0, 150.0, 180.0, 240.0];
    assert_eq!(times.len(), expected_times.len());
    for (t, e) in times.iter().zip(expected_times) {
        assert!(close(*t, e), "{times:?}");
    }
    // At 90 s: a has run 60 of its 120 s, b 30 of its 180 s, c none.
    assert!(close(
        points[3].1,
        0.003333 * 60.0 / 120.0 + 0.005 * 30.0 / 180.0
    ));
    // At the end, every node's whole cost.
    assert!(close(points[6].1, 0.003333 + 0.005 + 0.0025));
}

/// A node that lives less than a minute shows in no sample, yet its cost
/// counts; one deleted as it launched costs its amount at once.
#[test]
fn short_lived_nodes_cost_but_do_not_stack() {
    let dir = tempfile::tempdir().unwrap();
    let variant = write_variant(dir.path(), "v", TIMESERIES);
    let extra = "\
d,default,m5.large,spot,us-east-1a,0.100000,190.000,,200.000,interrupted,0.000278,provisioning
e,default,m5.large,spot,us-east-1a,0.100000,210.000,,210.000,launch-failed,0.001000,provisioning
";
    fs::write(
        variant.join("nodeclaims.csv"),
        format!("{NODECLAIMS}{extra}"),
    )
    .unwrap();
    let series = VariantSeries::read_dir(&variant).unwrap();
    let stack = series.nodes_by_capacity_type();
    for (index, sample) in series.samples.iter().enumerate() {
        assert_eq!(
            u64::from(stack.total_at(index)),
            sample.nodes,
            "sample {index}"
        );
    }
    let points = series.cumulative_cost();
    let last = points.last().unwrap().1;
    assert!(
        close(last, 0.003333 + 0.005 + 0.0025 + 0.000278 + 0.001),
        "{last}"
    );
    let at_210 = points
        .iter()
        .find(|p| close(p.0 * 3600.0, 210.0))
        .unwrap()
        .1;
    // b has run 150 of its 180 s by then; a, c and d are done.
    let expected = 0.003333 + 0.005 * 150.0 / 180.0 + 0.0025 + 0.000278 + 0.001;
    assert!(close(at_210, expected), "{at_210} vs {expected}");
}

#[test]
fn lower_bound_is_optional_and_integrated_step_wise() {
    let series = tiny();
    assert!(series.lower_bound_rate().is_none());
    assert!(series.cumulative_lower_bound().is_none());

    let dir = tempfile::tempdir().unwrap();
    let variant = write_variant(dir.path(), "bounded", &with_lower_bound());
    let bounded = VariantSeries::read_dir(&variant).unwrap();
    assert!(bounded.has_lower_bound);
    let rate = bounded.lower_bound_rate().unwrap();
    assert_eq!(rate[2].1, Some(0.2));
    let cumulative = bounded.cumulative_lower_bound().unwrap();
    // Each minute at the rate of its start: (0 + 0.1 + 0.2 + 0.05) / 60.
    assert!(close(cumulative[4].1, 0.35 / 60.0));
    assert!(close(cumulative[1].1, 0.0));
}

#[test]
fn allocation_has_holes_where_nothing_is_allocatable() {
    let series = tiny();
    let (cpu, memory) = series.allocation_percent();
    assert_eq!(cpu[0], None);
    assert_eq!(cpu[1], Some(25.0));
    assert_eq!(memory[2], Some(100.0 * 4.0 / 12.0));
    let (cpu_overall, _) = series.overall_allocation_percent();
    // (1 + 3 + 1 + 1) / (4 + 6 + 2 + 2).
    assert!(close(cpu_overall.unwrap(), 100.0 * 6.0 / 14.0));
}

#[test]
fn evictions_are_counted_per_reason_and_bucket() {
    let buckets = tiny().evictions_by_bucket();
    assert_eq!(buckets.bucket_ms, 5 * 60_000);
    assert_eq!(buckets.reasons, ["interrupted", "underutilized"]);
    assert_eq!(buckets.counts, [vec![2], vec![1]]);
}

#[test]
fn bucket_width_follows_the_duration() {
    const HOUR: u64 = 3_600_000;
    assert_eq!(data::bucket_width_ms(6 * HOUR), 5 * 60_000);
    assert_eq!(data::bucket_width_ms(12 * HOUR), 10 * 60_000);
    assert_eq!(data::bucket_width_ms(24 * HOUR), 15 * 60_000);
    assert_eq!(data::bucket_width_ms(7 * 24 * HOUR), 2 * HOUR);
    assert_eq!(figures::bucket_text(10 * 60_000), "10 min");
    assert_eq!(figures::bucket_text(2 * HOUR), "2 h");
}

#[test]
fn eviction_reason_comes_from_the_message() {
    assert_eq!(
        data::eviction_reason("Evicted pod from node n-1: interrupted"),
        "interrupted"
    );
    assert_eq!(data::eviction_reason("something else"), "unspecified");
}

#[test]
fn malformed_values_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = TIMESERIES.replace("120.000,3,3", "12o.000,3,3");
    let variant = write_variant(dir.path(), "broken", &bad);
    let error = VariantSeries::read_dir(&variant).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, ChartError::Field { line: 4, .. }), "{text}");
    assert!(text.contains("timeseries.csv"), "{text}");
    assert!(text.contains("line 4"), "{text}");
    assert!(text.contains("\"time_s\""), "{text}");
    assert!(text.contains("12o.000"), "{text}");
}

#[test]
fn short_rows_and_missing_columns_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let short = TIMESERIES.replace("60.000,2,1,0.200000,", "60.000,2,");
    let variant = write_variant(dir.path(), "short", &short);
    let text = VariantSeries::read_dir(&variant).unwrap_err().to_string();
    assert!(
        text.contains("timeseries.csv") && text.contains("line 3"),
        "{text}"
    );

    let no_pending = TIMESERIES.replace(",pending_pods", ",waiting");
    let variant = write_variant(dir.path(), "renamed", &no_pending);
    let error = VariantSeries::read_dir(&variant).unwrap_err();
    assert!(
        matches!(&error, ChartError::MissingColumn { column, .. } if column == "pending_pods"),
        "{error}"
    );
}

#[test]
fn a_folder_without_nodes_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let variant = write_variant(dir.path(), "v", TIMESERIES);
    fs::remove_file(variant.join("nodeclaims.csv")).unwrap();
    let error = VariantSeries::read_dir(&variant).unwrap_err();
    assert!(matches!(error, ChartError::MissingNodes { .. }), "{error}");
    // A Cluster Autoscaler variant's nodes.csv has the same columns.
    fs::write(variant.join("nodes.csv"), NODECLAIMS).unwrap();
    assert_eq!(VariantSeries::read_dir(&variant).unwrap().nodes.len(), 3);
}

/// Text of every `<text>` element of an SVG, which must be well-formed.
fn svg_texts(svg: &str) -> Vec<String> {
    let document = roxmltree::Document::parse(svg).expect("well-formed SVG");
    document
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().trim().to_string())
        .collect()
}

/// Elements named `tag` whose attribute `key` is `value`.
fn count_elements(svg: &str, tag: &str, key: &str, value: &str) -> usize {
    count_matching(svg, tag, &[(key, value)])
}

/// Elements named `tag` with all these attribute values.
fn count_matching(svg: &str, tag: &str, attributes: &[(&str, &str)]) -> usize {
    let document = roxmltree::Document::parse(svg).expect("well-formed SVG");
    document
        .descendants()
        .filter(|n| n.has_tag_name(tag))
        .filter(|n| attributes.iter().all(|(k, v)| n.attribute(*k) == Some(*v)))
        .count()
}

/// Solid series lines: 2 px wide, opaque.
fn solid_lines(svg: &str) -> usize {
    count_matching(svg, "polyline", &[("stroke-width", "2"), ("opacity", "1")])
}

/// Dashes of lower-bound lines: 2 px wide, lighter.
fn dashes(svg: &str) -> usize {
    count_matching(
        svg,
        "polyline",
        &[("stroke-width", "2"), ("opacity", "0.75")],
    )
}

/// Width and height from a PNG's IHDR chunk, after checking the signature.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    let number = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (number(16), number(20))
}

#[test]
fn stacked_charts_have_a_layer_and_a_legend_entry_per_group() {
    let series = tiny();
    let (svg, png) = render(&NodesByCapacity(&series)).unwrap();
    let texts = svg_texts(&svg);
    for label in [
        "on-demand",
        "spot",
        "capacity type",
        "time (hours)",
        "nodes",
    ] {
        assert!(texts.iter().any(|t| t == label), "{label} in {texts:?}");
    }
    assert!(texts.iter().any(|t| t.contains("tiny / spot-first")));
    let fills: usize = ["#4E79A7", "#F28E2B"]
        .iter()
        .map(|colour| count_elements(&svg, "polygon", "fill", colour))
        .sum();
    assert_eq!(fills, 2, "one filled layer per capacity type");
    assert_eq!(png_size(&png), figures::PANEL_SIZE);

    let (svg, _) = render(&NodesByType(&series)).unwrap();
    let texts = svg_texts(&svg);
    assert!(texts.iter().any(|t| t == "m5.large"));
    assert!(texts.iter().any(|t| t == "c5.large"));
}

#[test]
fn efficiency_draws_one_line_per_resource() {
    let series = tiny();
    let (svg, png) = render(&Efficiency(&series)).unwrap();
    // The first sample has nothing allocatable, so each line is one run.
    assert_eq!(solid_lines(&svg), 2);
    let texts = svg_texts(&svg);
    assert!(
        texts.iter().any(|t| t.starts_with("CPU (overall 43%)")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.starts_with("memory")));
    assert_eq!(png_size(&png), figures::PANEL_SIZE);
}

#[test]
fn comparison_overlays_every_variant() {
    let dir = tempfile::tempdir().unwrap();
    let a = VariantSeries::read_dir(&write_variant(dir.path(), "alpha", TIMESERIES)).unwrap();
    let b = VariantSeries::read_dir(&write_variant(dir.path(), "beta", TIMESERIES)).unwrap();
    let variants = [a, b];
    let (svg, png) = render(&CostComparison(&variants)).unwrap();
    // Cumulative cost and cost rate per variant.
    assert_eq!(solid_lines(&svg), 4);
    assert_eq!(dashes(&svg), 0);
    let texts = svg_texts(&svg);
    assert!(texts.iter().any(|t| t == "alpha ($0.01)"), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("beta")));
    assert!(texts.iter().any(|t| t == "cumulative cost ($)"));
    assert!(texts.iter().any(|t| t == "cost rate ($/h)"));
    assert!(!texts.iter().any(|t| t.contains("lower bound")));
    assert_eq!(png_size(&png), figures::COMPARISON_SIZE);
}

#[test]
fn comparison_draws_the_lower_bound_when_present() {
    let dir = tempfile::tempdir().unwrap();
    let plain = VariantSeries::read_dir(&write_variant(dir.path(), "alpha", TIMESERIES)).unwrap();
    let bounded =
        VariantSeries::read_dir(&write_variant(dir.path(), "beta", &with_lower_bound())).unwrap();
    let variants = [plain, bounded];
    let (with_bound, _) = render(&CostComparison(&variants)).unwrap();
    let (without, _) = render(&CostComparison(&variants[..1])).unwrap();
    let texts = svg_texts(&with_bound);
    assert!(texts.iter().any(|t| t.contains("lower bound")), "{texts:?}");
    // Two solid lines per variant, and dashes for the bounded one only.
    assert_eq!(solid_lines(&with_bound), 4);
    assert!(dashes(&with_bound) > 2, "{}", dashes(&with_bound));
    assert_eq!(solid_lines(&without), 2);
    assert_eq!(dashes(&without), 0);
}

#[test]
fn same_input_gives_the_same_bytes() {
    let series = tiny();
    let first = render(&NodesByType(&series)).unwrap();
    let second = render(&NodesByType(&series)).unwrap();
    assert_eq!(first, second);

    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fs::create_dir_all(&a).unwrap();
    fs::create_dir_all(&b).unwrap();
    let names = write_variant_charts(&series, &a).unwrap();
    assert_eq!(write_variant_charts(&series, &b).unwrap(), names);
    for name in &names {
        assert_eq!(
            fs::read(a.join(name)).unwrap(),
            fs::read(b.join(name)).unwrap()
        );
    }
}

#[test]
fn redraw_writes_every_chart_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    write_variant(dir.path(), "on-demand", TIMESERIES);
    write_variant(dir.path(), "spot-first", TIMESERIES);
    fs::create_dir_all(dir.path().join(".spot-first.tmp-1")).unwrap();
    fs::create_dir_all(dir.path().join("notes")).unwrap();
    let written = redraw(dir.path()).unwrap();
    // Five charts per variant and the comparison, SVG and PNG each.
    assert_eq!(written.len(), 2 * 5 * 2 + 2);
    assert!(written.iter().all(|p| p.is_file()));
    assert_eq!(written[0], dir.path().join("on-demand/nodes-by-type.svg"));
    assert_eq!(written.last().unwrap(), &dir.path().join("cost.png"));
    for folder in [dir.path(), &dir.path().join("on-demand")] {
        let hidden: Vec<_> = fs::read_dir(folder)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.') && n != ".spot-first.tmp-1")
            .collect();
        assert!(hidden.is_empty(), "{hidden:?}");
    }
}

#[test]
fn redraw_needs_variant_folders() {
    let dir = tempfile::tempdir().unwrap();
    let error = redraw(dir.path()).unwrap_err();
    assert!(matches!(error, ChartError::NoVariants { .. }), "{error}");
    let error = redraw(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(error, ChartError::Io { .. }), "{error}");
}

#[test]
fn a_bad_variant_leaves_the_old_charts() {
    let dir = tempfile::tempdir().unwrap();
    write_variant(dir.path(), "a", TIMESERIES);
    redraw(dir.path()).unwrap();
    let before = fs::read(dir.path().join("cost.svg")).unwrap();
    write_variant(dir.path(), "b", &TIMESERIES.replace("0.300000", "cheap"));
    assert!(redraw(dir.path()).is_err());
    assert_eq!(fs::read(dir.path().join("cost.svg")).unwrap(), before);
    assert!(!dir.path().join("b/pending.svg").exists());
}

/// Decodes a PNG into its size and RGB pixels.
fn decode_png(png: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(png);
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    pixels.truncate(info.buffer_size());
    (info.width, info.height, pixels)
}

/// Twelve hours of samples with 11 pods pending for one minute at 4 h.
fn one_minute_spike() -> VariantSeries {
    let dir = tempfile::tempdir().unwrap();
    let header = TIMESERIES.lines().next().unwrap();
    let mut rows = vec![header.to_string()];
    for minute in 0..=720u32 {
        let pending = if minute == 240 { 11 } else { 0 };
        rows.push(format!(
            "{}.000,1,1,0.100000,1.000,2.000,1.000,4.000,{pending}",
            minute * 60
        ));
    }
    let variant = write_variant(dir.path(), "spike", &(rows.join("\n") + "\n"));
    fs::write(
        variant.join("summary.json"),
        SUMMARY.replace("240.0", "43200.0"),
    )
    .unwrap();
    VariantSeries::read_dir(&variant).unwrap()
}

/// A one-minute spike is a nearly vertical pair of segments; the bitmap
/// backend's wide-stroke polygons smeared such a line down to the bottom
/// edge of the image. The line must stay inside the plot: no pixel of its
/// colour in the bottom rows (tick labels and axis caption only).
#[test]
fn bitmap_lines_stay_inside_the_plot() {
    let series = one_minute_spike();
    let (_, png) = render(&figures::Pending(&series)).unwrap();
    let (width, height, pixels) = decode_png(&png);
    let red = [0xe1, 0x57, 0x59];
    let red_at = |x: u32, y: u32| {
        let at = usize::try_from((y * width + x) * 3).unwrap();
        pixels[at..at + 3] == red
    };
    let plotted = (0..height - 60).flat_map(|y| (0..width).map(move |x| (x, y)));
    assert!(
        plotted.into_iter().any(|(x, y)| red_at(x, y)),
        "the spike is drawn"
    );
    let below = (height - 40..height).flat_map(|y| (0..width).map(move |x| (x, y)));
    let smeared: Vec<(u32, u32)> = below.filter(|&(x, y)| red_at(x, y)).collect();
    assert!(smeared.is_empty(), "{:?}", &smeared[..smeared.len().min(5)]);
}
