//! The hardware facts of an EC2 instance type, as read from the bundled
//! snapshot (`pricing-snapshots/instance_types.csv`): everything the
//! allocatable model and the label derivation need, and nothing regional.

/// A CPU architecture, spelled as the `kubernetes.io/arch` label spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// `amd64` (EC2's `x86_64`).
    Amd64,
    /// `arm64` (Graviton).
    Arm64,
}

impl Arch {
    /// The Kubernetes label value.
    pub const fn label(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }
}

/// The single GPU kind of an instance type (Karpenter only labels a type's
/// GPU when it has exactly one kind, and so does the snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// Lower-kebab-case model name, e.g. `h100`.
    pub name: String,
    /// Lower-case manufacturer: `nvidia`, `amd` or `habana`.
    pub manufacturer: String,
    /// Number of GPUs (0 for fractional-GPU types such as g6f).
    pub count: u32,
    /// Total GPU memory of the instance in MiB.
    pub memory_mib: u64,
}

/// The single inference/training accelerator kind of an instance type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accelerator {
    /// Lower-kebab-case name, e.g. `inferentia2`, `trainium`.
    pub name: String,
    /// Lower-case manufacturer, e.g. `aws`, `qualcomm`.
    pub manufacturer: String,
    /// Number of devices.
    pub count: u32,
}

impl Accelerator {
    /// Whether these are AWS Neuron devices (Inferentia/Trainium), which the
    /// Neuron device plugin exposes as `aws.amazon.com/neuron`.
    pub fn is_neuron(&self) -> bool {
        self.manufacturer == "aws"
    }

    /// NeuronCores per device (`aws.amazon.com/neuroncore` = devices × this).
    /// EC2 reports it in `NeuronInfo`; the snapshot does not carry it, so it
    /// is keyed by device name (values as Karpenter's instance-type docs show).
    pub fn neuron_cores_per_device(&self) -> u32 {
        match self.name.as_str() {
            "inferentia" => 4,
            "inferentia2" | "trainium" => 2,
            "trainium2" => 8,
            _ => 0,
        }
    }
}

/// Which purchase options EC2 supports for a type, when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageClasses {
    /// From DescribeInstanceTypes `SupportedUsageClasses`: whether `spot` is
    /// among them.
    Known {
        /// Spot is supported.
        spot: bool,
    },
    /// The snapshot has no usage classes for this type (launched after the
    /// 2025-03 listing).
    Unknown,
}

/// One instance type's hardware, independent of region and node class: one
/// field per column of the bundled instance-type table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSpec {
    /// e.g. `m5.large`.
    pub name: String,
    /// e.g. `m`.
    pub category: String,
    /// e.g. `m5`.
    pub family: String,
    /// e.g. 5.
    pub generation: u32,
    /// e.g. `large`, `metal-24xl`.
    pub size: String,
    /// Default vCPUs.
    pub vcpu: u32,
    /// Memory in MiB as EC2 reports it (before any overhead).
    pub memory_mib: u64,
    /// The architecture.
    pub arch: Arch,
    /// `intel`, `amd`, `aws` or `apple`.
    pub cpu_manufacturer: String,
    /// Sustained clock speed in MHz.
    pub cpu_clock_mhz: Option<u32>,
    /// `nitro`, `xen`, or empty for bare metal.
    pub hypervisor: String,
    /// A `*-flex` type.
    pub capability_flex: bool,
    /// Supports encryption in transit.
    pub encryption_in_transit: bool,
    /// Baseline network bandwidth in Mbit/s.
    pub network_bandwidth_mbps: Option<u64>,
    /// Maximum EBS bandwidth in Mbit/s.
    pub ebs_bandwidth_mbps: Option<u64>,
    /// Total local NVMe in GB (EC2 `TotalSizeInGB`), NVMe types only.
    pub local_nvme_gb: Option<u64>,
    /// Total instance store in GB, NVMe or not (what RAID0 can use).
    pub instance_store_gb: Option<u64>,
    /// The GPU kind, if any.
    pub gpu: Option<Gpu>,
    /// The accelerator kind, if any.
    pub accelerator: Option<Accelerator>,
    /// EFA interfaces (`vpc.amazonaws.com/efa`).
    pub efa: u32,
    /// Maximum ENIs on the default network card.
    pub enis_default_card: u32,
    /// IPv4 addresses per ENI.
    pub ipv4_per_eni: u32,
    /// Branch ENIs for security groups for pods (0 if not trunking capable).
    pub pod_eni: u32,
    /// Supported purchase options.
    pub usage_classes: UsageClasses,
    /// How many Spot Advisor regions list the type for Linux.
    pub spot_advisor_regions: u32,
}

/// Why the bundled instance-type table could not be read (a packaging bug,
/// reported rather than panicking).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file} line {line}: {reason}")]
pub struct SnapshotError {
    /// The snapshot file.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// What is wrong.
    pub reason: String,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An m5.large as EC2 describes it (3 ENIs × 10 IPv4, 8 GiB, 2 vCPU).
    pub(crate) fn m5_large() -> InstanceSpec {
        InstanceSpec {
            name: "m5.large".into(),
            category: "m".into(),
            family: "m5".into(),
            generation: 5,
            size: "large".into(),
            vcpu: 2,
            memory_mib: 8192,
            arch: Arch::Amd64,
            cpu_manufacturer: "intel".into(),
            cpu_clock_mhz: Some(3100),
            hypervisor: "nitro".into(),
            capability_flex: false,
            encryption_in_transit: false,
            network_bandwidth_mbps: Some(750),
            ebs_bandwidth_mbps: Some(4750),
            local_nvme_gb: None,
            instance_store_gb: None,
            gpu: None,
            accelerator: None,
            efa: 0,
            enis_default_card: 3,
            ipv4_per_eni: 10,
            pod_eni: 9,
            usage_classes: UsageClasses::Known { spot: true },
            spot_advisor_regions: 33,
        }
    }
}
