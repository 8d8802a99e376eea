//! The bundled instance-type table against Karpenter's generated docs.

use crate::cloud::allocatable::{CapacityOptions, node_resources};
use crate::cloud::nodeclass::NodeClassSettings;
use crate::kube::resources::{GIB, MIB, ResourceKind};
use crate::snapshot;
use crate::table::parse_instance_table;

/// Every type in Karpenter's generated instance-type reference
/// (website/content/en/docs/reference/instance-types.md at the snapshot's
/// commit, AL2023 defaults) gets exactly the allocatable the docs list:
/// cpu, memory, ephemeral-storage, pods, GPUs, Neuron, EFA and pod-eni
/// (see `tests/fixtures/karpenter-docs/README.md`).
#[test]
fn matches_karpenter_docs_for_every_type() {
    let specs = parse_instance_table("instance_types.csv", snapshot::INSTANCE_TYPES).unwrap();
    let docs =
        include_str!("../../../tests/fixtures/karpenter-docs/karpenter_docs_allocatable.csv");
    let mut checked = 0;
    let mut newer_pod_eni = 0;
    for line in docs.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let n = |i: usize| f[i].parse::<i64>().unwrap();
        let spec = specs.iter().find(|s| s.name == f[0]).unwrap();
        let a = node_resources(
            spec,
            &NodeClassSettings::default(),
            &CapacityOptions::default(),
        )
        .allocatable;
        let got = [
            a.cpu_millis(),
            a.memory_bytes() / MIB,
            a.ephemeral_bytes() / GIB,
            a.pods(),
            a.get(ResourceKind::NvidiaGpu),
            a.get(ResourceKind::AmdGpu),
            a.get(ResourceKind::AwsNeuron),
            a.get(ResourceKind::AwsNeuronCore),
            a.get(ResourceKind::Efa),
            a.get(ResourceKind::PodEni),
        ];
        let want: Vec<i64> = (1..=10).map(n).collect();
        assert_eq!(got[..9], want[..9], "{}", f[0]);
        // The bundled ENI table (2026-08) is newer than the docs (2026-07):
        // 56 types gained branch-ENI (pod-eni) support in between.
        assert!(want[9] == got[9] || want[9] == 0, "{} pod-eni", f[0]);
        newer_pod_eni += usize::from(want[9] != got[9]);
        assert_eq!(a.memory_bytes() % MIB, 0, "{}", f[0]);
        checked += 1;
    }
    assert_eq!(checked, specs.len());
    assert_eq!(newer_pod_eni, 56);
}
