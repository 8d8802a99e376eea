//! The node labels Karpenter derives for an AWS instance type
//! (aws: pkg/providers/instancetype/types.go `computeRequirements`).
//!
//! Only single-valued labels are produced. Zone, zone id and capacity type
//! depend on the offering; `instance-tenancy` is multi-valued (default and
//! dedicated); `nitro-sandbox` needs data the snapshot lacks.

use super::nodeclass::AmiFamily;
use super::spec::InstanceSpec;

/// `node.kubernetes.io/instance-type`.
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// `kubernetes.io/arch`.
pub const ARCH: &str = "kubernetes.io/arch";
/// `kubernetes.io/os`.
pub const OS: &str = "kubernetes.io/os";
/// `topology.kubernetes.io/region`.
pub const REGION: &str = "topology.kubernetes.io/region";
/// `topology.kubernetes.io/zone` (an offering dimension).
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// `topology.k8s.aws/zone-id` (an offering dimension).
pub const ZONE_ID: &str = "topology.k8s.aws/zone-id";
/// `karpenter.sh/capacity-type` (an offering dimension).
pub const CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";
/// `node.kubernetes.io/windows-build`.
pub const WINDOWS_BUILD: &str = "node.kubernetes.io/windows-build";
/// `karpenter.k8s.aws/instance-category`.
pub const INSTANCE_CATEGORY: &str = "karpenter.k8s.aws/instance-category";
/// `karpenter.k8s.aws/instance-family`.
pub const INSTANCE_FAMILY: &str = "karpenter.k8s.aws/instance-family";
/// `karpenter.k8s.aws/instance-generation`.
pub const INSTANCE_GENERATION: &str = "karpenter.k8s.aws/instance-generation";
/// `karpenter.k8s.aws/instance-size`.
pub const INSTANCE_SIZE: &str = "karpenter.k8s.aws/instance-size";
/// `karpenter.k8s.aws/instance-cpu`.
pub const INSTANCE_CPU: &str = "karpenter.k8s.aws/instance-cpu";
/// `karpenter.k8s.aws/instance-cpu-manufacturer`.
pub const INSTANCE_CPU_MANUFACTURER: &str = "karpenter.k8s.aws/instance-cpu-manufacturer";
/// `karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz`.
pub const INSTANCE_CPU_CLOCK: &str = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz";
/// `karpenter.k8s.aws/instance-memory` (MiB).
pub const INSTANCE_MEMORY: &str = "karpenter.k8s.aws/instance-memory";
/// `karpenter.k8s.aws/instance-ebs-bandwidth` (Mbit/s).
pub const INSTANCE_EBS_BANDWIDTH: &str = "karpenter.k8s.aws/instance-ebs-bandwidth";
/// `karpenter.k8s.aws/instance-network-bandwidth` (Mbit/s).
pub const INSTANCE_NETWORK_BANDWIDTH: &str = "karpenter.k8s.aws/instance-network-bandwidth";
/// `karpenter.k8s.aws/instance-local-nvme` (GB).
pub const INSTANCE_LOCAL_NVME: &str = "karpenter.k8s.aws/instance-local-nvme";
/// `karpenter.k8s.aws/instance-gpu-name`.
pub const INSTANCE_GPU_NAME: &str = "karpenter.k8s.aws/instance-gpu-name";
/// `karpenter.k8s.aws/instance-gpu-manufacturer`.
pub const INSTANCE_GPU_MANUFACTURER: &str = "karpenter.k8s.aws/instance-gpu-manufacturer";
/// `karpenter.k8s.aws/instance-gpu-count`.
pub const INSTANCE_GPU_COUNT: &str = "karpenter.k8s.aws/instance-gpu-count";
/// `karpenter.k8s.aws/instance-gpu-memory` (MiB).
pub const INSTANCE_GPU_MEMORY: &str = "karpenter.k8s.aws/instance-gpu-memory";
/// `karpenter.k8s.aws/instance-accelerator-name`.
pub const INSTANCE_ACCELERATOR_NAME: &str = "karpenter.k8s.aws/instance-accelerator-name";
/// `karpenter.k8s.aws/instance-accelerator-manufacturer`.
pub const INSTANCE_ACCELERATOR_MANUFACTURER: &str =
    "karpenter.k8s.aws/instance-accelerator-manufacturer";
