//! Tests of the allocatable model against the reference's worked examples,
//! upstream unit tests, and every type of Karpenter's generated docs.

use super::*;
use crate::cloud::nodeclass::{KubeletSettings, Reserved};
use crate::cloud::spec::tests::m5_large;

fn defaults() -> NodeClassSettings {
    NodeClassSettings::default()
}

fn resources(spec: &InstanceSpec, settings: &NodeClassSettings) -> NodeResources {
    node_resources(spec, settings, &CapacityOptions::default())
}

fn m5_xlarge() -> InstanceSpec {
    InstanceSpec {
        name: "m5.xlarge".into(),
        size: "xlarge".into(),
        vcpu: 4,
        memory_mib: 16384,
        enis_default_card: 4,
        ipv4_per_eni: 15,
        ..m5_large()
    }
}

fn t3_large() -> InstanceSpec {
    InstanceSpec {
        name: "t3.large".into(),
        category: "t".into(),
        family: "t3".into(),
        generation: 3,
        enis_default_card: 3,
        ipv4_per_eni: 12,
        pod_eni: 0,
        ..m5_large()
    }
}

/// Reference §3 worked example: m5.large on AL2023 with defaults.
#[test]
fn m5_large_allocatable() {
    let r = resources(&m5_large(), &defaults());
    assert_eq!(r.capacity.memory_bytes(), 7577 * MIB);
    assert_eq!(r.allocatable.cpu_millis(), 1930);
    assert_eq!(r.allocatable.memory_bytes(), 6903 * MIB);
    assert_eq!(r.allocatable.pods(), 29);
    assert_eq!(r.allocatable.ephemeral_bytes(), 17 * GIB);
    assert_eq!(r.capacity.get(ResourceKind::PodEni), 9);
}

/// Reference §3 worked example, and aws: instancetype/suite_test.go
/// "Kube Reserved Resources should use defaults when no kubelet is specified"
/// (m5.xlarge: 80m, 893Mi, 1Gi; eviction 100Mi).
#[test]
fn m5_xlarge_allocatable() {
    let r = resources(&m5_xlarge(), &defaults());
    assert_eq!(r.overhead.kube_reserved.cpu_millis(), 80);
    assert_eq!(r.overhead.kube_reserved.memory_bytes(), 893 * MIB);
    assert_eq!(r.overhead.kube_reserved.ephemeral_bytes(), GIB);
    assert_eq!(r.overhead.eviction_threshold.memory_bytes(), 100 * MIB);
    assert_eq!(r.overhead.system_reserved, Resources::ZERO);
    assert_eq!(r.allocatable.cpu_millis(), 3920);
    assert_eq!(r.allocatable.memory_bytes(), 14162 * MIB);
    assert_eq!(r.allocatable.pods(), 58);
}

/// t3.large: 3 ENIs × 12 IPv4 → 3 × 11 + 2 = 35 pods.
#[test]
fn t3_large_pods() {
    assert_eq!(resources(&t3_large(), &defaults()).capacity.pods(), 35);
}

/// Reference §3 kube-reserved CPU tiers.
#[test]
fn kube_reserved_cpu_tiers() {
    for (vcpu, millis) in [
        (1, 60),
        (2, 70),
        (4, 80),
        (8, 90),
        (16, 110),
        (32, 150),
        (64, 230),
        (96, 310),
    ] {
        assert_eq!(kube_reserved_cpu_millis(vcpu), millis, "{vcpu} vCPU");
    }
}

/// arm64 loses 64 MiB before the 7.5 % VM overhead: 8128 − ceil(609.6) = 7518.
#[test]
fn arm64_memory_adjustment() {
    let mut spec = m5_large();
    spec.arch = Arch::Arm64;
    assert_eq!(memory_capacity_bytes(&spec, 0.075), 7518 * MIB);
    assert_eq!(memory_capacity_bytes(&spec, 0.0), 8128 * MIB);
}

