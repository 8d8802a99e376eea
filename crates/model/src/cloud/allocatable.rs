//! Karpenter's AWS capacity and overhead model: what a node of a given
//! instance type reports as capacity, what kubelet reserves, and so what pods
//! can use (aws: pkg/providers/instancetype/types.go `computeCapacity`,
//! `kubeReservedResources`, `evictionThreshold`, `pods`, `ENILimitedPods`).
//!
//! Everything here is a pure function of an [`InstanceSpec`] and the
//! EC2NodeClass settings, so it works for instance types in no bundled table.

use super::nodeclass::{AmiFamily, InstanceStorePolicy, NodeClassSettings, Threshold};
use super::spec::{Arch, InstanceSpec};
use crate::kube::resources::{GIB, MIB, ResourceKind, Resources};

/// Karpenter's default `--vm-memory-overhead-percent`.
pub const DEFAULT_VM_MEMORY_OVERHEAD_PERCENT: f64 = 0.075;
/// Kubelet's default pod limit where ENI-limited density does not apply.
pub const DEFAULT_MAX_PODS: i64 = 110;
/// Memory Graviton kernels keep for the contiguous memory allocator.
const ARM64_CMA_MIB: i64 = 64;
/// The default EBS root/data volume (aws: amifamily `DefaultEBS`).
const DEFAULT_VOLUME_BYTES: i64 = 20 * GIB;
/// The Windows families' default root volume.
const WINDOWS_VOLUME_BYTES: i64 = 50 * GIB;

/// Operator-level and network-interface inputs that are not part of
/// [`NodeClassSettings`]; [`CapacityOptions::default`] is Karpenter's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityOptions {
    /// `--vm-memory-overhead-percent` as a fraction (0.075 = 7.5 %).
    pub vm_memory_overhead_percent: f64,
    /// `--reserved-enis`: ENIs kept out of the max-pods calculation.
    pub reserved_enis: u32,
    /// EFA-only interfaces from `spec.networkInterfaces`, if the node class
    /// lists interfaces explicitly.
    pub network_interfaces: Option<EfaOnlyInterfaces>,
}

impl Default for CapacityOptions {
    fn default() -> Self {
        CapacityOptions {
            vm_memory_overhead_percent: DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
            reserved_enis: 0,
            network_interfaces: None,
        }
    }
}

/// Counts of `interfaceType: efa-only` entries in an EC2NodeClass's
/// `networkInterfaces`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EfaOnlyInterfaces {
    /// On network card 0: each one takes an ENI from pod networking.
    pub on_default_card: u32,
    /// On all cards: this replaces the type's EFA count as capacity.
    pub total: u32,
}

/// What kubelet holds back from capacity, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overhead {
    /// `kubeReserved` (defaults computed from CPU and pod density).
    pub kube_reserved: Resources,
    /// `systemReserved` (nothing by default).
    pub system_reserved: Resources,
    /// Hard eviction thresholds for memory and node filesystem.
    pub eviction_threshold: Resources,
}

impl Overhead {
    /// The sum of all three parts.
    pub fn total(&self) -> Resources {
        self.kube_reserved + self.system_reserved + self.eviction_threshold
    }
}

/// Capacity, overhead and allocatable of one instance type under one node
/// class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeResources {
    /// What the node reports as capacity.
    pub capacity: Resources,
    /// What kubelet reserves.
    pub overhead: Overhead,
    /// `capacity − overhead.total()`. Not clamped at zero, as upstream: a
    /// negative amount means nothing fits.
    pub allocatable: Resources,
}

/// How an AMI family changes the model (aws: amifamily `FeatureFlags`).
struct FamilyTraits {
    /// kube-reserved memory follows ENI-limited density even when maxPods is set.
    eni_limited_memory_overhead: bool,
    /// `podsPerCore` is honoured (Bottlerocket ignores it).
    pods_per_core: bool,
    /// Default pod count is ENI-limited (else 110).
    eni_limited_pod_density: bool,
    /// Size of the volume that backs ephemeral storage by default.
    default_ephemeral_bytes: i64,
}

fn family_traits(family: AmiFamily) -> FamilyTraits {
    match family {
        AmiFamily::Al2 | AmiFamily::Al2023 | AmiFamily::Custom => FamilyTraits {
            eni_limited_memory_overhead: true,
            pods_per_core: true,
            eni_limited_pod_density: true,
            default_ephemeral_bytes: DEFAULT_VOLUME_BYTES,
        },
        // Bottlerocket's data volume (/dev/xvdb) is the default 20Gi.
        AmiFamily::Bottlerocket => FamilyTraits {
            eni_limited_memory_overhead: false,
            pods_per_core: false,
            eni_limited_pod_density: true,
            default_ephemeral_bytes: DEFAULT_VOLUME_BYTES,
        },
        AmiFamily::Windows2019 | AmiFamily::Windows2022 | AmiFamily::Windows2025 => FamilyTraits {
            eni_limited_memory_overhead: false,
            pods_per_core: true,
            eni_limited_pod_density: false,
            default_ephemeral_bytes: WINDOWS_VOLUME_BYTES,
        },
    }
}

