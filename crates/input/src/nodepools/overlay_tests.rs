//! NodeOverlay documents, after core pkg/apis/v1alpha1
//! nodeoverlay_validation_cel_test.go and the design's examples
//! (designs/node-overlay.md): what is read, and what the CRD refuses, each
//! as one error line with the file, line, column and field.

use super::load_str;
use crate::cloud::overlay::PriceChange;
use crate::kube::resources::ResourceKind;

const HEAD: &str =
    "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: o}\nspec:\n";

fn err(spec: &str) -> String {
    let text = format!("{HEAD}{spec}");
    let e = load_str("bad.yaml", &text)
        .expect_err("must fail")
        .to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

/// Design "Price Adjustment" and "Capacity" examples, read beside a
/// NodePool file's other documents.
#[test]
fn design_examples_read() {
    let text = format!(
        "{HEAD}  requirements:\n  - key: karpenter.sh/capacity-type\n    operator: In\n    values: [on-demand]\n  priceAdjustment: \"-7.50\"\n---\napiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {{name: extended-resource}}\nspec:\n  weight: 10\n  requirements:\n  - key: node.kubernetes.io/instance-type\n    operator: In\n    values: [m5.large, m5.2xlarge]\n  capacity:\n    nvidia.com/gpu: \"2\"\n"
    );
    let m = load_str("ok.yaml", &text).unwrap();
    assert_eq!(m.nodeoverlays.len(), 2);
    let first = &m.nodeoverlays[0].overlay;
    assert_eq!(first.price, Some(PriceChange::Add(-7_500_000)));
    assert_eq!(first.weight, 0);
    assert_eq!(m.nodeoverlays[0].at.place.line, 3);
    let second = &m.nodeoverlays[1].overlay;
    assert_eq!(second.weight, 10);
    assert_eq!(second.capacity, vec![(ResourceKind::NvidiaGpu, 2)]);
    assert_eq!(second.price, None);
}

/// nodeoverlay_validation_cel_test.go: "cannot set both 'price' and
/// 'priceAdjustment'", the price patterns, weight 1..10000, restricted
/// capacity resources, operators and their values, unknown fields.
#[test]
fn crd_rules_refuse_bad_specs() {
    let cases: &[(&str, &str)] = &[
        (
            "  price: \"1\"\n  priceAdjustment: \"+1\"\n",
            "bad.yaml:6:20: spec.priceAdjustment: cannot set both 'price' and 'priceAdjustment'",
        ),
        (
            "  priceAdjustment: \"10%\"\n",
            "spec.priceAdjustment: priceAdjustment \"10%\" must be a signed amount",
        ),
        ("  priceAdjustment: \"-101%\"\n", "spec.priceAdjustment"),
        (
            "  price: \"-1\"\n",
            "spec.price: price \"-1\" must be an unsigned decimal",
        ),
        (
            "  weight: 0\n",
            "spec.weight: weight 0 out of range 1..10000",
        ),
        ("  weight: 10001\n", "out of range"),
        (
            "  capacity: {memory: 10Mi}\n",
            "spec.capacity.memory: invalid resource restricted",
        ),
        (
            "  capacity: {smarter-devices/fuse: \"1\"}\n",
            "is not modelled yet",
        ),
        (
            "  requirements:\n  - {key: a, operator: In}\n",
            "spec.requirements[0]: operator In needs at least one value",
        ),
        (
            "  requirements:\n  - {key: a, operator: Gt, values: [\"-1\"]}\n",
            "must have a single positive integer value",
        ),
        (
            "  requirements:\n  - {key: a, operator: Near, values: [x]}\n",
            "unknown operator \"Near\"",
        ),
        ("  priceAdjusment: \"+1\"\n", "priceAdjusment"),
    ];
    for (spec, expected) in cases {
        let e = err(spec);
        assert!(e.contains(expected), "{spec:?}: {e}");
    }
}

/// Two NodeOverlays with one name in one set of files: the second would
/// replace the first under `kubectl apply`.
#[test]
fn duplicate_overlay_names_are_refused() {
    let text = format!("{HEAD}  price: \"1\"\n---\n{HEAD}  price: \"2\"\n");
    let e = load_str("dup.yaml", &text)
        .expect_err("must fail")
        .to_string();
    assert!(
        e.contains("NodeOverlay \"o\" is defined twice (first at dup.yaml:3)"),
        "{e}"
    );
}