/// `karpenter.k8s.aws/instance-accelerator-count`.
pub const INSTANCE_ACCELERATOR_COUNT: &str = "karpenter.k8s.aws/instance-accelerator-count";
/// `karpenter.k8s.aws/instance-hypervisor`.
pub const INSTANCE_HYPERVISOR: &str = "karpenter.k8s.aws/instance-hypervisor";
/// `karpenter.k8s.aws/instance-encryption-in-transit-supported`.
pub const INSTANCE_ENCRYPTION_IN_TRANSIT: &str =
    "karpenter.k8s.aws/instance-encryption-in-transit-supported";
/// `karpenter.k8s.aws/instance-capability-flex`.
pub const INSTANCE_CAPABILITY_FLEX: &str = "karpenter.k8s.aws/instance-capability-flex";

/// The Windows build label value of a Windows family (aws: apis/v1/labels.go).
pub fn windows_build(family: AmiFamily) -> Option<&'static str> {
    match family {
        AmiFamily::Windows2019 => Some("10.0.17763"),
        AmiFamily::Windows2022 => Some("10.0.20348"),
        AmiFamily::Windows2025 => Some("10.0.26100"),
        _ => None,
    }
}

/// Splits a type name the way Karpenter's `(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`
/// does: the leading letters (category) and the first digits after them,
/// skipping an optional `-<n>tb` (generation). `None` if it does not match.
pub fn category_and_generation(name: &str) -> Option<(&str, &str)> {
    // The regex needs a '.' somewhere after the generation digits.
    let letters = name.bytes().take_while(u8::is_ascii_lowercase).count();
    if letters == 0 {
        return None;
    }
    let mut rest = &name[letters..];
    if let Some(after_dash) = rest.strip_prefix('-') {
        let digits = after_dash.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after_dash[digits..].starts_with("tb") {
            let candidate = &after_dash[digits + 2..];
            if candidate.starts_with(|c: char| c.is_ascii_digit()) {
                rest = candidate;
            }
        }
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].contains('.') {
        return None;
    }
    Some((&name[..letters], &rest[..digits]))
}

