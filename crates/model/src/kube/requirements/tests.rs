//! Behaviour checks ported from core pkg/scheduling/requirement_test.go and
//! requirements_test.go, plus karpsim-specific fast paths.

mod tables;
mod tables_min_values;

use super::*;
use crate::kube::labels::{
    LABEL_ARCH, LABEL_BETA_ARCH, LABEL_BETA_INSTANCE_TYPE, LABEL_BETA_REGION, LABEL_BETA_ZONE,
    LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_NODEPOOL, LABEL_OS, LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE, NO_UNDEFINED_LABELS, core_well_known_labels, well_known_labels,
};

/// Fixture names in upstream table order.
const NAMES: [&str; 14] = [
    "exists",
    "doesNotExist",
    "inA",
    "inB",
    "inAB",
    "notInA",
    "in1",
    "in9",
    "in19",
    "notIn12",
    "greaterThan1",
    "greaterThan9",
    "lessThan1",
    "lessThan9",
];

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

fn req(key: &str, operator: Operator, values: &[&str]) -> Requirement {
    Requirement::new(key, operator, &strings(values)).expect("valid requirement")
}

fn flex(key: &str, operator: Operator, min: u32, values: &[&str]) -> Requirement {
    Requirement::with_min_values(key, operator, &strings(values), Some(min)).expect("valid")
}

/// Upstream fixtures on `key`; `name*` carries `minValues` as upstream
/// (`inAB*`, `in19*`, `notIn12*` have 2, the others 1).
fn fixture(key: &str, name: &str) -> Requirement {
    use Operator::*;
    let (base, flexible) = match name.strip_suffix('*') {
        Some(base) => (base, true),
        None => (name, false),
    };
    let (operator, values): (Operator, &[&str]) = match base {
        "exists" => (Exists, &[]),
        "doesNotExist" => (DoesNotExist, &[]),
        "inA" => (In, &["A"]),
        "inB" => (In, &["B"]),
        "inAB" => (In, &["A", "B"]),
        "notInA" => (NotIn, &["A"]),
        "in1" => (In, &["1"]),
        "in9" => (In, &["9"]),
        "in19" => (In, &["1", "9"]),
        "notIn12" => (NotIn, &["1", "2"]),
        "greaterThan1" => (Gt, &["1"]),
        "greaterThan9" => (Gt, &["9"]),
        "lessThan1" => (Lt, &["1"]),
        "lessThan9" => (Lt, &["9"]),
        other => panic!("unknown fixture {other}"),
    };
    if flexible {
        let min = if matches!(base, "inAB" | "in19" | "notIn12") {
            2
        } else {
            1
        };
        flex(key, operator, min, values)
    } else {
        req(key, operator, values)
    }
}

/// A fixture on the key `key` (used by the transcribed tables).
fn f(name: &str) -> Requirement {
    fixture("key", name)
}

/// A requirement given field by field, as upstream tables write literals.
fn raw(
    complement: bool,
    values: &[&str],
    gte: Option<i64>,
    lte: Option<i64>,
    min_values: Option<u32>,
) -> Requirement {
    Requirement::from_raw("key", complement, values, gte, lte, min_values)
}

fn check_table(rows: Vec<tables::Row>) {
    assert!(rows.len() >= 196);
    for (existing, incoming, expected) in rows {
        let got = f(existing).intersection(&f(incoming));
        assert_eq!(got, expected, "{existing} ∩ {incoming}");
        // The allocation-free test must agree with the built intersection.
        assert_eq!(
            f(existing).has_intersection(&f(incoming)),
            !got.is_empty(),
            "has_intersection {existing} ∩ {incoming}"
        );
        for listed in [&[][..], &["A"], &["B", "9"], &["1", "A"], &["2"]] {
            let built =
                !got.is_complement() && !got.values().iter().any(|v| listed.contains(&v.as_str()));
            assert_eq!(
                f(existing).intersection_lists_none(&f(incoming), |v| listed.contains(&v)),
                built,
                "intersection_lists_none {existing} ∩ {incoming} of {listed:?}"
            );
        }
    }
}

/// core requirement_test.go "should intersect two requirements without minValues".
#[test]
fn intersection_table_without_min_values() {
    check_table(tables::plain());
}

/// core requirement_test.go "should intersect requirement with minValues with a requirement without".
#[test]
fn intersection_table_min_values_with_plain() {
    check_table(tables::flexible_with_plain());
}

