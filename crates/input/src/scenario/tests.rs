//! Tests for the scenario reader, against the fixtures in
//! `tests/fixtures/scenarios/` (cargo runs tests from the package root, so
//! the relative paths below resolve there).

use std::path::{Path, PathBuf};

use super::*;
use crate::sim::{LaunchLatency, SimDuration, SimTime};

const REGIONS: &[(&str, &[&str])] = &[
    (
        "us-east-1",
        &[
            "us-east-1a",
            "us-east-1b",
            "us-east-1c",
            "us-east-1d",
            "us-east-1e",
            "us-east-1f",
        ],
    ),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
];

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios"
);
/// The name inline test scenarios are parsed under; it lives in the fixture
/// directory so that its relative paths find the fixture manifests.
const INLINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios/inline.yaml"
);

fn fixture_dir() -> PathBuf {
    std::path::absolute(FIXTURES).expect("working directory")
}

fn load(name: &str) -> Result<Scenario, ScenarioError> {
    Scenario::load(&Path::new(FIXTURES).join(name), REGIONS)
}

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, Path::new(INLINE), REGIONS)
}

/// The one-line error for `text`, without the `file:` prefix.
fn error(text: &str) -> String {
    let message = match parse(text) {
        Ok(scenario) => panic!("expected an error for {text:?}, got {scenario:?}"),
        Err(err) => err.to_string(),
    };
    assert!(!message.contains('\n'), "not one line: {message:?}");
    message
        .strip_prefix(&format!("{INLINE}:"))
        .unwrap_or_else(|| panic!("{message:?} does not start with the file name"))
        .to_string()
}

fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}

fn at_hours(h: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_hours(h)
}

