//! The EC2NodeClass settings that change an instance type's capacity and
//! allocatable: AMI family, kubelet overrides, root volume and instance-store
//! policy. The `karpenter` module reads them from YAML; the catalog applies
//! them (aws: pkg/providers/instancetype/types.go).

/// The AMI family of an EC2NodeClass (`spec.amiFamily`, or derived from
/// `amiSelectorTerms[].alias`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum AmiFamily {
    /// Amazon Linux 2.
    Al2,
    /// Amazon Linux 2023 (Karpenter's default).
    #[default]
    Al2023,
    /// Bottlerocket.
    Bottlerocket,
    /// Windows Server 2019.
    Windows2019,
    /// Windows Server 2022.
    Windows2022,
    /// Windows Server 2025.
    Windows2025,
    /// A custom AMI with user-supplied bootstrap.
    Custom,
}

impl AmiFamily {
    /// Parses the spelling Karpenter uses (`AL2023`, `Bottlerocket`, …) or an
    /// alias family (`al2023`, `bottlerocket`, `windows2022`).
    pub fn parse(text: &str) -> Option<AmiFamily> {
        Some(match text.to_ascii_lowercase().as_str() {
            "al2" => AmiFamily::Al2,
            "al2023" => AmiFamily::Al2023,
            "bottlerocket" => AmiFamily::Bottlerocket,
            "windows2019" => AmiFamily::Windows2019,
            "windows2022" => AmiFamily::Windows2022,
            "windows2025" => AmiFamily::Windows2025,
            "custom" => AmiFamily::Custom,
            _ => return None,
        })
    }

    /// Whether the family is a Windows one.
    pub fn is_windows(self) -> bool {
        matches!(
            self,
            AmiFamily::Windows2019 | AmiFamily::Windows2022 | AmiFamily::Windows2025
        )
    }
}

/// Per-resource reservations (`kubeReserved` / `systemReserved`); `None`
/// keeps the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Reserved {
    /// CPU in millicores.
    pub cpu_millis: Option<i64>,
    /// Memory in bytes.
    pub memory_bytes: Option<i64>,
    /// Ephemeral storage in bytes.
    pub ephemeral_bytes: Option<i64>,
}

/// An eviction threshold: an absolute quantity or a percentage of capacity.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Threshold {
    /// Not set: keep the default.
    #[default]
    Default,
    /// An absolute amount (bytes).
    Absolute(i64),
    /// A percentage of capacity, 0–100 (`"100%"` disables the threshold).
    Percent(f64),
}

/// The kubelet settings of an EC2NodeClass that affect allocatable.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KubeletSettings {
    /// `maxPods`.
    pub max_pods: Option<i64>,
    /// `podsPerCore`.
    pub pods_per_core: Option<i64>,
    /// `kubeReserved`.
    pub kube_reserved: Reserved,
    /// `systemReserved`.
    pub system_reserved: Reserved,
    /// `evictionHard["memory.available"]`.
    pub eviction_memory_available: Threshold,
    /// `evictionHard["nodefs.available"]`.
    pub eviction_nodefs_available: Threshold,
}

/// `spec.instanceStorePolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum InstanceStorePolicy {
    /// Not set: local NVMe is not used for ephemeral storage.
    #[default]
    None,
    /// `RAID0`: local NVMe disks become the node's ephemeral storage.
    Raid0,
}

/// Everything about an EC2NodeClass that shapes capacity and allocatable.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NodeClassSettings {
    /// The AMI family.
    pub ami_family: AmiFamily,
    /// Kubelet overrides.
    pub kubelet: KubeletSettings,
    /// Size of the root volume from `blockDeviceMappings` (`rootVolume: true`,
    /// or the family's root device), in bytes; `None` = the 20Gi default.
    pub root_volume_bytes: Option<i64>,
    /// The instance-store policy.
    pub instance_store_policy: InstanceStorePolicy,
}