/// core requirement_test.go "should intersect two requirements with minValues" (minValues = max).
#[test]
fn intersection_table_with_min_values() {
    check_table(tables_min_values::flexible());
}

/// core requirement_test.go "Has: should have the right values" (values A, B, 1, 2, 9).
#[test]
fn has_table() {
    let expected = [
        ("exists", "YYYYY"),
        ("doesNotExist", "NNNNN"),
        ("inA", "YNNNN"),
        ("inB", "NYNNN"),
        ("inAB", "YYNNN"),
        ("notInA", "NYYYY"),
        ("in1", "NNYNN"),
        ("in9", "NNNNY"),
        ("in19", "NNYNY"),
        ("notIn12", "YYNNY"),
        ("greaterThan1", "NNNYY"),
        ("greaterThan9", "NNNNN"),
        ("lessThan1", "NNNNN"),
        ("lessThan9", "NNYYN"),
    ];
    for (name, row) in expected {
        for (value, cell) in ["A", "B", "1", "2", "9"].iter().zip(row.chars()) {
            assert_eq!(f(name).has(value), cell == 'Y', "{name} has {value}");
        }
    }
}

/// core requirement_test.go "Operator" and "Len" tables.
#[test]
fn operator_and_len() {
    use Operator::*;
    let max = i64::MAX as usize;
    let expected = [
        (Exists, max),
        (DoesNotExist, 0),
        (In, 1),
        (In, 1),
        (In, 2),
        (NotIn, max - 1),
        (In, 1),
        (In, 1),
        (In, 2),
        (NotIn, max - 2),
        (Exists, max),
        (Exists, max),
        (Exists, max),
        (Exists, max),
    ];
    for (name, (operator, len)) in NAMES.iter().zip(expected) {
        assert_eq!(f(name).operator(), operator, "{name}");
        assert_eq!(f(name).len(), len, "{name}");
    }
}

/// core requirement_test.go "Any: should return any" (karpsim picks deterministically).
#[test]
fn any_returns_an_allowed_value() {
    assert!(f("exists").any().is_some());
    assert_eq!(f("doesNotExist").any(), None);
    assert_eq!(f("inA").any().as_deref(), Some("A"));
    assert_eq!(f("inAB").any().as_deref(), Some("A"));
    assert_eq!(f("in19").any().as_deref(), Some("1"));
    assert_eq!(f("lessThan1").any().as_deref(), Some("0"));
    for name in NAMES {
        if let Some(value) = f(name).any() {
            assert!(f(name).has(&value), "{name} any {value}");
        }
    }
    // Excluded integers are skipped; bounds are honoured.
    let not_in_small = req("key", Operator::NotIn, &["0", "1"]);
    assert_eq!(not_in_small.any().as_deref(), Some("2"));
    let gte5 = req("key", Operator::Gte, &["5"]);
    assert_eq!(gte5.any().as_deref(), Some("5"));
    let lt0 = req("key", Operator::Lt, &["0"]);
    assert_eq!(lt0.any().as_deref(), Some("-1"));
}

/// core requirement_test.go "String: should print the right string".
#[test]
fn display_matches_upstream_string() {
    let expected = [
        "key Exists",
        "key DoesNotExist",
        "key In [A]",
        "key In [B]",
        "key In [A B]",
        "key NotIn [A]",
        "key In [1]",
        "key In [9]",
        "key In [1 9]",
        "key NotIn [1 2]",
        "key Exists >=2",
        "key Exists >=10",
        "key Exists <=0",
        "key Exists <=8",
    ];
    for (name, text) in NAMES.iter().zip(expected) {
        assert_eq!(f(name).to_string(), text);
    }
    assert_eq!(
        f("greaterThan1").intersection(&f("lessThan9")).to_string(),
        "key Exists >=2 <=8"
    );
    assert_eq!(
        f("greaterThan9").intersection(&f("lessThan1")).to_string(),
        "key DoesNotExist"
    );
    assert_eq!(f("inAB*").to_string(), "key In [A B] minValues 2");
    let many = req("key", Operator::In, &["a", "b", "c", "d", "e", "f", "g"]);
    assert_eq!(many.to_string(), "key In [a b c d e and 2 others]");
}

