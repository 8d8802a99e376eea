//! NodePool and EC2NodeClass inputs that Karpenter's CRD schema, its CEL
//! rules, its runtime validation or the API server refuse: each is one
//! error line naming the file, the place, the field and the value.

use super::{Manifests, load, load_str};
use crate::manifest::ManifestError;

const HEAD: &str = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n";
const REF: &str = "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n";

/// A NodePool whose template spec has `lines` after its nodeClassRef
/// (each indented by six spaces).
fn pool_with_spec(lines: &str) -> String {
    format!("{HEAD}  template:\n    spec:\n{REF}{lines}")
}

/// A NodePool with one requirement (line 9 of the file).
fn pool_with_requirement(requirement: &str) -> String {
    pool_with_spec(&format!("      requirements:\n      - {requirement}\n"))
}

/// A NodePool with `body` under `spec.disruption` (from line 9).
fn pool_with_disruption(body: &str) -> String {
    format!("{HEAD}  template:\n    spec:\n{REF}  disruption:\n{body}")
}

fn load_err(text: &str) -> String {
    let result: Result<Manifests, ManifestError> = load_str("bad.yaml", text);
    let err = result.expect_err("must fail").to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

fn load_ok(text: &str) -> Manifests {
    load_str("ok.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

/// core nodepool_validation_cel_test.go "should fail for invalid
/// requirement keys" (CRD key pattern) and nodeclaim_validation.go
/// `ValidateRequirement` (`validation.IsQualifiedName`).
#[test]
fn requirement_key_must_be_a_qualified_name() {
    assert_eq!(
        load_err(&pool_with_requirement(
            "{key: \"bad key!\", operator: Exists}"
        )),
        "bad.yaml:9:15: spec.template.spec.requirements[0].key: key \"bad key!\" is not a qualified name: \
         name part must be at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending \
         with an alphanumeric character"
    );
    for key in [
        "test.com.com}",
        "Test.com/test",
        "test/test/test",
        "test/",
        "/test",
    ] {
        let err = load_err(&pool_with_requirement(&format!(
            "{{key: \"{key}\", operator: Exists}}"
        )));
        assert!(err.contains("is not a qualified name"), "{key}: {err}");
    }
    // "should succeed for valid requirement keys".
    for key in ["Test", "test.com/Test", "test.com.com/test", "key-only"] {
        load_ok(&pool_with_requirement(&format!(
            "{{key: \"{key}\", operator: Exists}}"
        )));
    }
}

/// core nodepool_validation_cel_test.go "should fail for the
/// karpenter.sh/nodepool label", "should fail for restricted labels",
/// "should fail for restricted domains", "should allow well known label
/// exceptions"; labels.go `IsRestrictedLabel` (aws adds karpenter.k8s.aws).
#[test]
fn restricted_requirement_keys_are_refused() {
    let err = load_err(&pool_with_requirement(
        "{key: kubernetes.io/hostname, operator: In, values: [n1]}",
    ));
    assert!(
        err.starts_with("bad.yaml:9:15: spec.template.spec.requirements[0].key: using label kubernetes.io/hostname is not allowed"),
        "{err}"
    );
    let err = load_err(&pool_with_requirement(
        "{key: karpenter.sh/nodepool, operator: In, values: [p]}",
    ));
    assert!(
        err.contains("label \"karpenter.sh/nodepool\" is restricted"),
        "{err}"
    );
    for key in [
        "karpenter.sh/custom",
        "sub.karpenter.sh/custom",
        "karpenter.k8s.aws/custom",
        "notkarpenter.sh/custom",
    ] {
        let err = load_err(&pool_with_requirement(&format!(
            "{{key: {key}, operator: Exists}}"
        )));
        assert!(
            err.contains("restricted") || err.contains("not allowed"),
            "{key}: {err}"
        );
    }
    for key in [
        "node.kubernetes.io/instance-type",
        "karpenter.k8s.aws/instance-family",
        "topology.kubernetes.io/zone",
        "example.com/team",
        "kops.k8s.io/instancegroup",
    ] {
        load_ok(&pool_with_requirement(&format!(
            "{{key: {key}, operator: Exists}}"
        )));
    }
}

/// The capacity type has a fixed value set (core labels.go
/// `WellKnownValuesForRequirements`; nodeclaim_validation.go
/// `validateWellKnownValues`: only unknown values is an error, unknown
/// values beside known ones are logged and ignored).
#[test]
fn capacity_type_values_are_checked() {
    assert_eq!(
        load_err(&pool_with_requirement(
            "{key: karpenter.sh/capacity-type, operator: In, values: [spott]}"
        )),
        "bad.yaml:9:66: spec.template.spec.requirements[0].values[0]: invalid karpenter.sh/capacity-type \
         value \"spott\" (expected one of: on-demand, spot, reserved)"
    );
    let m = load_ok(&pool_with_requirement(
        "{key: karpenter.sh/capacity-type, operator: In, values: [spot, On-Demand]}",
    ));
    let text: Vec<String> = m.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "ok.yaml:9:72: spec.template.spec.requirements[0].values[1]: \"On-Demand\" is not a \
          karpenter.sh/capacity-type value (expected one of: on-demand, spot, reserved); ignored, \
          as Karpenter does"
        ]
    );
    let err = load_err(&pool_with_requirement(
        "{key: karpenter.sh/capacity-type, operator: In, values: [spot, spots], minValues: 2}",
    ));
    assert!(err.contains("minValues 2 needs 2 valid"), "{err}");
    // NotIn of an unknown value constrains nothing and is left alone.
    load_ok(&pool_with_requirement(
        "{key: karpenter.sh/capacity-type, operator: NotIn, values: [spott]}",
    ));
}

/// Label values (CRD pattern and `maxLength: 63` on requirement values and
/// template labels; apimachinery `IsValidLabelValue`).
#[test]
fn label_values_longer_than_63_characters_are_refused() {
    let long = "a".repeat(64);
    assert_eq!(
        load_err(&pool_with_requirement(&format!(
            "{{key: example.com/team, operator: In, values: [ok, {long}]}}"
        ))),
        format!(
            "bad.yaml:9:60: spec.template.spec.requirements[0].values[1]: label value \"{long}\" is 64 \
             characters; at most 63 are allowed"
        )
    );
    let labels = format!(
        "{HEAD}  template:\n    metadata:\n      labels:\n        team: {long}\n    spec:\n{REF}"
    );
    assert_eq!(
        load_err(&labels),
        format!(
            "bad.yaml:8:15: spec.template.metadata.labels.team: label value \"{long}\" is 64 characters; \
             at most 63 are allowed"
        )
    );
    let bad_value = format!(
        "{HEAD}  template:\n    metadata:\n      labels:\n        team: \"a b\"\n    spec:\n{REF}"
    );
    assert!(load_err(&bad_value).contains("invalid label value \"a b\""));
    load_ok(&pool_with_requirement(&format!(
        "{{key: example.com/team, operator: In, values: [\"{}\"]}}",
        "a".repeat(63)
    )));
}

/// core nodepool_validation.go `validateLabels` and the CRD's CEL rules on
/// template labels: qualified-name keys, `karpenter.sh/nodepool` and
/// `kubernetes.io/hostname` restricted, as is the karpenter.sh domain.
#[test]
fn template_label_keys_are_checked() {
    let with_label = |key: &str| {
        format!(
            "{HEAD}  template:\n    metadata:\n      labels:\n        \"{key}\": x\n    spec:\n{REF}"
        )
    };
    for key in [
        "karpenter.sh/nodepool",
        "kubernetes.io/hostname",
        "karpenter.sh/team",
        "bad key",
    ] {
        let err = load_err(&with_label(key));
        assert!(
            err.starts_with("bad.yaml:8:")
                && err.contains(&format!("spec.template.metadata.labels.{key}:")),
            "{key}: {err}"
        );
    }
    let m = load_ok(&with_label("example.com/team"));
    assert_eq!(m.nodepools[0].labels["example.com/team"], "x");
    load_ok(&with_label("karpenter.sh/capacity-type"));
}

/// A schedule the CRD pattern lets through but robfig/cron's
/// `ParseStandard` refuses (core nodepool.go `Budget.IsActive`: the
/// budget then fails closed and nothing of the pool is disrupted);
/// nodepool_validation_cel_test.go "should fail when creating a budget
/// with an invalid cron", "... with less than 5 entries", "should succeed
/// when creating a budget with special cased crons".
#[test]
fn budget_schedules_must_parse() {
    let budget = |schedule: &str| {
        pool_with_disruption(&format!(
            "    budgets:\n    - {{nodes: \"10%\", schedule: \"{schedule}\", duration: 10m}}\n"
        ))
    };
    assert_eq!(
        load_err(&budget("0 25 * * *")),
        "bad.yaml:10:32: spec.disruption.budgets[0].schedule: invalid schedule \"0 25 * * *\": end of \
         range (25) above maximum (23): 25 (Karpenter's budget check would fail and disrupt no node of \
         this NodePool)"
    );
    for bad in [
        "60 * * * *",
        "* * 0 * *",
        "* * * 13 *",
        "* * * * 7",
        "*/0 * * * *",
        "5-1 * * * *",
        "* * * * funday",
        "*",
        "* * * * ",
        "@every 1h",
        "@fortnightly",
        "0 0 * * * *",
    ] {
        let err = load_err(&budget(bad));
        assert!(err.contains("invalid schedule"), "{bad}: {err}");
    }
    for good in [
        "@annually",
        "@yearly",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
        "0 9 * * mon-fri",
        "*/15 0-6 1,15 jan-jun ?",
        "59 23 31 12 6",
    ] {
        load_ok(&budget(good));
    }
}

/// CRD patterns: nodes `^((100|[0-9]{1,2})%|[0-9]+)$`, duration
/// `^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`; reasons are a set;
/// nodepool_validation_cel_test.go budget cases ("negative value int",
/// "value percent with more than 3 digits", "a seconds duration", "hours
/// and minutes in duration").
#[test]
fn budget_nodes_durations_and_reasons_follow_the_crd() {
    let nodes =
        |n: &str| pool_with_disruption(&format!("    budgets:\n    - {{nodes: \"{n}\"}}\n"));
    for bad in ["-10", "-10%", "1000%", "007%", "101%", "10 %", "%", ""] {
        let err = load_err(&nodes(bad));
        assert!(err.contains("invalid nodes"), "{bad}: {err}");
    }
    for good in ["0", "0%", "5%", "99%", "100%", "10", "99999999999"] {
        load_ok(&nodes(good));
    }
    let duration = |d: &str| {
        pool_with_disruption(&format!(
            "    budgets:\n    - {{nodes: \"1\", schedule: \"@daily\", duration: \"{d}\"}}\n"
        ))
    };
    for bad in [
        "30s", "1m1h", "1h1h", "1h30", "h", "0s", "1d", "-20m", "1.5h",
    ] {
        let err = load_err(&duration(bad));
        assert!(err.contains("invalid duration"), "{bad}: {err}");
    }
    for good in ["10m", "2h", "2h20m", "10m0s", "1h30m0s"] {
        load_ok(&duration(good));
    }
    let err = load_err(&pool_with_disruption(
        "    budgets:\n    - {nodes: \"1\", reasons: [Empty, Drifted, Empty]}\n",
    ));
    assert_eq!(
        err,
        "bad.yaml:10:46: spec.disruption.budgets[0].reasons[2]: duplicate disruption reason \"Empty\""
    );
}

/// core nodeclaim_validation.go `validateTaintsField` and the CRD taint
/// schema; nodepool_validation_cel_test.go "should fail for invalid taint
/// keys", "missing taint key", "invalid taint value", "invalid taint
/// effect", "should not fail for same key with different effects".
#[test]
fn taints_are_checked() {
    let taints = |list: &str| pool_with_spec(&format!("      taints: {list}\n"));
    assert_eq!(
        load_err(&taints("[{effect: NoSchedule}]")),
        "bad.yaml:8:25: spec.template.spec.taints[0].key: taint key is required"
    );
    for key in [
        "test.com.com}",
        "Test.com/test",
        "test/test/test",
        "test/",
        "/test",
    ] {
        let err = load_err(&taints(&format!(
            "[{{key: \"{key}\", effect: NoSchedule}}]"
        )));
        assert!(err.contains("invalid taint key"), "{key}: {err}");
    }
    assert!(
        load_err(&taints("[{key: a, value: \"???\", effect: NoSchedule}]"))
            .contains("invalid taint value \"???\"")
    );
    assert!(load_err(&taints("[{key: a, effect: \"???\"}]")).contains("unknown taint effect"));
    let err = load_err(&format!(
        "{}      startupTaints: [{{key: a, effect: NoSchedule}}]\n",
        taints("[{key: a, value: x, effect: NoSchedule}]")
    ));
    assert!(
        err.contains(
            "spec.template.spec.startupTaints[0]: duplicate taint key/effect pair a=NoSchedule"
        ),
        "{err}"
    );
    let m = load_ok(&taints(
        "[{key: a, effect: NoSchedule}, {key: a, effect: NoExecute}, {key: test.com/Test, value: f, effect: PreferNoSchedule}]",
    ));
    assert_eq!(m.nodepools[0].taints.len(), 3);
}

/// The API server requires `metadata.name`, a DNS-1123 subdomain
/// (apimachinery `ValidateObjectMeta`); a NodePool's name is also the
/// `karpenter.sh/nodepool` label value of its nodes, so at most 63.
#[test]
fn names_are_required_and_valid() {
    let pool = |metadata: &str| pool_with_spec("").replace("metadata: {name: p}", metadata);
    assert_eq!(
        load_err(&pool("metadata: {}")),
        "bad.yaml:3:11: metadata.name: NodePool has no name (metadata.name is required)"
    );
    assert!(load_err(&pool("metadata: {name: \"\"}")).contains("has no name"));
    assert_eq!(
        load_err(&pool("metadata: {name: Web_App}")),
        "bad.yaml:3:18: metadata.name: invalid NodePool name \"Web_App\": a lowercase RFC 1123 subdomain \
         must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an \
         alphanumeric character"
    );
    let long = "a".repeat(300);
    assert!(
        load_err(&pool(&format!("metadata: {{name: {long}}}")))
            .contains("must be no more than 253 characters, has 300")
    );
    let err = load_err(&pool(&format!("metadata: {{name: {}}}", "a".repeat(64))));
    assert!(err.contains("karpenter.sh/nodepool label value"), "{err}");
    load_ok(&pool(&format!("metadata: {{name: {}}}", "a".repeat(63))));
    load_ok(&pool("metadata: {name: general.purpose-1}"));

    let class = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {labels: {a: b}}\nspec: {}\n";
    assert_eq!(
        load_err(class),
        "bad.yaml:3:11: metadata.name: EC2NodeClass has no name (metadata.name is required)"
    );
}

/// Two objects of one kind and name in one set of files: the API server
/// refuses the second (`AlreadyExists`).
#[test]
fn duplicate_names_across_files_are_refused() {
    let a = pool_with_spec("");
    let b = format!("# another copy\n{}", pool_with_spec(""));
    let err = load(&[("a.yaml", &a), ("b.yaml", &b)])
        .expect_err("duplicate")
        .to_string();
    assert_eq!(
        err,
        "b.yaml:4:18: metadata.name: NodePool \"p\" is defined twice (first at a.yaml:3)"
    );
    let two = format!("{a}---\n{}", a.replace("name: p}", "name: q}"));
    assert_eq!(load_ok(&two).nodepools.len(), 2);

    let class =
        "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: d}\nspec: {}\n";
    let err = load_str("c.yaml", &format!("{class}---\n{class}"))
        .expect_err("duplicate")
        .to_string();
    assert_eq!(
        err,
        "c.yaml:8:18: metadata.name: EC2NodeClass \"d\" is defined twice (first at c.yaml:3)"
    );
}

/// CRD: nodeClassRef name may not be empty; at most 100 requirements and
/// 100 template labels.
#[test]
fn node_class_ref_and_list_sizes() {
    let text = pool_with_spec("").replace("name: d}", "name: \"\"}");
    assert_eq!(
        load_err(&text),
        "bad.yaml:7:74: spec.template.spec.nodeClassRef.name: name may not be empty"
    );
    let many: String = (0..101)
        .map(|i| format!("      - {{key: example.com/k{i}, operator: Exists}}\n"))
        .collect();
    let err = load_err(&pool_with_spec(&format!("      requirements:\n{many}")));
    assert!(
        err.contains("at most 100 requirements are allowed, got 101"),
        "{err}"
    );
    let labels: String = (0..101).map(|i| format!("        k{i}: v\n")).collect();
    let err = load_err(&format!(
        "{HEAD}  template:\n    metadata:\n      labels:\n{labels}    spec:\n{REF}"
    ));
    assert!(
        err.contains("at most 100 labels are allowed, got 101"),
        "{err}"
    );
}

/// Malformed shapes of every checked field are errors, never panics.
#[test]
fn odd_shapes_do_not_panic() {
    for body in [
        "      requirements: [{key: a, operator: Gt, values: []}]\n",
        "      requirements: [{key: a, operator: Gt, values: [\"-1\"]}]\n",
        "      requirements: [{key: a, operator: In}]\n",
        "      requirements: [{key: \"\", operator: Exists}]\n",
        "      requirements: [{key: a, operator: In, values: [\"\"]}]\n",
        "      requirements: [{key: a, operator: In, values: [x], minValues: 2}]\n",
        "      requirements: null\n",
        "      taints: [{key: a, value: null, effect: NoSchedule}]\n",
        "      taints: [{key: \"\", effect: NoSchedule}]\n",
    ] {
        let _ = load_str("odd.yaml", &pool_with_spec(body));
    }
    for disruption in [
        "    budgets: [{nodes: \"18446744073709551616\"}]\n",
        "    budgets: [{nodes: \"1\", schedule: \"@daily\", duration: \"99999999999999999999h\"}]\n",
        "    budgets: [{nodes: \"1\", schedule: \" \", duration: 1h}]\n",
        "    budgets: [{nodes: \"1\", reasons: null}]\n",
    ] {
        let _ = load_str("odd.yaml", &pool_with_disruption(disruption));
    }
}
