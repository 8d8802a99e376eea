//! The node labels Karpenter derives for an AWS instance type
//! (aws: pkg/providers/instancetype/types.go `computeRequirements`).
//!
//! Only single-valued labels are produced. Zone, zone id and capacity type
//! depend on the offering; `instance-tenancy` is multi-valued (default and
//! dedicated); `nitro-sandbox` needs data the snapshot lacks.

use super::nodeclass::AmiFamily;
use super::spec::InstanceSpec;
use crate::kube::labels::*;

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
/// cannot run the type at all (Windows on arm64: upstream leaves its LABEL_OS
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
        (LABEL_INSTANCE_TYPE, spec.name.clone()),
        (LABEL_ARCH, spec.arch.label().to_string()),
        (LABEL_OS, os.to_string()),
        (LABEL_TOPOLOGY_REGION, region.to_string()),
        (LABEL_INSTANCE_CPU, spec.vcpu.to_string()),
        (
            LABEL_INSTANCE_CPU_MANUFACTURER,
            spec.cpu_manufacturer.clone(),
        ),
        (LABEL_INSTANCE_MEMORY, spec.memory_mib.to_string()),
        (LABEL_INSTANCE_HYPERVISOR, spec.hypervisor.clone()),
        (
            LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED,
            spec.encryption_in_transit.to_string(),
        ),
        (
            LABEL_INSTANCE_CAPABILITY_FLEX,
            spec.name
                .split('.')
                .next()
                .unwrap_or("")
                .contains("-flex")
                .to_string(),
        ),
    ];
    if let Some(build) = windows_build(ami_family) {
        labels.push((LABEL_WINDOWS_BUILD, build.to_string()));
    }
    if let Some((category, generation)) = category_and_generation(&spec.name) {
        labels.push((LABEL_INSTANCE_CATEGORY, category.to_string()));
        labels.push((LABEL_INSTANCE_GENERATION, generation.to_string()));
    }
    if let Some((family, size)) = spec.name.split_once('.')
        && !size.contains('.')
    {
        labels.push((LABEL_INSTANCE_FAMILY, family.to_string()));
        labels.push((LABEL_INSTANCE_SIZE, size.to_string()));
    }
    if let Some(mhz) = spec.cpu_clock_mhz {
        labels.push((
            LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
            mhz.to_string(),
        ));
    }
    if let Some(mbps) = spec.ebs_bandwidth_mbps {
        labels.push((LABEL_INSTANCE_EBS_BANDWIDTH, mbps.to_string()));
    }
    if let Some(mbps) = spec.network_bandwidth_mbps {
        labels.push((LABEL_INSTANCE_NETWORK_BANDWIDTH, mbps.to_string()));
    }
    if let Some(gb) = spec.local_nvme_gb {
        labels.push((LABEL_INSTANCE_LOCAL_NVME, gb.to_string()));
    }
    if let Some(gpu) = &spec.gpu {
        labels.push((LABEL_INSTANCE_GPU_NAME, gpu.name.clone()));
        labels.push((LABEL_INSTANCE_GPU_MANUFACTURER, gpu.manufacturer.clone()));
        labels.push((LABEL_INSTANCE_GPU_COUNT, gpu.count.to_string()));
        labels.push((LABEL_INSTANCE_GPU_MEMORY, gpu.memory_mib.to_string()));
    }
    if let Some(accelerator) = &spec.accelerator {
        labels.push((LABEL_INSTANCE_ACCELERATOR_NAME, accelerator.name.clone()));
        labels.push((
            LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
            accelerator.manufacturer.clone(),
        ));
        labels.push((
            LABEL_INSTANCE_ACCELERATOR_COUNT,
            accelerator.count.to_string(),
        ));
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
        assert_eq!(get(&labels, LABEL_INSTANCE_CATEGORY), Some("m"));
        assert_eq!(get(&labels, LABEL_INSTANCE_FAMILY), Some("m5"));
        assert_eq!(get(&labels, LABEL_INSTANCE_GENERATION), Some("5"));
        assert_eq!(get(&labels, LABEL_INSTANCE_SIZE), Some("large"));
        assert_eq!(get(&labels, LABEL_ARCH), Some("amd64"));
        assert_eq!(get(&labels, LABEL_OS), Some("linux"));
        assert_eq!(get(&labels, LABEL_TOPOLOGY_REGION), Some("us-east-1"));
        assert_eq!(get(&labels, LABEL_INSTANCE_CPU), Some("2"));
        assert_eq!(get(&labels, LABEL_INSTANCE_MEMORY), Some("8192"));
        assert_eq!(get(&labels, LABEL_INSTANCE_CAPABILITY_FLEX), Some("false"));
        assert_eq!(get(&labels, LABEL_INSTANCE_GPU_NAME), None);
        assert_eq!(get(&labels, LABEL_WINDOWS_BUILD), None);
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
        assert_eq!(get(&labels, LABEL_INSTANCE_GPU_NAME), Some("a10g"));
        assert_eq!(
            get(&labels, LABEL_INSTANCE_GPU_MANUFACTURER),
            Some("nvidia")
        );
        assert_eq!(get(&labels, LABEL_INSTANCE_GPU_COUNT), Some("1"));
        assert_eq!(get(&labels, LABEL_INSTANCE_GPU_MEMORY), Some("22888"));
        assert_eq!(get(&labels, LABEL_OS), Some("windows"));
        assert_eq!(get(&labels, LABEL_WINDOWS_BUILD), Some("10.0.20348"));
        let mut arm = m5_large();
        arm.arch = Arch::Arm64;
        assert!(instance_labels(&arm, "eu-west-1", AmiFamily::Windows2022).is_none());
    }
}