/// core requirement_test.go "NodeSelectorRequirements Conversion" (bounds print as Gte/Lte).
#[test]
fn to_specs_matches_upstream_conversion() {
    use Operator::*;
    let expected: [(Operator, &[&str]); 14] = [
        (Exists, &[]),
        (DoesNotExist, &[]),
        (In, &["A"]),
        (In, &["B"]),
        (In, &["A", "B"]),
        (NotIn, &["A"]),
        (In, &["1"]),
        (In, &["9"]),
        (In, &["1", "9"]),
        (NotIn, &["1", "2"]),
        (Gte, &["2"]),
        (Gte, &["10"]),
        (Lte, &["0"]),
        (Lte, &["8"]),
    ];
    for (name, (operator, values)) in NAMES.iter().zip(expected) {
        for (flexible, min_values) in [(false, None), (true, Some(1))] {
            let fixture_name = if flexible {
                format!("{name}*")
            } else {
                name.to_string()
            };
            let specs = f(&fixture_name).to_specs();
            let min_values = min_values.map(|m| {
                if matches!(*name, "inAB" | "in19" | "notIn12") {
                    2
                } else {
                    m
                }
            });
            assert_eq!(
                specs,
                vec![RequirementSpec {
                    key: "key".into(),
                    operator,
                    values: strings(values),
                    min_values,
                }],
                "{fixture_name}"
            );
        }
    }
}

/// core requirement_test.go "Gte and Lte Operators" (inclusive bounds, equivalence with Gt/Lt,
/// collapsing of redundant bounds, 0 boundaries).
#[test]
fn gte_and_lte_bounds() {
    let gte2 = req("key", Operator::Gte, &["2"]);
    let lte8 = req("key", Operator::Lte, &["8"]);
    assert!(gte2.has("2") && gte2.has("100") && !gte2.has("1") && !gte2.has("0"));
    assert!(lte8.has("8") && lte8.has("0") && !lte8.has("9"));
    let both = gte2.intersection(&lte8);
    assert!(both.has("2") && both.has("5") && both.has("8") && !both.has("1") && !both.has("9"));
    // Gte 2 ≡ Gt 1 and Lte 8 ≡ Lt 9 (same canonical form).
    assert_eq!(gte2, req("key", Operator::Gt, &["1"]));
    assert_eq!(lte8, req("key", Operator::Lt, &["9"]));
    let cases: [(Operator, &str, Operator, &str, Operator, &str); 4] = [
        (Operator::Gt, "4", Operator::Gte, "5", Operator::Gte, "5"),
        (Operator::Gt, "5", Operator::Gte, "5", Operator::Gte, "6"),
        (Operator::Lt, "5", Operator::Lte, "5", Operator::Lte, "4"),
        (Operator::Lt, "9", Operator::Lte, "5", Operator::Lte, "5"),
    ];
    for (op_a, a, op_b, b, op, value) in cases {
        let specs = req("key", op_a, &[a])
            .intersection(&req("key", op_b, &[b]))
            .to_specs();
        assert_eq!(specs.len(), 1);
        assert_eq!(
            (specs[0].operator, specs[0].values.clone()),
            (op, strings(&[value]))
        );
    }
    let gt3_gte6 =
        req("key", Operator::Gt, &["3"]).intersection(&req("key", Operator::Gte, &["6"]));
    assert!(gt3_gte6.has("6") && !gt3_gte6.has("5"));
    let gte0 = req("key", Operator::Gte, &["0"]);
    assert!(gte0.has("0") && !gte0.has("-1"));
    let lte0 = req("key", Operator::Lte, &["0"]);
    assert!(lte0.has("0") && !lte0.has("1"));
}

/// core requirement_test.go "should return DoesNotExist for Gt MaxInt".
#[test]
fn gt_max_int_is_does_not_exist() {
    let gt_max = req("key", Operator::Gt, &[&i64::MAX.to_string()]);
    assert_eq!(gt_max.operator(), Operator::DoesNotExist);
    assert_eq!(gt_max.len(), 0);
    // Upstream rebuilds it without minValues.
    let flexible = flex("key", Operator::Gt, 3, &[&i64::MAX.to_string()]);
    assert_eq!(flexible.min_values(), None);
}