/// The labels of an instance type, sorted by key. `None` when the AMI family
/// cannot run the type at all (Windows on arm64: upstream leaves its OS
/// requirement empty, so nothing can schedule there).
pub fn instance_labels(
    spec: &InstanceSpec,
    region: &str,
    ami_family: AmiFamily,
) -> Option<Vec<(&'static str, String)>> {
    let os = if ami_family.is_windows() {
        if spec.arch != super::spec::Arch::Amd64 {
            return None;
        }
        "windows"
    } else {
        "linux"
    };
    let mut labels: Vec<(&'static str, String)> = vec![
        (INSTANCE_TYPE, spec.name.clone()),
        (ARCH, spec.arch.label().to_string()),
        (OS, os.to_string()),
        (REGION, region.to_string()),
        (INSTANCE_CPU, spec.vcpu.to_string()),
        (INSTANCE_CPU_MANUFACTURER, spec.cpu_manufacturer.clone()),
        (INSTANCE_MEMORY, spec.memory_mib.to_string()),
        (INSTANCE_HYPERVISOR, spec.hypervisor.clone()),
        (
            INSTANCE_ENCRYPTION_IN_TRANSIT,
            spec.encryption_in_transit.to_string(),
        ),
        (
            INSTANCE_CAPABILITY_FLEX,
            spec.name
                .split('.')
                .next()
                .unwrap_or("")
                .contains("-flex")
                .to_string(),
        ),
    ];
    if let Some(build) = windows_build(ami_family) {
        labels.push((WINDOWS_BUILD, build.to_string()));
    }
    if let Some((category, generation)) = category_and_generation(&spec.name) {
        labels.push((INSTANCE_CATEGORY, category.to_string()));
        labels.push((INSTANCE_GENERATION, generation.to_string()));
    }
    if let Some((family, size)) = spec.name.split_once('.')
        && !size.contains('.')
    {
        labels.push((INSTANCE_FAMILY, family.to_string()));
        labels.push((INSTANCE_SIZE, size.to_string()));
    }
    if let Some(mhz) = spec.cpu_clock_mhz {
        labels.push((INSTANCE_CPU_CLOCK, mhz.to_string()));
    }
    if let Some(mbps) = spec.ebs_bandwidth_mbps {
        labels.push((INSTANCE_EBS_BANDWIDTH, mbps.to_string()));
    }
    if let Some(mbps) = spec.network_bandwidth_mbps {
        labels.push((INSTANCE_NETWORK_BANDWIDTH, mbps.to_string()));
    }
    if let Some(gb) = spec.local_nvme_gb {
        labels.push((INSTANCE_LOCAL_NVME, gb.to_string()));
    }
    if let Some(gpu) = &spec.gpu {
        labels.push((INSTANCE_GPU_NAME, gpu.name.clone()));
        labels.push((INSTANCE_GPU_MANUFACTURER, gpu.manufacturer.clone()));
        labels.push((INSTANCE_GPU_COUNT, gpu.count.to_string()));
        labels.push((INSTANCE_GPU_MEMORY, gpu.memory_mib.to_string()));
    }
    if let Some(accelerator) = &spec.accelerator {
        labels.push((INSTANCE_ACCELERATOR_NAME, accelerator.name.clone()));
        labels.push((
            INSTANCE_ACCELERATOR_MANUFACTURER,
            accelerator.manufacturer.clone(),
        ));
        labels.push((INSTANCE_ACCELERATOR_COUNT, accelerator.count.to_string()));
    }
    labels.sort();
    Some(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::spec::tests::m5_large;
    use crate::cloud::spec::{Arch, Gpu};

    fn get<'a>(labels: &'a [(&'static str, String)], key: &str) -> Option<&'a str> {
        labels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// aws: types.go `computeRequirements` — m5.large splits into category m,
    /// generation 5, family m5, size large.
    #[test]
    fn m5_large_labels() {
        let labels = instance_labels(&m5_large(), "us-east-1", AmiFamily::Al2023).unwrap();
        assert_eq!(get(&labels, INSTANCE_CATEGORY), Some("m"));
        assert_eq!(get(&labels, INSTANCE_FAMILY), Some("m5"));
        assert_eq!(get(&labels, INSTANCE_GENERATION), Some("5"));
        assert_eq!(get(&labels, INSTANCE_SIZE), Some("large"));
        assert_eq!(get(&labels, ARCH), Some("amd64"));
        assert_eq!(get(&labels, OS), Some("linux"));
        assert_eq!(get(&labels, REGION), Some("us-east-1"));
        assert_eq!(get(&labels, INSTANCE_CPU), Some("2"));
        assert_eq!(get(&labels, INSTANCE_MEMORY), Some("8192"));
        assert_eq!(get(&labels, INSTANCE_CAPABILITY_FLEX), Some("false"));
        assert_eq!(get(&labels, INSTANCE_GPU_NAME), None);
        assert_eq!(get(&labels, WINDOWS_BUILD), None);
        assert!(labels.windows(2).all(|w| w[0].0 < w[1].0), "sorted, unique");
    }

    /// The regex's optional `-<n>tb` part: u-6tb1.metal is category u,
    /// generation 1; names without digits after the letters get no category.
    #[test]
    fn category_regex_cases() {
        assert_eq!(category_and_generation("m5.large"), Some(("m", "5")));
        assert_eq!(category_and_generation("u-6tb1.metal"), Some(("u", "1")));
        assert_eq!(
            category_and_generation("u7i-12tb.224xlarge"),
            Some(("u", "7"))
        );
        assert_eq!(category_and_generation("c7i-flex.large"), Some(("c", "7")));
        assert_eq!(category_and_generation("m5large"), None);
        assert_eq!(category_and_generation("x.large"), None);
    }

    #[test]
    fn gpu_and_windows_labels() {
        let mut g5 = m5_large();
        g5.name = "g5.xlarge".into();
        g5.family = "g5".into();
        g5.gpu = Some(Gpu {
            name: "a10g".into(),
            manufacturer: "nvidia".into(),
            count: 1,
            memory_mib: 22888,
        });
        let labels = instance_labels(&g5, "eu-west-1", AmiFamily::Windows2022).unwrap();
        assert_eq!(get(&labels, INSTANCE_GPU_NAME), Some("a10g"));
        assert_eq!(get(&labels, INSTANCE_GPU_MANUFACTURER), Some("nvidia"));
        assert_eq!(get(&labels, INSTANCE_GPU_COUNT), Some("1"));
        assert_eq!(get(&labels, INSTANCE_GPU_MEMORY), Some("22888"));
        assert_eq!(get(&labels, OS), Some("windows"));
        assert_eq!(get(&labels, WINDOWS_BUILD), Some("10.0.20348"));
        let mut arm = m5_large();
        arm.arch = Arch::Arm64;
        assert!(instance_labels(&arm, "eu-west-1", AmiFamily::Windows2022).is_none());
    }
}
