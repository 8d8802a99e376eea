//! Tests for the `interruptions` and `spotPriceHistory` keys and for
//! loading the files they name (fixtures in `tests/fixtures/spot/`, reached
//! from the inline scenarios' directory `tests/fixtures/scenarios/`).

use karpsim_catalog::BundledCatalog;
use std::path::Path;

use super::*;
use crate::scenario::{RegionCatalog, Scenario};
use crate::sim::spot::{InterruptionCause, RowRef};

const REGIONS: &[(&str, &[&str])] = &[(
    "us-east-1",
    &[
        "us-east-1a",
        "us-east-1b",
        "us-east-1c",
        "us-east-1d",
        "us-east-1e",
        "us-east-1f",
    ],
)];

const INLINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios/inline.yaml"
);

/// A valid scenario (duration 10h, zones a–c) followed by `extra`.
fn with(extra: &str) -> String {
    format!(
        "duration: 10h\nzones: [us-east-1a, us-east-1b, us-east-1c]\nworkloads:\n  - manifests: \
         workloads/base.yaml\nvariants:\n  - name: k\n    karpenter: {{nodePools: \
         nodepools/default.yaml}}\n{extra}"
    )
}

/// Line of the first `extra` line in [`with`].
const FIRST: u64 = 8;

fn parse(extra: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(&with(extra), Path::new(INLINE), REGIONS)
}

fn error(extra: &str) -> String {
    let message = parse(extra).expect_err(extra).to_string();
    assert!(!message.contains('\n'), "{message}");
    message
        .strip_prefix(&format!("{INLINE}:"))
        .unwrap_or(&message)
        .to_string()
}

fn hours(h: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_hours(h)
}

fn known() -> KnownNames {
    KnownNames {
        region: "us-east-1".to_string(),
        region_zones: REGIONS[0].1.iter().map(|z| z.to_string()).collect(),
        instance_types: ["m5.large", "c6a.xlarge"].map(String::from).into(),
    }
}

fn load_spot(scenario: &Scenario) -> Result<SpotInputs, SpotInputError> {
    load(
        &scenario.spot,
        &scenario.source,
        scenario.duration,
        &scenario.zones,
        &known(),
    )
}

#[test]
fn no_spot_keys_means_nothing_configured() {
    assert_eq!(parse("").unwrap().spot, SpotConfig::default());
    let inputs = load_spot(&parse("").unwrap()).unwrap();
    assert_eq!(inputs, SpotInputs::default());
}

#[test]
fn full_block_parses() {
    let scenario = parse(
        "interruptions:\n  advisorHazard: true\n  rebalanceRecommendations: {leadTime: 5m}\n  \
         events:\n    - {at: 5h, instanceTypes: [c6a.xlarge], zones: [us-east-1a], fraction: 0.3, \
         unavailableFor: 30m}\n    - {at: 5h}\n  trace: ../spot/interruptions.csv\n\
         spotPriceHistory: {file: ../spot/ec2_describe_spot_price_history_m5.large_us-east-1.json, \
         start: '2021-01-20T00:00:00+00:00'}\n",
    )
    .unwrap();
    let dir = std::path::absolute(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/scenarios"
    ))
    .unwrap();
    let interruptions = scenario.spot.interruptions.clone().unwrap();
    assert!(interruptions.advisor_hazard);
    assert_eq!(
        interruptions.rebalance_lead,
        Some(SimDuration::from_mins(5))
    );
    assert_eq!(
        interruptions.storms,
        vec![
            Storm {
                at: hours(5),
                instance_types: NameFilter::Only(["c6a.xlarge".to_string()].into()),
                zones: NameFilter::Only(["us-east-1a".to_string()].into()),
                fraction: Fraction::parse("0.3").unwrap(),
                unavailable_for: SimDuration::from_mins(30),
                capacity_types: Storm::spot_only(),
            },
            Storm {
                at: hours(5),
                instance_types: NameFilter::All,
                zones: NameFilter::All,
                fraction: Fraction::ONE,
                unavailable_for: SimDuration::ZERO,
                capacity_types: Storm::spot_only(),
            },
        ]
    );
    assert_eq!(
        interruptions.storm_instance_types,
        vec![WrittenName {
            name: "c6a.xlarge".to_string(),
            field: "interruptions.events[0].instanceTypes[0]".to_string(),
            position: Position {
                line: 12,
                column: 32
            },
        }]
    );
    assert_eq!(
        interruptions.trace,
        Some(TimedFile {
            path: dir.join("../spot/interruptions.csv"),
            start: None
        })
    );
    let history = scenario.spot.price_history.clone().unwrap();
    assert_eq!(
        history.start,
        Some(Timestamp::parse("2021-01-20T00:00:00Z").unwrap())
    );

    let inputs = load_spot(&scenario).unwrap();
    assert_eq!(inputs.interruptions.storms.len(), 2);
    assert_eq!(inputs.interruptions.trace.len(), 3);
    assert_eq!(inputs.interruptions.trace[0].row, RowRef::Line(3));
    // Of the changes from 2021-01-20 (see the history tests), those within
    // the 10-hour run: the five carried-over prices at 0 and one more before
    // 10:00 that day (counted with a short script over the fixture).
    assert_eq!(inputs.price_changes.len(), 6);
    assert!(inputs.price_changes.iter().all(|c| c.at < hours(10)));
    assert_eq!(
        inputs
            .price_changes
            .iter()
            .filter(|c| c.at == SimTime::ZERO)
            .count(),
        5
    );
    assert!(inputs.warnings.is_empty());
}