/// The EKS max-pods formula over the default network card:
/// `usable × (IPv4 per ENI − 1) + 2`, where usable ENIs exclude reserved and
/// EFA-only ones; no usable ENI means no pods.
pub fn eni_limited_pods(
    enis_default_card: u32,
    ipv4_per_eni: u32,
    reserved_enis: u32,
    efa_only_on_default_card: u32,
) -> i64 {
    let usable = i64::from(enis_default_card)
        - i64::from(reserved_enis)
        - i64::from(efa_only_on_default_card);
    if usable <= 0 {
        return 0;
    }
    usable * (i64::from(ipv4_per_eni) - 1) + 2
}

/// Default kube-reserved CPU in millicores for `vcpu` vCPUs: 6 % of the first
/// core, 1 % of the second, 0.5 % of the next two, 0.25 % of the rest, each
/// tier truncated to whole millicores.
pub fn kube_reserved_cpu_millis(vcpu: u32) -> i64 {
    const TIERS: [(i64, i64, f64); 4] = [
        (0, 1000, 0.06),
        (1000, 2000, 0.01),
        (2000, 4000, 0.005),
        (4000, 1 << 31, 0.0025),
    ];
    let cpu = i64::from(vcpu) * 1000;
    TIERS
        .iter()
        .filter(|(start, _, _)| cpu >= *start)
        .map(|&(start, end, percent)| {
            let span = (cpu.min(end) - start) as f64;
            (span * percent) as i64
        })
        .sum()
}

/// Default kube-reserved memory in bytes for a pod density: `11 × pods + 255` MiB.
pub fn kube_reserved_memory_bytes(pods: i64) -> i64 {
    (11 * pods + 255) * MIB
}

/// Memory capacity in bytes: EC2's size, less 64 MiB on arm64, less the VM
/// overhead (rounded up to whole MiB).
pub fn memory_capacity_bytes(spec: &InstanceSpec, vm_memory_overhead_percent: f64) -> i64 {
    let mut mib = spec.memory_mib as i64;
    if spec.arch == Arch::Arm64 {
        mib -= ARM64_CMA_MIB;
    }
    let bytes = mib * MIB;
    let overhead_mib = (bytes as f64 * vm_memory_overhead_percent / 1024.0 / 1024.0).ceil() as i64;
    bytes - overhead_mib * MIB
}

/// Ephemeral-storage capacity in bytes: the instance store (in GB) under
/// RAID0, else the configured root volume, else the AMI family's default.
pub fn ephemeral_capacity_bytes(spec: &InstanceSpec, settings: &NodeClassSettings) -> i64 {
    if settings.instance_store_policy == InstanceStorePolicy::Raid0
        && let Some(gb) = spec.instance_store_gb
    {
        return gb as i64 * 1_000_000_000;
    }
    settings
        .root_volume_bytes
        .unwrap_or(family_traits(settings.ami_family).default_ephemeral_bytes)
}

/// The node's pod capacity: `maxPods`, else ENI-limited density (110 for
/// Windows), then capped by `podsPerCore × vCPU` where the family allows it.
pub fn pod_capacity(
    spec: &InstanceSpec,
    settings: &NodeClassSettings,
    options: &CapacityOptions,
) -> i64 {
    let traits = family_traits(settings.ami_family);
    let mut count = match settings.kubelet.max_pods {
        Some(max_pods) => max_pods,
        None if traits.eni_limited_pod_density => eni_limited_pods(
            spec.enis_default_card,
            spec.ipv4_per_eni,
            options.reserved_enis,
            efa_only_on_default_card(options),
        ),
        None => DEFAULT_MAX_PODS,
    };
    if let Some(per_core) = settings.kubelet.pods_per_core
        && per_core > 0
        && traits.pods_per_core
    {
        count = count.min(per_core * i64::from(spec.vcpu));
    }
    count
}

fn efa_only_on_default_card(options: &CapacityOptions) -> u32 {
    options.network_interfaces.map_or(0, |n| n.on_default_card)
}