/// aws: suite_test.go "should override max-pods value": pods follow maxPods,
/// but AL2023 kube-reserved memory still follows ENI density.
#[test]
fn max_pods_override() {
    let mut settings = defaults();
    settings.kubelet.max_pods = Some(10);
    let r = resources(&m5_large(), &settings);
    assert_eq!(r.capacity.pods(), 10);
    assert_eq!(
        r.overhead.kube_reserved.memory_bytes(),
        (11 * 29 + 255) * MIB
    );
    // Bottlerocket sizes kube-reserved memory from the resolved pod count.
    settings.ami_family = AmiFamily::Bottlerocket;
    let r = resources(&m5_large(), &settings);
    assert_eq!(
        r.overhead.kube_reserved.memory_bytes(),
        (11 * 10 + 255) * MIB
    );
}

/// aws: suite_test.go "should take the minimum of pods-per-core and max-pods"
/// and "should ignore pods-per-core when using Bottlerocket AMI".
#[test]
fn pods_per_core() {
    let mut settings = defaults();
    settings.kubelet.pods_per_core = Some(4);
    assert_eq!(resources(&m5_large(), &settings).capacity.pods(), 8);
    settings.kubelet.pods_per_core = Some(100);
    assert_eq!(resources(&m5_large(), &settings).capacity.pods(), 29);
    settings.kubelet.pods_per_core = Some(0);
    assert_eq!(resources(&m5_large(), &settings).capacity.pods(), 29);
    settings.kubelet.pods_per_core = Some(4);
    settings.ami_family = AmiFamily::Bottlerocket;
    assert_eq!(resources(&m5_large(), &settings).capacity.pods(), 29);
}

/// aws: suite_test.go "should override kube reserved when specified" and
/// "should override system reserved cpus when specified".
#[test]
fn reserved_overrides() {
    let mut settings = defaults();
    settings.kubelet.kube_reserved = Reserved {
        cpu_millis: Some(2000),
        memory_bytes: Some(10 * GIB),
        ephemeral_bytes: Some(2 * GIB),
    };
    settings.kubelet.system_reserved = Reserved {
        cpu_millis: Some(1000),
        memory_bytes: Some(20 * GIB),
        ephemeral_bytes: None,
    };
    let r = resources(&m5_xlarge(), &settings);
    assert_eq!(
        r.overhead.kube_reserved,
        Resources::cpu_mem(2000, 10 * GIB).with(ResourceKind::EphemeralStorage, 2 * GIB)
    );
    assert_eq!(
        r.overhead.system_reserved,
        Resources::cpu_mem(1000, 20 * GIB)
    );
    assert_eq!(r.allocatable.cpu_millis(), 4000 - 3000);
    // Only the keys given are overridden.
    settings.kubelet.kube_reserved = Reserved {
        memory_bytes: Some(GIB),
        ..Reserved::default()
    };
    let r = resources(&m5_xlarge(), &settings);
    assert_eq!(r.overhead.kube_reserved.cpu_millis(), 80);
    assert_eq!(r.overhead.kube_reserved.memory_bytes(), GIB);
}

/// aws: suite_test.go "Eviction Hard": a quantity, a percentage of memory
/// capacity, and 100% meaning disabled.
#[test]
fn eviction_hard_overrides() {
    let mut settings = defaults();
    settings.kubelet.eviction_memory_available = Threshold::Absolute(500 * MIB);
    let r = resources(&m5_xlarge(), &settings);
    assert_eq!(r.overhead.eviction_threshold.memory_bytes(), 500 * MIB);

    settings.kubelet.eviction_memory_available = Threshold::Percent(10.0);
    let r = resources(&m5_xlarge(), &settings);
    let capacity = r.capacity.memory_bytes();
    assert_eq!(
        r.overhead.eviction_threshold.memory_bytes(),
        (capacity + 9) / 10
    );

    settings.kubelet.eviction_memory_available = Threshold::Percent(100.0);
    let r = resources(&m5_xlarge(), &settings);
    assert_eq!(r.overhead.eviction_threshold.memory_bytes(), 0);

    settings.kubelet.eviction_nodefs_available = Threshold::Percent(5.0);
    let r = resources(&m5_xlarge(), &settings);
    assert_eq!(r.overhead.eviction_threshold.ephemeral_bytes(), GIB);
}