#[test]
fn rebalance_recommendation_forms() {
    let lead = |value: &str| {
        let scenario = parse(&format!(
            "interruptions: {{rebalanceRecommendations: {value}}}\n"
        ))
        .unwrap();
        scenario.spot.interruptions.unwrap().rebalance_lead
    };
    assert_eq!(lead("true"), Some(DEFAULT_REBALANCE_LEAD));
    assert_eq!(lead("false"), None);
    assert_eq!(lead("{leadTime: 2m}"), Some(SimDuration::from_mins(2)));
}

#[test]
fn start_may_be_written_without_quotes() {
    let scenario =
        parse("spotPriceHistory: {file: ../spot/prices.csv, start: 2021-01-20T06:00:00Z}\n")
            .unwrap();
    let start = scenario.spot.price_history.unwrap().start;
    assert_eq!(
        start,
        Some(Timestamp::parse("2021-01-20T06:00:00+00:00").unwrap())
    );
}

/// Each bad input and its exact error, after the file name.
/// A storm's `capacityType`: one value or a list; anything else is refused
/// with the valid values.
#[test]
fn storm_capacity_type_parses() {
    let storms = |text: &str| {
        parse(&format!(
            "interruptions:\n  events:\n    - {{at: 5h, {text}}}\n"
        ))
        .unwrap()
        .spot
        .interruptions
        .unwrap()
        .storms
    };
    use crate::cloud::CapacityType::{OnDemand, Spot};
    assert_eq!(
        storms("capacityType: on-demand")[0].capacity_types,
        [OnDemand].into()
    );
    assert_eq!(
        storms("capacityType: [spot, on-demand]")[0].capacity_types,
        [OnDemand, Spot].into()
    );
    assert_eq!(
        storms("unavailableFor: 1m")[0].capacity_types,
        [Spot].into()
    );
    let message = error("interruptions:\n  events:\n    - {at: 5h, capacityType: reserved}\n");
    assert!(
        message.ends_with(
            "interruptions.events[0].capacityType: unknown value \"reserved\" (valid values: spot, on-demand)"
        ),
        "{message}"
    );
}