fn object(kind: ObjectKind, namespace: &str, name: &str) -> ObjectRef {
    ObjectRef {
        kind,
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

/// A valid scenario with `workloads` and `variants` as the last two keys.
const VALID_TAIL: &str = "\
workloads:
  - manifests: workloads/base.yaml
variants:
  - name: k
    karpenter: {nodePools: [nodepools/default.yaml]}
";

#[test]
fn realistic_scenario_parses_into_expected_struct() {
    let scenario = load("quickstart.yaml").unwrap();
    let dir = fixture_dir();
    let expected = Scenario {
        name: "quickstart".to_string(),
        source: dir.join("quickstart.yaml"),
        seed: 7,
        duration: SimDuration::from_days(2),
        region: "us-east-1".to_string(),
        zones: vec![
            "us-east-1a".to_string(),
            "us-east-1b".to_string(),
            "us-east-1c".to_string(),
        ],
        node_launch_latency: LaunchLatency::lognormal(secs(40), secs(75)).unwrap(),
        node_initialization: crate::sim::engine::DEFAULT_NODE_INITIALIZATION,
        workloads: vec![
            WorkloadStep {
                at: SimTime::ZERO,
                action: WorkloadAction::Apply {
                    manifests: vec![dir.join("workloads/base.yaml")],
                },
                position: Position {
                    line: 10,
                    column: 5,
                },
            },
            WorkloadStep {
                at: at_hours(2),
                action: WorkloadAction::Apply {
                    manifests: vec![
                        dir.join("workloads/burst.yaml"),
                        dir.join("workloads/batch.yaml"),
                    ],
                },
                position: Position {
                    line: 11,
                    column: 5,
                },
            },
            WorkloadStep {
                at: at_hours(6),
                action: WorkloadAction::Scale {
                    target: object(ObjectKind::Deployment, "default", "web"),
                    replicas: 40,
                },
                position: Position {
                    line: 14,
                    column: 25,
                },
            },
            WorkloadStep {
                at: at_hours(6),
                action: WorkloadAction::Scale {
                    target: object(ObjectKind::StatefulSet, "data", "cache"),
                    replicas: 0,
                },
                position: Position {
                    line: 16,
                    column: 26,
                },
            },
            WorkloadStep {
                at: at_hours(8),
                action: WorkloadAction::Delete {
                    target: object(ObjectKind::Deployment, "default", "burst"),
                },
                position: Position {
                    line: 18,
                    column: 26,
                },
            },
            WorkloadStep {
                at: at_hours(24),
                action: WorkloadAction::Delete {
                    target: object(ObjectKind::Job, "batch", "nightly-report"),
                },
                position: Position {
                    line: 20,
                    column: 19,
                },
            },
        ],
        variants: vec![
            Variant {
                name: "karpenter-default".to_string(),
                provisioner: Provisioner::Karpenter(KarpenterConfig {
                    node_pools: vec![dir.join("nodepools/default.yaml")],
                    settings: Default::default(),
                    startup_failures: Vec::new(),
                    node_pool_edits: Vec::new(),
                }),
            },
            Variant {
                name: "karpenter-spot".to_string(),
                provisioner: Provisioner::Karpenter(KarpenterConfig {
                    node_pools: vec![
                        dir.join("nodepools/default.yaml"),
                        dir.join("nodepools/spot.yaml"),
                    ],
                    settings: Default::default(),
                    startup_failures: Vec::new(),
                    node_pool_edits: Vec::new(),
                }),
            },
        ],
        pricing_snapshot: None,
        initial_state: None,
        capacity_reservations: Vec::new(),
        spot: SpotConfig::default(),
    };
    assert_eq!(scenario, expected);
    for step in &scenario.workloads {
        if let WorkloadAction::Apply { manifests } = &step.action {
            assert!(manifests.iter().all(|p| p.is_absolute() && p.is_file()));
        }
    }
}

#[test]
fn omitted_keys_take_their_defaults() {
    let scenario = load("minimal.yaml").unwrap();
    assert_eq!(scenario.name, "minimal", "the file name without extension");
    assert_eq!(scenario.seed, 0);
    // 90 min = 5 400 000 ms.
    assert_eq!(scenario.duration, SimDuration::from_millis(5_400_000));
    assert_eq!(scenario.region, DEFAULT_REGION);
    assert_eq!(
        scenario.zones,
        [
            "us-east-1a",
            "us-east-1b",
            "us-east-1c",
            "us-east-1d",
            "us-east-1e",
            "us-east-1f"
        ],
        "every zone of the region, in catalog order"
    );
    assert_eq!(
        scenario.node_launch_latency,
        LaunchLatency::lognormal(secs(35), secs(60)).unwrap()
    );
    assert_eq!(scenario.workloads.len(), 1);
    assert_eq!(scenario.workloads[0].at, SimTime::ZERO);
    // A single path is accepted where a list is.
    assert_eq!(
        scenario.variants[0].provisioner,
        Provisioner::Karpenter(KarpenterConfig {
            node_pools: vec![fixture_dir().join("nodepools/default.yaml")],
            settings: Default::default(),
            startup_failures: Vec::new(),
            node_pool_edits: Vec::new(),
        })
    );
}

#[test]
fn defaults_for_other_regions_and_actions() {
    let text = "duration: 1h\nregion: eu-west-1\n\
         nodeLaunchLatency: {fixed: 45s}\n\
         workloads:\n  - manifests: workloads/base.yaml\n\
         \x20 - at: 30m\n    delete: {pod: web-0}\n\
         \x20 - at: 30m\n    scale: {replicaset: web-6d4b, replicas: 2}\n\
         variants:\n  - name: k\n    karpenter: {nodePools: [nodepools/default.yaml]}\n";
    let scenario = parse(text).unwrap();
    assert_eq!(scenario.name, "inline");
    assert_eq!(scenario.zones, ["eu-west-1a", "eu-west-1b", "eu-west-1c"]);
    assert_eq!(scenario.node_launch_latency, LaunchLatency::fixed(secs(45)));
    let half_hour = SimTime::ZERO + SimDuration::from_mins(30);
    assert_eq!(
        scenario.workloads[1],
        WorkloadStep {
            at: half_hour,
            action: WorkloadAction::Delete {
                target: object(ObjectKind::Pod, DEFAULT_NAMESPACE, "web-0"),
            },
            position: Position {
                line: 7,
                column: 19
            },
        }
    );
    assert_eq!(
        scenario.workloads[2].action,
        WorkloadAction::Scale {
            target: object(ObjectKind::ReplicaSet, "default", "web-6d4b"),
            replicas: 2,
        }
    );
}

#[test]
fn paths_resolve_against_the_scenario_directory() {
    let scenario = load("nested/relative.yaml").unwrap();
    let nested = fixture_dir().join("nested");
    let WorkloadAction::Apply { manifests } = &scenario.workloads[0].action else {
        panic!("expected manifests, got {:?}", scenario.workloads[0]);
    };
    assert_eq!(manifests, &[nested.join("../workloads/base.yaml")]);
    assert!(manifests[0].is_absolute());
    assert_eq!(scenario.source, nested.join("relative.yaml"));

    // A path that exists relative to the working directory but not to the
    // scenario file is not found.
    let from_cwd = "src/lib.rs";
    assert!(Path::new(from_cwd).exists());
    let text = format!(
        "duration: 1h\nworkloads:\n  - manifests: {from_cwd}\n{}",
        &VALID_TAIL[VALID_TAIL.find("variants").unwrap()..]
    );
    let looked_for = fixture_dir().join(from_cwd);
    assert_eq!(
        error(&text),
        format!(
            "3:16: workloads[0].manifests: file \"{from_cwd}\" not found \
             (looked for {:?})",
            looked_for.display().to_string()
        )
    );

    // Absolute paths are used as they are.
    let absolute = fixture_dir().join("workloads/burst.yaml");
    let text = format!(
        "duration: 1h\nworkloads:\n  - manifests: {:?}\n{}",
        absolute.display().to_string(),
        &VALID_TAIL[VALID_TAIL.find("variants").unwrap()..]
    );
    let scenario = parse(&text).unwrap();
    assert_eq!(
        scenario.workloads[0].action,
        WorkloadAction::Apply {
            manifests: vec![absolute]
        }
    );
}

#[test]
fn missing_referenced_file_names_scenario_line_and_field() {
    let text = "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n\
                variants:\n  - name: k\n    karpenter:\n      nodePools: [nodepools/nope.yaml]\n";
    let looked_for = fixture_dir().join("nodepools/nope.yaml");
    assert_eq!(
        error(text),
        format!(
            "7:19: variants[0].karpenter.nodePools[0]: file \"nodepools/nope.yaml\" not found \
             (looked for {:?})",
            looked_for.display().to_string()
        )
    );
    let text = text.replace("[nodepools/nope.yaml]", "nodepools");
    assert_eq!(
        error(&text),
        "7:18: variants[0].karpenter.nodePools: \"nodepools\" is not a readable file \
         (it is a directory)"
    );
}

/// Each bad input and its exact error (after `file:`).
#[test]
fn each_bad_case_gives_its_exact_error() {
    let cases: &[(&str, &str)] = &[
        // Unknown keys, at each level, listing the valid keys.
        (
            "duration: 1h\nregoin: us-east-1\n",
            "2:1: unknown key \"regoin\" (valid keys: name, seed, duration, region, zones, \
             nodeLaunchLatency, workloads, variants, interruptions, spotPriceHistory, pricingSnapshot, initialState, capacityReservations)",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n  - at: 1m\n    scael: {}\n",
            "5:5: workloads[1]: unknown key \"scael\" (valid keys: at, manifests, scale, delete, nodePools, nodeCondition, generate, trace, format, start, end, timeScale, sample, excludeNamespaces)",
        ),
        (
            "duration: 1h\nworkloads:\n  - scale: {deployment: web, replica: 3}\n",
            "3:30: workloads[0].scale: unknown key \"replica\" (valid keys: deployment, \
             statefulset, replicaset, namespace, replicas)",
        ),
        (
            "duration: 1h\nnodeLaunchLatency: {median: 1s, p95: 2s}\n",
            "2:33: nodeLaunchLatency: unknown key \"p95\" (valid keys: median, p90, fixed, initialization)",
        ),
        // Keys reserved for later schema versions.
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n    sample: 0.5\n",
            "4:5: workloads[0].sample: \"manifests\" cannot be combined with \"sample\"",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n\
             variants:\n  - name: ca\n    clusterAutoscaler: {}\n",
            "6:24: variants[0].clusterAutoscaler: missing required key \"nodeGroups\"",
        ),
        // Wrong types.
        (
            "seed: \"7\"\nduration: 1h\n",
            "1:7: seed: expected a whole number, found the string \"7\"",
        ),
        (
            "duration: 1h\nworkloads: {manifests: workloads/base.yaml}\n",
            "2:12: workloads: expected a list of workload items, found a mapping",
        ),
        (
            "duration: 1h\nzones: us-east-1a\n",
            "2:8: zones: expected a list of zones, found the string \"us-east-1a\"",
        ),
        (
            "duration: [1h]\n",
            "1:11: duration: expected a duration such as 30s or 1h30m, found a list",
        ),
        (
            "name: true\nduration: 1h\n",
            "1:7: name: expected a string, found the boolean true",
        ),
        (
            "duration: 1h\n7: x\n",
            "2:1: keys must be strings, found an integer",
        ),
        // Durations.
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n  - at: 1m\n    \
             manifests: workloads/base.yaml\n  - at: 2x\n    manifests: workloads/base.yaml\n",
            "6:9: workloads[2].at: invalid duration \"2x\": unknown unit \"x\" \
             (expected ms, s, m, h or d)",
        ),
        (
            "duration: 10\n",
            "1:11: duration: invalid duration \"10\": missing unit after \"10\"",
        ),
        (
            "duration: 0s\n",
            "1:11: duration: the run must last longer than 0",
        ),
        ("seed: 1\n", "1:1: missing required key \"duration\""),
        (
            "duration: 1h\nnodeLaunchLatency: {median: 60s, p90: 30s}\n",
            "2:20: nodeLaunchLatency: launch latency p90 (30s) must be at least the median (1m0s)",
        ),
        (
            "duration: 1h\nnodeLaunchLatency: {median: 0s, p90: 30s}\n",
            "2:20: nodeLaunchLatency: launch latency median must be greater than zero, got 0s",
        ),
        (
            "duration: 1h\nnodeLaunchLatency: {median: 30s}\n",
            "2:20: nodeLaunchLatency: missing required key \"p90\"",
        ),
        (
            "duration: 1h\nnodeLaunchLatency: {fixed: 30s, median: 30s}\n",
            "2:33: nodeLaunchLatency: \"fixed\" cannot be combined with \"median\"",
        ),
        // Numbers.
        (
            "duration: 1h\nworkloads:\n  - scale: {deployment: web, replicas: -3}\n",
            "3:40: workloads[0].scale.replicas: must not be negative, found -3",
        ),
        (
            "duration: 1h\nworkloads:\n  - scale: {deployment: web, replicas: 3000000000}\n",
            "3:40: workloads[0].scale.replicas: 3000000000 replicas is over the limit of 100000 \
             replicas per workload (see Limits in scenarios/README.md)",
        ),
        (
            "duration: 1h\nworkloads:\n  - scale: {deployment: web, replicas: 2.5}\n",
            "3:40: workloads[0].scale.replicas: expected a whole number from 0 to 100000, \
             found 2.5",
        ),
        (
            "seed: 99999999999999999999999\nduration: 1h\n",
            "1:7: seed: expected a whole number from 0 to 18446744073709551615, \
             found 99999999999999999999999",
        ),
        (
            "seed: -1\nduration: 1h\n",
            "1:7: seed: must not be negative, found -1",
        ),
        (
            "seed: 1e400\nduration: 1h\n",
            "1:7: seed: expected a whole number from 0 to 18446744073709551615, found 1e400",
        ),
        (
            "seed: -.inf\nduration: 1h\n",
            "1:7: seed: must not be negative, found -.inf",
        ),
        (
            "duration: 1h\nworkloads:\n  - scale: {deployment: web}\n",
            "3:12: workloads[0].scale: missing required key \"replicas\"",
        ),
        // One action per item.
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n    \
             scale: {deployment: web, replicas: 3}\n",
            "4:5: workloads[0]: needs exactly one of: manifests, scale, delete, nodePools, nodeCondition, generate, trace; \
             found manifests and scale",
        ),
        (
            "duration: 1h\nworkloads:\n  - at: 5m\n",
            "3:5: workloads[0]: needs exactly one of: manifests, scale, delete, nodePools, nodeCondition, generate, trace; found none",
        ),
        (
            "duration: 1h\nworkloads:\n  - delete: {deployment: web, job: web}\n",
            "3:31: workloads[0].delete: needs exactly one of: deployment, statefulset, \
             replicaset, daemonset, job, pod; found deployment and job",
        ),
        (
            "duration: 1h\nworkloads:\n  - scale: {daemonset: log-shipper, replicas: 1}\n",
            "3:13: workloads[0].scale: unknown key \"daemonset\" (valid keys: deployment, \
             statefulset, replicaset, namespace, replicas)",
        ),
        (
            "duration: 1h\nworkloads:\n  - delete: {deployment: Web}\n",
            "3:26: workloads[0].delete.deployment: invalid name \"Web\": a Kubernetes name is \
             lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
        ),
        (
            "duration: 1h\nworkloads:\n  - delete: {job: x, namespace: kube_system}\n",
            "3:33: workloads[0].delete.namespace: invalid name \"kube_system\": a namespace is \
             lowercase letters, digits and '-', starting and ending with a letter or digit",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: []\n",
            "3:16: workloads[0].manifests: needs at least one entry",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: \"\"\n",
            "3:16: workloads[0].manifests: must not be empty",
        ),
        (
            "duration: 1h\nworkloads: []\n",
            "2:12: workloads: needs at least one entry",
        ),
        // Timing.
        (
            "duration: 24h\nworkloads:\n  - manifests: workloads/base.yaml\n  - at: 25h\n    \
             delete: {deployment: web}\n",
            "4:9: workloads[1].at: 25h is not before the end of the run (duration 24h)",
        ),
        (
            "duration: \"24h\"\nworkloads:\n  - at: '1d'\n    delete: {deployment: web}\n",
            "3:9: workloads[0].at: 1d is not before the end of the run (duration 24h)",
        ),
        (
            "duration: 24h\nworkloads:\n  - at: 6h\n    manifests: workloads/base.yaml\n  \
             - at: 2h\n    delete: {deployment: web}\n",
            "5:9: workloads[1].at: 2h is earlier than workloads[0].at (6h); \
             list workloads in time order",
        ),
        (
            "duration: 24h\nworkloads:\n  - at: 6h\n    manifests: workloads/base.yaml\n  \
             - delete: {deployment: web}\n",
            "5:5: workloads[1].at: 0 (no at given) is earlier than workloads[0].at (6h); \
             list workloads in time order",
        ),
        // Variants.
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\nvariants: []\n",
            "4:11: variants: needs at least one entry",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\nvariants:\n  \
             - name: a\n    karpenter: {nodePools: [nodepools/default.yaml]}\n  \
             - name: b\n    karpenter: {nodePools: [nodepools/spot.yaml]}\n  \
             - name: a\n    karpenter: {nodePools: [nodepools/spot.yaml]}\n",
            "9:11: variants[2].name: variant name \"a\" is already used by variants[0] (line 5)",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\nvariants:\n  \
             - name: a\n",
            "5:5: variants[0]: needs exactly one of: karpenter, clusterAutoscaler; found none",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\nvariants:\n  \
             - karpenter: {nodePools: [nodepools/default.yaml]}\n",
            "5:5: variants[0]: missing required key \"name\"",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\nvariants:\n  \
             - name: a b\n    karpenter: {nodePools: [nodepools/default.yaml]}\n",
            "5:11: variants[0].name: invalid name \"a b\": only letters, digits, '-', '_' and \
             '.' are allowed",
        ),
        (
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\nvariants:\n  \
             - name: a\n    karpenter: {}\n",
            "6:16: variants[0].karpenter: missing required key \"nodePools\"",
        ),
        // Environment.
        (
            "duration: 1h\nregion: us-east-9\n",
            "2:9: region: unknown region \"us-east-9\" (known regions: us-east-1, eu-west-1)",
        ),
        (
            "duration: 1h\nregion: eu-west-1\nzones: [eu-west-1a, us-east-1a]\n",
            "3:21: zones[1]: zone \"us-east-1a\" is not in region eu-west-1 \
             (its zones: eu-west-1a, eu-west-1b, eu-west-1c)",
        ),
        (
            "duration: 1h\nzones: [us-east-1a, us-east-1a]\n",
            "2:21: zones[1]: zone \"us-east-1a\" is listed twice",
        ),
        (
            "duration: 1h\nzones: []\n",
            "2:8: zones: needs at least one entry",
        ),
        // Names and duplicate keys.
        (
            "name: ../escape\nduration: 1h\n",
            "1:7: name: invalid name \"../escape\": must start with a letter or digit",
        ),
        (
            "seed: 1\nseed: 2\n",
            "2:1: duplicate key \"seed\" (first given at 1:1)",
        ),
    ];
    let mismatches: Vec<String> = cases
        .iter()
        .filter_map(|(text, expected)| {
            let got = error(text);
            (got != *expected)
                .then(|| format!("input {text:?}\n  got:      {got}\n  expected: {expected}"))
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // The valid tail really is valid, so the cases above fail for their
    // stated reason only.
    parse(&format!("duration: 1h\n{VALID_TAIL}")).unwrap();
}

#[test]
fn errors_expose_their_problem_and_location() {
    let err = parse("duration: 1h\nworkloads:\n  - scale: {deployment: web, replicas: -3}\n")
        .unwrap_err();
    assert_eq!(
        err.problem(),
        Some(&Problem::Negative {
            text: "-3".to_string()
        })
    );
    let ScenarioError::Invalid {
        position, field, ..
    } = &err
    else {
        panic!("expected a schema error, got {err:?}");
    };
    assert_eq!(
        *position,
        Position {
            line: 3,
            column: 40
        }
    );
    assert_eq!(field, "workloads[0].scale.replicas");
}

#[test]
fn default_name_must_be_usable() {
    let err = Scenario::parse(
        &format!("duration: 1h\n{VALID_TAIL}"),
        Path::new("tests/fixtures/scenarios/my scenario.yaml"),
        REGIONS,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tests/fixtures/scenarios/my scenario.yaml:1:1: name: no name given and the file name \
         \"my scenario\" is not a valid name (only letters, digits, '-', '_' and '.' are \
         allowed); add a name key"
    );
}

#[test]
fn default_region_must_be_in_the_catalog() {
    let catalog: &[(&str, &[&str])] = &[("eu-west-1", &["eu-west-1a"])];
    let err = Scenario::parse(
        &format!("duration: 1h\n{VALID_TAIL}"),
        Path::new(INLINE),
        catalog,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{INLINE}:1:1: region: unknown region \"us-east-1\" (known regions: eu-west-1)")
    );
}