/// NodePool CRD rules: In needs a value; bounds need one non-negative integer;
/// minValues ≤ number of In values and within 1..=50; other operators accept minValues.
#[test]
fn construction_validates_shape() {
    let err = |op, values: &[&str], min| {
        Requirement::with_min_values("key", op, &strings(values), min).is_err()
    };
    assert!(err(Operator::In, &[], None));
    assert!(err(Operator::Gt, &[], None));
    assert!(err(Operator::Gt, &["1", "2"], None));
    assert!(err(Operator::Lt, &["-1"], None));
    assert!(err(Operator::Gte, &["x"], None));
    assert!(err(Operator::Lte, &["99999999999999999999"], None));
    assert!(err(Operator::In, &["a"], Some(2)));
    assert!(err(Operator::Exists, &[], Some(0)));
    assert!(err(Operator::Exists, &[], Some(51)));
    assert!(!err(Operator::In, &["a", "b"], Some(2)));
    assert!(!err(Operator::Exists, &[], Some(3)));
    assert!(!err(Operator::NotIn, &["a"], Some(5)));
    assert!(!err(Operator::Lt, &["0"], None));
    // Values given to Exists / DoesNotExist are ignored.
    assert_eq!(req("key", Operator::Exists, &["x"]), f("exists"));
    let message = Requirement::new("zone", Operator::In, &[])
        .expect_err("invalid")
        .to_string();
    assert!(
        message.contains("zone") && message.contains("In"),
        "{message}"
    );
}

#[test]
fn operator_parses_kubernetes_spelling() {
    for name in [
        "In",
        "NotIn",
        "Exists",
        "DoesNotExist",
        "Gt",
        "Lt",
        "Gte",
        "Lte",
    ] {
        let parsed: Operator = name.parse().expect("known operator");
        assert_eq!(parsed.as_str(), name);
    }
    assert!("in".parse::<Operator>().is_err());
}

/// core nodepool validation: `Gte` / `Lte` exist only in NodePool
/// requirements (`NodeSelectorRequirementWithMinValues`), not in pod affinity.
#[test]
fn only_gte_and_lte_are_node_pool_only() {
    let node_pool_only: Vec<&str> = [
        Operator::In,
        Operator::NotIn,
        Operator::Exists,
        Operator::DoesNotExist,
        Operator::Gt,
        Operator::Lt,
        Operator::Gte,
        Operator::Lte,
    ]
    .into_iter()
    .filter(|op| op.is_node_pool_only())
    .map(Operator::as_str)
    .collect();
    assert_eq!(node_pool_only, ["Gte", "Lte"]);
}

/// core requirement_test.go "NewRequirements: should normalize labels" and
/// requirements_test.go "should normalize aliased labels".
#[test]
fn keys_are_normalised() {
    let labels: Labels = [
        LABEL_BETA_ZONE,
        LABEL_BETA_REGION,
        LABEL_BETA_ARCH,
        "beta.kubernetes.io/os",
        LABEL_BETA_INSTANCE_TYPE,
    ]
    .into_iter()
    .map(|key| (key, "test"))
    .collect();
    let from_labels = Requirements::from_labels(&labels);
    let specs: Vec<RequirementSpec> = labels
        .iter()
        .map(|(key, value)| RequirementSpec {
            key: key.into(),
            operator: Operator::In,
            values: vec![value.into()],
            min_values: None,
        })
        .collect();
    let from_specs = Requirements::from_specs(&specs).expect("valid");
    for requirements in [from_labels, from_specs] {
        let mut keys: Vec<&str> = requirements.keys().collect();
        keys.sort();
        let mut expected = vec![
            LABEL_ARCH,
            LABEL_OS,
            LABEL_INSTANCE_TYPE,
            LABEL_TOPOLOGY_REGION,
            LABEL_TOPOLOGY_ZONE,
        ];
        expected.sort();
        assert_eq!(keys, expected);
    }
    let zone = Requirements::from_iter([req(LABEL_BETA_ZONE, Operator::In, &["test"])]);
    assert!(zone.get(LABEL_TOPOLOGY_ZONE).is_some_and(|r| r.has("test")));
    // Lookups by the beta key are normalised too, but the beta key is not stored.
    assert!(zone.keys().all(|k| k != LABEL_BETA_ZONE));
}

/// Compatibility fixtures on the zone key; index 0 is "unconstrained" (no requirement).
fn zone_fixtures() -> Vec<(&'static str, Requirements)> {
    std::iter::once(("unconstrained", Requirements::new()))
        .chain(NAMES.iter().map(|name| {
            (
                *name,
                Requirements::from_iter([fixture(LABEL_TOPOLOGY_ZONE, name)]),
            )
        }))
        .collect()
}