#[test]
fn each_bad_case_gives_its_exact_error() {
    let at = |line_offset: u64, column: u64| format!("{}:{column}", FIRST + line_offset);
    let cases: Vec<(&str, String)> = vec![
        (
            "interruptions: {rate: 1}\n",
            format!(
                "{}: interruptions: unknown key \"rate\" (valid keys: advisorHazard, \
                 rebalanceRecommendations, events, trace)",
                at(0, 17)
            ),
        ),
        (
            "interruptions: {advisorHazard: yes}\n",
            format!(
                "{}: interruptions.advisorHazard: expected true or false, found the string \"yes\"",
                at(0, 32)
            ),
        ),
        (
            "interruptions: {rebalanceRecommendations: 10m}\n",
            format!(
                "{}: interruptions.rebalanceRecommendations: expected true, false or \
                 {{leadTime: 10m}}, found the string \"10m\"",
                at(0, 43)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {at: 10h}\n",
            format!(
                "{}: interruptions.events[0].at: 10h is not before the end of the run (duration \
                 10h)",
                at(2, 12)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {at: 2h}\n    - {at: 1h}\n",
            format!(
                "{}: interruptions.events[1].at: 1h is earlier than interruptions.events[0].at \
                 (2h); list events in time order",
                at(3, 12)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {fraction: 0.5}\n",
            format!(
                "{}: interruptions.events[0]: missing required key \"at\"",
                at(2, 7)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {at: 1h, fraction: 1.5}\n",
            format!(
                "{}: interruptions.events[0].fraction: invalid fraction: expected a number \
                 greater than 0 and at most 1, found 1.5",
                at(2, 26)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {at: 1h, fraction: 0}\n",
            format!(
                "{}: interruptions.events[0].fraction: invalid fraction: expected a number \
                 greater than 0 and at most 1, found 0",
                at(2, 26)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {at: 1h, zones: [us-east-1a, us-east-1f]}\n",
            format!(
                "{}: interruptions.events[0].zones[1]: zone \"us-east-1f\" is not among the \
                 scenario's zones (us-east-1a, us-east-1b, us-east-1c)",
                at(2, 36)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {at: 1h, instanceTypes: [m5.large, m5.large]}\n",
            format!(
                "{}: interruptions.events[0].instanceTypes[1]: \"m5.large\" is listed twice",
                at(2, 42)
            ),
        ),
        (
            "interruptions:\n  events:\n    - {at: 1h, instanceTypes: []}\n",
            format!(
                "{}: interruptions.events[0].instanceTypes: needs at least one entry",
                at(2, 31)
            ),
        ),
        (
            "interruptions: {trace: ../spot/missing.csv}\n",
            format!(
                "{}: interruptions.trace: file \"../spot/missing.csv\" not found (looked for {:?})",
                at(0, 24),
                std::path::absolute(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../tests/fixtures/scenarios"
                ))
                .unwrap()
                .join("../spot/missing.csv")
                .display()
                .to_string()
            ),
        ),
        (
            "spotPriceHistory: {file: ../spot/prices.csv, start: 2021-01-20}\n",
            format!(
                "{}: spotPriceHistory.start: invalid timestamp \"2021-01-20\": expected \
                 YYYY-MM-DDThh:mm:ss followed by Z or an offset such as +00:00",
                at(0, 53)
            ),
        ),
        (
            "spotPriceHistory: {start: '2021-01-20T00:00:00Z'}\n",
            format!(
                "{}: spotPriceHistory: missing required key \"file\"",
                at(0, 19)
            ),
        ),
        (
            "spotPriceHistory: [../spot/prices.csv]\n",
            format!(
                "{}: spotPriceHistory: expected a file path or {{file: ..., start: ...}}, found \
                 a list",
                at(0, 19)
            ),
        ),
    ];
    let mismatches: Vec<String> = cases
        .iter()
        .filter(|(extra, expected)| error(extra) != *expected)
        .map(|(extra, expected)| {
            format!(
                "{extra:?}\n  got:      {}\n  expected: {expected}",
                error(extra)
            )
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

fn temp_scenario(dir: &tempfile::TempDir, files: &[(&str, &str)], extra: &str) -> Scenario {
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let fixtures = std::path::absolute(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/scenarios"
    ))
    .unwrap();
    let text = with(extra)
        .replace(
            "workloads/base.yaml",
            &fixtures.join("workloads/base.yaml").display().to_string(),
        )
        .replace(
            "nodepools/default.yaml",
            &fixtures
                .join("nodepools/default.yaml")
                .display()
                .to_string(),
        );
    Scenario::parse(&text, &dir.path().join("s.yaml"), REGIONS).unwrap()
}

#[test]
fn trace_rows_are_checked_against_the_catalog_and_zones() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "time,instance_type,zone\n1h,m5.large,us-east-1a\n2h,m5.large,us-east-1f\n",
            "t.csv:3: zone: zone \"us-east-1f\" is not among the scenario's zones (us-east-1a, \
             us-east-1b, us-east-1c)",
        ),
        (
            "time,instance_type,zone\n1h,m5.lrage,us-east-1a\n",
            "t.csv:2: instance_type: unknown instance type \"m5.lrage\" (not in the us-east-1 \
             catalog)",
        ),
        (
            "time,instance_type,zone\n-1h,m5.large,us-east-1a\n",
            "t.csv:2: time: \"-1h\" is negative; times count from the start of the run",
        ),
    ];
    for (text, expected) in cases {
        let scenario = temp_scenario(&dir, &[("t.csv", text)], "interruptions: {trace: t.csv}\n");
        let err = load_spot(&scenario).unwrap_err().to_string();
        let shown = err
            .rsplit_once("/t.csv")
            .map_or(err.clone(), |(_, rest)| format!("t.csv{rest}"));
        assert_eq!(shown, expected);
    }
    // Rows at or after the end of the run are dropped.
    let scenario = temp_scenario(
        &dir,
        &[(
            "t.csv",
            "time,instance_type,zone\n1h,m5.large,us-east-1a\n10h,m5.large,us-east-1a\n",
        )],
        "interruptions: {trace: t.csv}\n",
    );
    let trace = load_spot(&scenario).unwrap().interruptions.trace;
    assert_eq!(trace.len(), 1);
    assert_eq!(trace[0].at, hours(1));
}

#[test]
fn history_rows_are_checked_against_the_region() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = temp_scenario(
        &dir,
        &[(
            "p.csv",
            "time,instance_type,zone,price\n0,m5.large,us-east-1a,0.04\n0,x9.huge,us-east-1a,1\n\
             0,y9.huge,us-east-1b,1\n",
        )],
        "spotPriceHistory: p.csv\n",
    );
    let inputs = load_spot(&scenario).unwrap();
    assert_eq!(inputs.price_changes.len(), 1);
    assert_eq!(inputs.warnings.len(), 1);
    assert!(
        inputs.warnings[0].ends_with(
            "p.csv: 2 rows for 2 instance types not in the us-east-1 catalog ignored (x9.huge, \
             y9.huge)"
        ),
        "{}",
        inputs.warnings[0]
    );
    let scenario = temp_scenario(
        &dir,
        &[(
            "p.csv",
            "time,instance_type,zone,price\n0,m5.large,eu-west-1a,0.04\n",
        )],
        "spotPriceHistory: p.csv\n",
    );
    let err = load_spot(&scenario).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "p.csv:2: zone: zone \"eu-west-1a\" is not in region us-east-1 (its zones: \
             us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f)"
        ),
        "{err}"
    );
    let scenario = temp_scenario(
        &dir,
        &[(
            "p.csv",
            "time,instance_type,zone,price\n0,x9.huge,us-east-1a,0.04\n",
        )],
        "spotPriceHistory: p.csv\n",
    );
    let err = load_spot(&scenario).unwrap_err().to_string();
    assert!(
        err.ends_with("no Linux/UNIX price rows for instance types of the catalog"),
        "{err}"
    );
}

#[test]
fn storm_instance_types_must_be_in_the_catalog() {
    let scenario =
        parse("interruptions:\n  events:\n    - {at: 1h, instanceTypes: [c6a.xlarg]}\n").unwrap();
    let err = load_spot(&scenario).unwrap_err().to_string();
    assert!(
        err.ends_with(&format!(
            "inline.yaml:{}:32: interruptions.events[0].instanceTypes[0]: unknown instance type \
             \"c6a.xlarg\" (not in the us-east-1 catalog)",
            FIRST + 2
        )),
        "{err}"
    );
}

/// The loaded settings drive the model: the fixture trace's first row, at
/// 30 min, picks one of two running m5.large nodes in us-east-1a.
#[test]
fn loaded_trace_drives_the_model() {
    let scenario = parse("interruptions: {trace: ../spot/interruptions.csv}\n").unwrap();
    let model =
        crate::sim::spot::InterruptionModel::new(load_spot(&scenario).unwrap().interruptions);
    let trigger = model.triggers()[0];
    let running = [
        crate::sim::spot::SpotNode {
            name: "n1",
            instance_type: "m5.large",
            zone: "us-east-1a",
            band: None,
            launched: SimTime::ZERO,
        },
        crate::sim::spot::SpotNode {
            name: "n2",
            instance_type: "m5.large",
            zone: "us-east-1a",
            band: None,
            launched: SimTime::ZERO,
        },
    ];
    let mut rng = crate::sim::RngStreams::new(0).named("interruptions/victims");
    let firing = model.fire(trigger, &running, &mut rng);
    assert_eq!(firing.notices.len(), 1);
    assert_eq!(
        firing.notices[0].cause,
        InterruptionCause::Trace(RowRef::Line(3))
    );
    assert_eq!(
        firing.notices[0].timeline.notice,
        SimTime::ZERO + SimDuration::from_mins(30)
    );
}

#[test]
fn known_names_from_the_bundled_catalog() {
    let catalog = Catalog::load("us-east-1", &Default::default()).unwrap();
    let known = KnownNames::from_catalog(&catalog);
    assert_eq!(known.region, "us-east-1");
    assert!(known.instance_types.contains("c6a.xlarge"));
    let zones: Vec<&str> = REGIONS.zones("us-east-1").unwrap();
    assert_eq!(known.region_zones, zones);
}

/// A spot file that is not UTF-8 names the place of its first invalid
/// byte.
#[test]
fn spot_files_that_are_not_utf8_name_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.csv"),
        b"time,instance_type,zone,price\n0,m5.large,us-east-1a,0.0\xb4\n",
    )
    .unwrap();
    let scenario = temp_scenario(&dir, &[], "spotPriceHistory: p.csv\n");
    let err = load_spot(&scenario).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("p.csv:2:26: not UTF-8 text: invalid byte 0xb4 at byte offset 55"),
        "{err}"
    );
}