#[test]
fn missing_scenario_file_is_a_read_error() {
    let err = load("no-such-scenario.yaml").unwrap_err();
    assert!(matches!(err, ScenarioError::Read { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!(
            "{FIXTURES}/no-such-scenario.yaml: cannot read scenario file: "
        )),
        "{err}"
    );
}

/// Hostile or broken inputs give a one-line error naming the file, never a
/// panic.
#[test]
fn adversarial_inputs_give_one_line_errors() {
    let deep_list = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let long_key = format!("{}: 1\n", "k".repeat(100_000));
    let laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
    let cases: Vec<(&str, String)> = vec![
        ("empty file", String::new()),
        ("only comments", "# nothing here\n".to_string()),
        ("document markers only", "---\n...\n".to_string()),
        ("list at top level", "- duration: 1h\n".to_string()),
        ("scalar at top level", "hello\n".to_string()),
        ("null at top level", "~\n".to_string()),
        (
            "tab indentation",
            "duration: 1h\nworkloads:\n\t- manifests: x\n".to_string(),
        ),
        (
            "tab in a flow mapping",
            "nodeLaunchLatency: {\tmedian: 1s}\n".to_string(),
        ),
        (
            "two documents",
            format!("duration: 1h\n{VALID_TAIL}---\nduration: 2h\n"),
        ),
        ("unclosed flow list", "zones: [us-east-1a\n".to_string()),
        ("huge seed", "seed: 1e400\nduration: 1h\n".to_string()),
        ("infinite seed", "seed: .inf\nduration: 1h\n".to_string()),
        (
            "huge duration",
            "duration: 99999999999999999999999h\n".to_string(),
        ),
        (
            "huge at",
            format!("duration: 1h\nworkloads:\n  - at: {}s\n", "9".repeat(400)),
        ),
        ("deeply nested list", deep_list),
        ("very long key", long_key),
        ("alias bomb", laughs.to_string()),
        ("unknown alias", "duration: *nowhere\n".to_string()),
        (
            "control characters in a key",
            "\"a\\nb\\u0007\": 1\n".to_string(),
        ),
        (
            "null values",
            "duration:\nworkloads:\nvariants:\n".to_string(),
        ),
        ("complex key", "? [a, b]\n: c\n".to_string()),
        ("binary tag", "duration: !!binary aGVsbG8=\n".to_string()),
    ];
    for (what, text) in cases {
        match parse(&text) {
            Ok(scenario) => panic!("{what}: expected an error, got {scenario:?}"),
            Err(err) => {
                let message = err.to_string();
                assert!(!message.contains('\n'), "{what}: not one line: {message:?}");
                assert!(
                    message.starts_with(&format!("{INLINE}:")),
                    "{what}: {message:?}"
                );
            }
        }
    }
    assert_eq!(
        error(""),
        "1:1: the file is empty; a scenario needs at least duration, workloads and variants"
    );
    assert_eq!(
        error("- duration: 1h\n"),
        "1:1: expected a mapping, found a list"
    );
}

/// A file that is not UTF-8 names the line, column and byte offset of its
/// first invalid byte.
#[test]
fn invalid_utf8_file_names_the_first_invalid_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("binary.yaml");
    // Line 2, after "é: " (3 characters, 4 bytes): byte offset 8 + 4.
    std::fs::write(&path, b"name: x\n\xc3\xa9: \xff\xfe\n").unwrap();
    let err = Scenario::load(&path, REGIONS).unwrap_err();
    assert!(
        matches!(
            err,
            ScenarioError::Yaml {
                position: Position { line: 2, column: 4 },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .ends_with(":2:4: not UTF-8 text: invalid byte 0xff at byte offset 12"),
        "{err}"
    );
}

/// A `nodePools` workload item replaces the NodePools from its time on; its
/// files are resolved and checked like a variant's.
#[test]
fn nodepools_item_names_its_files() {
    let text = "duration: 4h\nworkloads:\n  - manifests: workloads/base.yaml\n\
         \x20 - at: 3h\n    nodePools: [nodepools/spot.yaml]\n\
         variants:\n  - name: k\n    karpenter: {nodePools: [nodepools/default.yaml]}\n";
    let scenario = parse(text).unwrap();
    assert_eq!(
        scenario.workloads[1],
        WorkloadStep {
            at: at_hours(3),
            action: WorkloadAction::NodePools {
                node_pools: vec![fixture_dir().join("nodepools/spot.yaml")],
            },
            position: Position { line: 4, column: 5 },
        }
    );
    let missing = text.replace("[nodepools/spot.yaml]", "[nodepools/nope.yaml]");
    let looked_for = fixture_dir().join("nodepools/nope.yaml");
    assert_eq!(
        error(&missing),
        format!(
            "5:17: workloads[1].nodePools[0]: file \"nodepools/nope.yaml\" not found \
             (looked for {:?})",
            looked_for.display().to_string()
        )
    );
    let empty = text.replace("[nodepools/spot.yaml]", "[]");
    assert!(
        error(&empty).starts_with("5:16: workloads[1].nodePools: "),
        "{}",
        error(&empty)
    );
}

/// The shipped consolidation example reads and prepares: two variants, the
/// same NodePool with and without consolidation.
#[test]
fn consolidation_day_prepares() {
    let scenario = Scenario::load(
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/consolidation-day.yaml"
        )),
        &BundledRegions,
    )
    .unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    assert_eq!(prepared.runs.len(), 2);
    let after: Vec<Option<std::time::Duration>> = prepared
        .runs
        .iter()
        .map(|r| r.nodepools[0].pool.disruption.consolidate_after)
        .collect();
    assert_eq!(after, [Some(std::time::Duration::from_secs(30)), None]);
}