/// The full capacity vector of a node.
///
/// Not modelled: Windows `vpc.amazonaws.com/PrivateIPv4Address` (no resource
/// slot for it), and the memory capacity Karpenter learns from registered
/// nodes (it starts from this same estimate).
pub fn capacity(
    spec: &InstanceSpec,
    settings: &NodeClassSettings,
    options: &CapacityOptions,
) -> Resources {
    let mut out = Resources::cpu_mem(
        i64::from(spec.vcpu) * 1000,
        memory_capacity_bytes(spec, options.vm_memory_overhead_percent),
    )
    .with(
        ResourceKind::EphemeralStorage,
        ephemeral_capacity_bytes(spec, settings),
    )
    .with(ResourceKind::Pods, pod_capacity(spec, settings, options))
    .with(ResourceKind::PodEni, i64::from(spec.pod_eni));
    if let Some(gpu) = &spec.gpu {
        let kind = match gpu.manufacturer.as_str() {
            "nvidia" => Some(ResourceKind::NvidiaGpu),
            "amd" => Some(ResourceKind::AmdGpu),
            "habana" => Some(ResourceKind::HabanaGaudi),
            _ => None,
        };
        if let Some(kind) = kind {
            out.set(kind, i64::from(gpu.count));
        }
    }
    if let Some(accelerator) = spec.accelerator.as_ref().filter(|a| a.is_neuron()) {
        let devices = i64::from(accelerator.count);
        out.set(ResourceKind::AwsNeuron, devices);
        out.set(
            ResourceKind::AwsNeuronCore,
            devices * i64::from(accelerator.neuron_cores_per_device()),
        );
    }
    let efa = options
        .network_interfaces
        .map_or(spec.efa, |interfaces| interfaces.total);
    out.set(ResourceKind::Efa, i64::from(efa));
    out
}

/// The eviction amount for a threshold against a capacity, or `default`.
fn eviction_amount(threshold: Threshold, capacity: i64, default: i64) -> i64 {
    match threshold {
        Threshold::Default => default,
        Threshold::Absolute(bytes) => bytes,
        // "100%" disables the threshold, as in the kubelet config API.
        Threshold::Percent(100.0) => 0,
        Threshold::Percent(percent) => (capacity as f64 / 100.0 * percent).ceil() as i64,
    }
}

/// kube-reserved, system-reserved and eviction thresholds of a node.
pub fn overhead(
    spec: &InstanceSpec,
    settings: &NodeClassSettings,
    options: &CapacityOptions,
) -> Overhead {
    let traits = family_traits(settings.ami_family);
    // AL2/AL2023/Custom size kube-reserved memory from ENI density with no
    // reserved ENIs, whatever maxPods says; the others use the pod capacity.
    let density = if traits.eni_limited_memory_overhead {
        eni_limited_pods(
            spec.enis_default_card,
            spec.ipv4_per_eni,
            0,
            efa_only_on_default_card(options),
        )
    } else {
        pod_capacity(spec, settings, options)
    };
    let kube = settings.kubelet.kube_reserved;
    let kube_reserved = Resources::cpu_mem(
        kube.cpu_millis
            .unwrap_or_else(|| kube_reserved_cpu_millis(spec.vcpu)),
        kube.memory_bytes
            .unwrap_or_else(|| kube_reserved_memory_bytes(density)),
    )
    .with(
        ResourceKind::EphemeralStorage,
        kube.ephemeral_bytes.unwrap_or(GIB),
    );
    let system = settings.kubelet.system_reserved;
    let system_reserved = Resources::cpu_mem(
        system.cpu_millis.unwrap_or(0),
        system.memory_bytes.unwrap_or(0),
    )
    .with(
        ResourceKind::EphemeralStorage,
        system.ephemeral_bytes.unwrap_or(0),
    );
    let memory = memory_capacity_bytes(spec, options.vm_memory_overhead_percent);
    let storage = ephemeral_capacity_bytes(spec, settings);
    let eviction_threshold = Resources::cpu_mem(
        0,
        eviction_amount(
            settings.kubelet.eviction_memory_available,
            memory,
            100 * MIB,
        ),
    )
    .with(
        ResourceKind::EphemeralStorage,
        eviction_amount(
            settings.kubelet.eviction_nodefs_available,
            storage,
            (storage as f64 / 100.0 * 10.0).ceil() as i64,
        ),
    );
    Overhead {
        kube_reserved,
        system_reserved,
        eviction_threshold,
    }
}

/// Capacity, overhead and allocatable together.
pub fn node_resources(
    spec: &InstanceSpec,
    settings: &NodeClassSettings,
    options: &CapacityOptions,
) -> NodeResources {
    let capacity = capacity(spec, settings, options);
    let overhead = overhead(spec, settings, options);
    NodeResources {
        capacity,
        overhead,
        allocatable: capacity - overhead.total(),
    }
}

#[cfg(test)]
#[path = "allocatable_tests.rs"]
mod tests;
