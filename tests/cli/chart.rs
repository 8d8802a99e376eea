//! `karpsim chart`: redrawing the charts of a report written by `karpsim
//! run`, and the one-line errors for folders that are not reports.

use std::fs;

use karpsim_report::chart::{self, VariantSeries};

use crate::util::{karpsim, single_error_line, stderr, stdout};

use crate::util::{QUICKSTART_VARIANTS as VARIANTS, run_quickstart};
const CHARTS: [&str; 5] = [
    "nodes-by-type",
    "nodes-by-capacity",
    "efficiency",
    "pending",
    "disruptions",
];

/// Width and height from a PNG's IHDR chunk, after checking the signature.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let number = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (number(16), number(20))
}

/// The quickstart report redraws: every chart of every variant and the
/// comparison, listed on stdout, well-formed, and the same bytes twice.
#[test]
fn chart_redraws_a_quickstart_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    run_quickstart(&out);
    let output = karpsim(&["chart", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
    assert_eq!(
        listed.len(),
        VARIANTS.len() * CHARTS.len() * 2 + 2,
        "{listed:?}"
    );
    for variant in VARIANTS {
        for name in CHARTS {
            for ext in ["svg", "png"] {
                let path = out.join(variant).join(format!("{name}.{ext}"));
                assert!(listed.contains(&path.display().to_string()), "{path:?}");
                assert!(path.is_file(), "{path:?}");
            }
        }
        let png = fs::read(out.join(variant).join("nodes-by-capacity.png")).unwrap();
        assert_eq!(png_size(&png), (1000, 560));
    }
    let svg = fs::read_to_string(out.join("cost.svg")).unwrap();
    let document = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let texts: Vec<&str> = document
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for variant in VARIANTS {
        assert!(texts.iter().any(|t| t.starts_with(variant)), "{texts:?}");
    }
    let png = fs::read(out.join("cost.png")).unwrap();
    assert_eq!(png_size(&png), (1000, 860));

    let again = karpsim(&["chart", out.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(fs::read_to_string(out.join("cost.svg")).unwrap(), svg);
    assert_eq!(fs::read(out.join("cost.png")).unwrap(), png);
}

/// The data behind the capacity chart: spot plus on-demand nodes equal
/// the `nodes` column of `timeseries.csv` at every minute, and so do the
/// instance-type layers.
#[test]
fn stacks_add_up_to_the_nodes_column_of_a_real_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    run_quickstart(&out);
    let mut checked = 0;
    for variant in VARIANTS {
        let series = VariantSeries::read_dir(&out.join(variant)).unwrap();
        let by_capacity = series.nodes_by_capacity_type();
        let by_type = series.nodes_by_instance_type(2);
        assert!(series.samples.iter().any(|s| s.nodes > 0));
        for (index, sample) in series.samples.iter().enumerate() {
            assert_eq!(
                u64::from(by_capacity.total_at(index)),
                sample.nodes,
                "{variant} {index}"
            );
            assert_eq!(
                u64::from(by_type.total_at(index)),
                sample.nodes,
                "{variant} {index}"
            );
            checked += 1;
        }
    }
    // 12 h, one sample a minute and one at the end, per variant.
    assert_eq!(checked, 2 * 721);
    assert!(chart::variant_dirs(&out).unwrap().len() == 2);
}

#[test]
fn chart_of_a_missing_folder_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let line = single_error_line(&karpsim(&["chart", missing.to_str().unwrap()]));
    assert!(line.contains("nowhere"), "{line}");
}

#[test]
fn chart_of_a_folder_without_variants_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("not-a-variant")).unwrap();
    let line = single_error_line(&karpsim(&["chart", dir.path().to_str().unwrap()]));
    assert!(line.contains("no variant folders"), "{line}");
    assert!(!dir.path().join("cost.svg").exists(), "nothing written");
}

#[test]
fn chart_of_a_malformed_row_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    run_quickstart(&out);
    let path = out.join("spot-first/timeseries.csv");
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Line 3 of the file: the second data row; its fourth field is the rate.
    let mut fields: Vec<String> = lines[2].split(',').map(str::to_string).collect();
    fields[3] = "lots".to_string();
    lines[2] = fields.join(",");
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    // `run` drew the charts; a failed redraw must leave them as they were.
    let chart = out.join("cost.svg");
    let before = (
        fs::read(&chart).unwrap(),
        fs::metadata(&chart).unwrap().modified().unwrap(),
    );
    let line = single_error_line(&karpsim(&["chart", out.to_str().unwrap()]));
    assert!(line.contains("timeseries.csv"), "{line}");
    assert!(line.contains("line 3"), "{line}");
    assert!(line.contains("cost_usd_per_hour"), "{line}");
    let after = (
        fs::read(&chart).unwrap(),
        fs::metadata(&chart).unwrap().modified().unwrap(),
    );
    assert_eq!(before, after, "nothing rewritten");
}