fn check_matrix(matrix: [&str; 15], allow_undefined: &LabelKeySet) {
    let fixtures = zone_fixtures();
    for ((name, existing), row) in fixtures.iter().zip(matrix) {
        for ((other, incoming), cell) in fixtures.iter().zip(row.chars()) {
            let result = existing.compatible(incoming, allow_undefined);
            assert_eq!(
                result.is_ok(),
                cell == 'Y',
                "{name}.compatible({other}): {result:?}"
            );
            assert_eq!(
                existing.is_compatible(incoming, allow_undefined),
                cell == 'Y',
                "{name}.is_compatible({other})"
            );
        }
    }
}

/// core requirements_test.go "should be compatible with well-known v1 labels undefined".
#[test]
fn compatible_with_undefined_well_known_labels() {
    check_matrix(
        [
            "YYYYYYYYYYYYYYY",
            "YYNYYYYYYYYYYYY",
            "YNYNNNYNNNYNNNN",
            "YYNYNYNNNNYNNNN",
            "YYNNYYYNNNYNNNN",
            "YYNYYYYNNNYNNNN",
            "YYYNYYYYYYYYYYY",
            "YYNNNNYYNYNNNNY",
            "YYNNNNYNYYYYNNN",
            "YYNNNNYYYYYYNNY",
            "YYYYYYYNYYYYYYY",
            "YYNNNNYNYYYYYNY",
            "YYNNNNYNNNYYYNN",
            "YYNNNNYNNNYNNYY",
            "YYNNNNYYNYYYNYY",
        ],
        core_well_known_labels(),
    );
}

/// core requirements_test.go "should be strictly compatible": without allowed undefined keys,
/// an unconstrained side rejects positive requirements but accepts NotIn / DoesNotExist.
#[test]
fn strictly_compatible() {
    let mut matrix = [
        "YYYYYYYYYYYYYYY",
        "YYNYYYYYYYYYYYY",
        "YNYNNNYNNNYNNNN",
        "YYNYNYNNNNYNNNN",
        "YYNNYYYNNNYNNNN",
        "YYNYYYYNNNYNNNN",
        "YYYNYYYYYYYYYYY",
        "YYNNNNYYNYNNNNY",
        "YYNNNNYNYYYYNNN",
        "YYNNNNYYYYYYNNY",
        "YYYYYYYNYYYYYYY",
        "YYNNNNYNYYYYYNY",
        "YYNNNNYNNNYYYNN",
        "YYNNNNYNNNYNNYY",
        "YYNNNNYYNYYYNYY",
    ];
    matrix[0] = "YNYNNNYNNNYNNNN";
    check_matrix(matrix, &NO_UNDEFINED_LABELS);
}

/// core requirements_test.go "should detect well known label truncations" / "typos" /
/// "should display an error message for unknown labels".
#[test]
fn undefined_label_errors_suggest_typos() {
    let cases = [
        ("zone", LABEL_TOPOLOGY_ZONE),
        ("region", LABEL_TOPOLOGY_REGION),
        ("nodepool", LABEL_NODEPOOL),
        ("instance-type", LABEL_INSTANCE_TYPE),
        ("arch", LABEL_ARCH),
        ("capacity-type", LABEL_CAPACITY_TYPE),
        ("topology.kubernetesio/zone", LABEL_TOPOLOGY_ZONE),
        ("node.io/zone", LABEL_TOPOLOGY_ZONE),
        ("topology.kubernetes.io/regio", LABEL_TOPOLOGY_REGION),
        ("node.kubernetes.io/region", LABEL_TOPOLOGY_REGION),
        ("karpenter/nodepool", LABEL_NODEPOOL),
    ];
    let unconstrained = Requirements::new();
    for allow in [core_well_known_labels(), well_known_labels()] {
        for (bad, known) in cases {
            let incoming = Requirements::from_iter([req(bad, Operator::Exists, &[])]);
            let error = unconstrained
                .compatible(&incoming, allow)
                .expect_err("undefined");
            assert_eq!(
                error.to_string(),
                format!("label \"{bad}\" does not have known values (typo of \"{known}\"?)")
            );
        }
    }
    let incoming = Requirements::from_iter([req("deployment", Operator::Exists, &[])]);
    let error = unconstrained
        .compatible(&incoming, &NO_UNDEFINED_LABELS)
        .expect_err("undefined");
    assert_eq!(
        error.to_string(),
        "label \"deployment\" does not have known values"
    );
}