/// RAID0 uses the instance store in decimal GB; without local disks the
/// root volume is kept. A configured root volume replaces the 20Gi default.
#[test]
fn ephemeral_storage_sources() {
    let mut m5d = m5_large();
    m5d.local_nvme_gb = Some(75);
    m5d.instance_store_gb = Some(75);
    let mut settings = defaults();
    settings.instance_store_policy = InstanceStorePolicy::Raid0;
    let r = resources(&m5d, &settings);
    assert_eq!(r.capacity.ephemeral_bytes(), 75_000_000_000);
    assert_eq!(
        r.overhead.eviction_threshold.ephemeral_bytes(),
        7_500_000_000
    );
    assert_eq!(r.capacity.ephemeral_bytes(), {
        let mut s = settings;
        s.root_volume_bytes = Some(100 * GIB);
        resources(&m5d, &s).capacity.ephemeral_bytes()
    });
    assert_eq!(
        resources(&m5_large(), &settings).capacity.ephemeral_bytes(),
        20 * GIB
    );
    settings.instance_store_policy = InstanceStorePolicy::None;
    settings.root_volume_bytes = Some(100 * GIB);
    let r = resources(&m5d, &settings);
    assert_eq!(r.capacity.ephemeral_bytes(), 100 * GIB);
    assert_eq!(r.allocatable.ephemeral_bytes(), 100 * GIB - GIB - 10 * GIB);
}

/// Windows: 110 pods, kube-reserved memory from 110 pods, 50Gi root volume;
/// Bottlerocket keeps ENI density and the 20Gi data volume.
#[test]
fn windows_and_bottlerocket() {
    let settings = NodeClassSettings {
        ami_family: AmiFamily::Windows2022,
        ..defaults()
    };
    let r = resources(&m5_large(), &settings);
    assert_eq!(r.capacity.pods(), 110);
    assert_eq!(
        r.overhead.kube_reserved.memory_bytes(),
        (11 * 110 + 255) * MIB
    );
    assert_eq!(r.capacity.ephemeral_bytes(), 50 * GIB);

    let settings = NodeClassSettings {
        ami_family: AmiFamily::Bottlerocket,
        kubelet: KubeletSettings::default(),
        ..defaults()
    };
    let r = resources(&m5_large(), &settings);
    assert_eq!(r.capacity.pods(), 29);
    assert_eq!(r.overhead.kube_reserved.memory_bytes(), 574 * MIB);
    assert_eq!(r.capacity.ephemeral_bytes(), 20 * GIB);
}

/// aws: suite_test.go "should reserve ENIs when aws.reservedENIs is set and
/// not go below 0 ENIs" (t3.large → 0 pods), and the Network Interfaces
/// tests (m6idn.32xlarge, 8 ENIs × 50 IPs: 394 pods, 345 with one EFA-only
/// interface on card 0).
#[test]
fn reserved_and_efa_only_enis() {
    let options = CapacityOptions {
        reserved_enis: 1_000_000,
        ..CapacityOptions::default()
    };
    assert_eq!(pod_capacity(&t3_large(), &defaults(), &options), 0);
    assert_eq!(eni_limited_pods(8, 50, 0, 0), 394);
    assert_eq!(eni_limited_pods(8, 50, 0, 1), 345);
    let mut m6idn = m5_large();
    m6idn.enis_default_card = 8;
    m6idn.ipv4_per_eni = 50;
    m6idn.efa = 2;
    let options = CapacityOptions {
        network_interfaces: Some(EfaOnlyInterfaces {
            on_default_card: 1,
            total: 1,
        }),
        ..CapacityOptions::default()
    };
    let r = node_resources(&m6idn, &defaults(), &options);
    assert_eq!(r.capacity.pods(), 345);
    assert_eq!(r.capacity.get(ResourceKind::Efa), 1);
    assert_eq!(
        resources(&m6idn, &defaults())
            .capacity
            .get(ResourceKind::Efa),
        2
    );
}