/// A `nodePools` item becomes an engine step carrying the loaded pools.
#[test]
fn nodepools_item_prepares_a_pool_change() {
    let text = "duration: 4h\nworkloads:\n  - manifests: workloads/base.yaml\n\
         \x20 - at: 3h\n    nodePools: [nodepools/spot.yaml]\n\
         variants:\n  - name: k\n    karpenter: {nodePools: [nodepools/default.yaml]}\n";
    let scenario = parse(text).unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    let step = &prepared.runs[0].steps[1];
    assert_eq!(step.at, at_hours(3));
    match &step.action {
        crate::sim::engine::StepAction::NodePools { nodepools, .. } => {
            assert_eq!(nodepools.len(), 1);
        }
        other => panic!("expected a NodePools step, got {other:?}"),
    }
}

/// Every bundled scenario passes the checks made when its files are read
/// (limits, the objects of scale and delete steps).
#[test]
fn bundled_scenarios_prepare() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios")).unwrap()
    {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let scenario = Scenario::load(&path, &BundledRegions)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            prepare(&scenario, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            names.push(scenario.name);
        }
    }
    names.sort();
    assert_eq!(names.len(), 11, "{names:?}");
}

/// `variants:` is required unless the caller brings the variants
/// (`compare --nodepools`); then a file without it reads with none.
#[test]
fn variants_are_optional_only_when_the_caller_brings_them() {
    let text = "duration: 90m\nworkloads:\n  - manifests: workloads/base.yaml\n";
    let message = error(text);
    assert!(message.contains("variants"), "{message}");
    let scenario = read::read_scenario(text, Path::new(INLINE), REGIONS, false).expect("reads");
    assert!(scenario.variants.is_empty());
    assert_eq!(scenario.duration, SimDuration::from_secs(90 * 60));
}