/// core requirements.go `badKeyError`: the conflict names the key and both sides.
#[test]
fn conflict_error_names_key_and_values() {
    let node_pool = Requirements::from_iter([req(
        LABEL_TOPOLOGY_ZONE,
        Operator::In,
        &["us-east-1a", "us-east-1b"],
    )]);
    let pod = Requirements::from_iter([req(LABEL_TOPOLOGY_ZONE, Operator::In, &["us-east-1d"])]);
    let error = node_pool
        .compatible(&pod, well_known_labels())
        .expect_err("conflict");
    assert_eq!(
        error.to_string(),
        "key topology.kubernetes.io/zone, topology.kubernetes.io/zone In [us-east-1d] not in \
         topology.kubernetes.io/zone In [us-east-1a us-east-1b]"
    );
    // Every conflicting key is reported, in key order.
    let a = Requirements::from_iter([
        req("a", Operator::In, &["1"]),
        req("b", Operator::In, &["1"]),
    ]);
    let b = Requirements::from_iter([
        req("a", Operator::In, &["2"]),
        req("b", Operator::In, &["2"]),
    ]);
    match a.intersects(&b) {
        Err(CompatibilityError::Conflicts(conflicts)) => {
            let keys: Vec<&str> = conflicts.iter().map(|c| c.key.as_str()).collect();
            assert_eq!(keys, vec!["a", "b"]);
        }
        other => panic!("expected conflicts, got {other:?}"),
    }
}

/// core requirements.go `Intersects`: keys on one side only are ignored; two negative
/// requirements (NotIn / DoesNotExist) pass even without overlap.
#[test]
fn intersects_ignores_one_sided_keys_and_negative_pairs() {
    let one = Requirements::from_iter([req("a", Operator::In, &["1"])]);
    let other = Requirements::from_iter([req("b", Operator::In, &["2"])]);
    assert!(one.intersects(&other).is_ok());
    let does_not_exist = Requirements::from_iter([req("a", Operator::DoesNotExist, &[])]);
    let not_in = Requirements::from_iter([req("a", Operator::NotIn, &["x"])]);
    assert!(does_not_exist.intersects(&not_in).is_ok());
    assert!(not_in.intersects(&does_not_exist).is_ok());
    assert!(does_not_exist.intersects(&does_not_exist).is_ok());
    // DoesNotExist against a bounded Exists is not a negative pair.
    let gt = Requirements::from_iter([req("a", Operator::Gt, &["1"])]);
    assert!(does_not_exist.intersects(&gt).is_err());
}

/// core requirements.go `Add` intersects per key; minValues keeps the maximum.
#[test]
fn add_intersects_and_keeps_max_min_values() {
    let mut requirements = Requirements::new();
    requirements.add(flex("key", Operator::In, 2, &["a", "b", "c"]));
    requirements.add(flex("key", Operator::NotIn, 3, &["c"]));
    let merged = requirements.get("key").expect("present");
    assert_eq!(merged.values(), strings(&["a", "b"]).as_slice());
    assert_eq!(merged.min_values(), Some(3));
    assert!(requirements.has_min_values());
    assert_eq!(requirements.len(), 1);
}

/// core requirements_test.go "should convert combinations of labels ..." and
/// "should return both Gte and Lte requirements when both bounds exist".
#[test]
fn requirements_to_specs() {
    let all: Requirements = NAMES.iter().map(|name| fixture(name, name)).collect();
    let specs = all.to_specs();
    assert_eq!(specs.len(), 14);
    assert!(specs.contains(&RequirementSpec {
        key: "greaterThan9".into(),
        operator: Operator::Gte,
        values: strings(&["10"]),
        min_values: None,
    }));
    let cpu: Requirements = [
        req("cpu", Operator::Gte, &["8"]),
        req("cpu", Operator::Lte, &["8"]),
    ]
    .into_iter()
    .collect();
    let specs = cpu.to_specs();
    assert_eq!(specs.len(), 2);
    assert_eq!(
        (specs[0].operator, specs[1].operator),
        (Operator::Gte, Operator::Lte)
    );
    assert!(specs.iter().all(|s| s.values == strings(&["8"])));
}

/// core requirements_test.go "should print Requirements in the same order".
#[test]
fn requirements_display_sorted() {
    let all: Requirements = NAMES.iter().map(|name| fixture(name, name)).collect();
    assert_eq!(
        all.to_string(),
        "doesNotExist DoesNotExist, exists Exists, greaterThan1 Exists >=2, greaterThan9 Exists \
         >=10, in1 In [1], in19 In [1 9], in9 In [9], inA In [A], inAB In [A B], inB In [B], \
         lessThan1 Exists <=0, lessThan9 Exists <=8, notIn12 NotIn [1 2], notInA NotIn [A]"
    );
    let with_hostname: Requirements = [
        req("kubernetes.io/hostname", Operator::In, &["n1"]),
        req("a", Operator::Exists, &[]),
    ]
    .into_iter()
    .collect();
    assert_eq!(with_hostname.to_string(), "a Exists");
}

/// The label fast paths agree with building requirements from the labels
/// (core: instance-type filter uses `Intersects`; existing nodes use strict `Compatible`).
#[test]
fn label_fast_paths_match_full_algebra() {
    let label_sets: Vec<Labels> = vec![
        Labels::new(),
        [(LABEL_TOPOLOGY_ZONE, "A")].into_iter().collect(),
        [(LABEL_TOPOLOGY_ZONE, "1"), ("other", "x")]
            .into_iter()
            .collect(),
        [(LABEL_TOPOLOGY_ZONE, "9")].into_iter().collect(),
        [(LABEL_BETA_ZONE, "2")].into_iter().collect(),
        [(LABEL_TOPOLOGY_ZONE, "B"), (LABEL_BETA_ZONE, "B")]
            .into_iter()
            .collect(),
        // Conflicting beta and GA values read as an empty `In` on the node side.
        [(LABEL_TOPOLOGY_ZONE, "1"), (LABEL_BETA_ZONE, "9")]
            .into_iter()
            .collect(),
    ];
    for labels in &label_sets {
        let as_requirements = Requirements::from_labels(labels);
        for (name, requirements) in zone_fixtures() {
            assert_eq!(
                requirements.intersects_labels(labels),
                as_requirements.is_intersecting(&requirements),
                "{name} vs {labels:?}"
            );
            for allow in [&NO_UNDEFINED_LABELS, core_well_known_labels()] {
                assert_eq!(
                    requirements.compatible_with_labels(labels, allow),
                    as_requirements.compatible(&requirements, allow),
                    "{name} vs {labels:?}"
                );
            }
        }
    }
}

/// core nodeclaimtemplate.go `resolveCustomLabelsFromRequirements`: custom keys only.
#[test]
fn custom_labels_resolve_single_values() {
    let requirements: Requirements = [
        req("team", Operator::In, &["web"]),
        req("tier", Operator::In, &["b", "a"]),
        req("absent", Operator::DoesNotExist, &[]),
        req(LABEL_TOPOLOGY_ZONE, Operator::In, &["us-east-1a"]),
        req("kubernetes.io/hostname", Operator::In, &["n1"]),
    ]
    .into_iter()
    .collect();
    let labels = requirements.custom_labels();
    let pairs: Vec<(&str, &str)> = labels.iter().collect();
    assert_eq!(pairs, vec![("team", "web"), ("tier", "a")]);
}

/// core nodeclaim_validation.go `ValidateRequirement` (applied to NodePools and pods).
#[test]
fn full_validation_like_upstream() {
    let spec = |key: &str, operator, values: &[&str], min_values| RequirementSpec {
        key: key.into(),
        operator,
        values: strings(values),
        min_values,
    };
    let rules = RestrictedLabelRules::Current;
    assert!(
        spec(LABEL_CAPACITY_TYPE, Operator::In, &["spot"], None)
            .validate(rules)
            .is_ok()
    );
    assert!(
        spec("team", Operator::Exists, &[], None)
            .validate(rules)
            .is_ok()
    );
    // Restricted keys, including the hostname a pod nodeSelector may use.
    assert!(
        spec("kubernetes.io/hostname", Operator::In, &["n"], None)
            .validate(rules)
            .is_err()
    );
    assert!(
        spec("karpenter.sh/custom", Operator::Exists, &[], None)
            .validate(rules)
            .is_err()
    );
    // Known values: at least one valid, and at least minValues valid.
    assert!(
        spec(LABEL_CAPACITY_TYPE, Operator::In, &["cheap"], None)
            .validate(rules)
            .is_err()
    );
    assert!(
        spec(
            LABEL_CAPACITY_TYPE,
            Operator::In,
            &["spot", "cheap"],
            Some(2)
        )
        .validate(rules)
        .is_err()
    );
    assert!(
        spec(LABEL_CAPACITY_TYPE, Operator::NotIn, &["cheap"], None)
            .validate(rules)
            .is_ok()
    );
    // Syntax of keys and values.
    assert!(
        spec("bad key", Operator::Exists, &[], None)
            .validate(rules)
            .is_err()
    );
    assert!(
        spec("team", Operator::In, &["bad value"], None)
            .validate(rules)
            .is_err()
    );
    // Shape: several problems are reported together.
    let error = spec("karpenter.sh/x", Operator::In, &[], None)
        .validate(rules)
        .expect_err("invalid")
        .to_string();
    assert!(
        error.contains("not allowed") && error.contains("must have a value"),
        "{error}"
    );
    // Beta keys are normalised before checking.
    assert!(
        spec(LABEL_BETA_ZONE, Operator::In, &["a"], None)
            .validate(rules)
            .is_ok()
    );
}

/// Copies share one list until one changes: a change through `add`,
/// `get_mut` or `remove` shows in that copy only, and equality and hashing
/// look at the requirements, not at how they are stored.
#[test]
fn copies_change_alone() {
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};
    let hash = |r: &Requirements| {
        let mut h = DefaultHasher::new();
        r.hash(&mut h);
        h.finish()
    };
    let mut original = Requirements::new();
    original.add(req("a", Operator::In, &["1", "2"]));
    original.add(req("b", Operator::Exists, &[]));
    let mut added = original.clone();
    added.add(req("a", Operator::In, &["2", "3"]));
    added.add(req("c", Operator::In, &["x"]));
    let mut removed = original.clone();
    assert!(removed.remove("b").is_some());
    let mut relaxed = original.clone();
    *relaxed.get_mut("a").unwrap() = req("a", Operator::In, &["9"]);
    assert_eq!(original.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert!(original.get("a").unwrap().has("1"));
    assert!(!added.get("a").unwrap().has("1") && added.get("a").unwrap().has("2"));
    assert_eq!(added.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(removed.keys().collect::<Vec<_>>(), ["a"]);
    assert!(relaxed.get("a").unwrap().has("9") && !original.get("a").unwrap().has("9"));
    // Emptied by removal equals never filled, in value and hash.
    assert!(removed.remove("a").is_some());
    assert_eq!(removed, Requirements::new());
    assert_eq!(hash(&removed), hash(&Requirements::new()));
    assert_ne!(added, original);
}

/// `IntersectionProbe` answers as `is_intersecting` over a run of sets
/// whose keys come and go (so the remembered places are sometimes wrong,
/// and sometimes point at another key), with every upstream fixture.
#[test]
fn intersection_probe_agrees_with_is_intersecting() {
    let keys = ["a.example/k", "b.example/k", "c.example/k", "d.example/k"];
    // A fixed pseudo-random walk over fixtures and absent keys.
    let mut state = 0x2545_f491_u64;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) as usize % n
    };
    let mut random_set = |absent_one_in: usize| {
        let mut set = Requirements::new();
        for key in keys {
            if next(absent_one_in) != 0 {
                set.add(fixture(key, NAMES[next(NAMES.len())]));
            }
        }
        set
    };
    let existing: Vec<Requirements> = (0..300).map(|_| random_set(3)).collect();
    let incoming: Vec<Requirements> = (0..60).map(|_| random_set(2)).collect();
    let (mut agree_yes, mut agree_no) = (0, 0);
    for incoming in &incoming {
        let mut probe = IntersectionProbe::new(incoming);
        for set in &existing {
            let expected = set.is_intersecting(incoming);
            assert_eq!(probe.intersects(set), expected, "{set} against {incoming}");
            if expected {
                agree_yes += 1;
            } else {
                agree_no += 1;
            }
        }
    }
    assert!(
        agree_yes > 1000 && agree_no > 1000,
        "{agree_yes} / {agree_no}"
    );
}

/// A hinted lookup finds what `get` finds, from any hint, and moves the
/// hint to where the key is; a key that is absent leaves it.
#[test]
fn hinted_lookup_agrees_with_get() {
    let keys = ["a", "bb", "c", "dd", "zone"];
    let full: Requirements = keys
        .iter()
        .map(|key| req(key, Operator::In, &["x"]))
        .collect();
    let short: Requirements = [req("zone", Operator::In, &["y"])].into_iter().collect();
    for set in [&full, &short, &Requirements::new()] {
        for key in keys.iter().chain(&["missing"]) {
            for start in 0..7 {
                let hint = std::cell::Cell::new(start);
                assert_eq!(
                    set.get_hinted(key, &hint),
                    set.get(key),
                    "{key} from {start}"
                );
                match set.get(key) {
                    Some(found) => assert_eq!(set.slice()[hint.get()].key(), found.key()),
                    None => assert_eq!(hint.get(), start),
                }
            }
        }
    }
}
