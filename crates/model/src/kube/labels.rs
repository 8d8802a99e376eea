//! Node label vocabulary with Karpenter's meaning: well-known label keys and
//! values (core and AWS provider), the "well-known" key set that may stay
//! undefined when checking compatibility, restricted-label rules, beta-key
//! normalisation, syntax checks for keys and values, and a sorted `Labels` map.
//!
//! Facts come from core `pkg/apis/v1/labels.go` and aws `pkg/apis/v1/labels.go`.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

// ---------------------------------------------------------------------------------------------
// Kubernetes label keys

/// `kubernetes.io/hostname` (restricted: Karpenter never lets users constrain it).
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// `topology.kubernetes.io/zone`
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
/// `topology.kubernetes.io/region`
pub const LABEL_TOPOLOGY_REGION: &str = "topology.kubernetes.io/region";
/// `node.kubernetes.io/instance-type`
pub const LABEL_INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// `kubernetes.io/arch`
pub const LABEL_ARCH: &str = "kubernetes.io/arch";
/// `kubernetes.io/os`
pub const LABEL_OS: &str = "kubernetes.io/os";
/// `node.kubernetes.io/windows-build`
pub const LABEL_WINDOWS_BUILD: &str = "node.kubernetes.io/windows-build";

/// Deprecated `failure-domain.beta.kubernetes.io/zone` (normalised to the zone key).
pub const LABEL_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
/// Deprecated `failure-domain.beta.kubernetes.io/region` (normalised to the region key).
pub const LABEL_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
/// Deprecated `beta.kubernetes.io/arch` (normalised to the arch key).
pub const LABEL_BETA_ARCH: &str = "beta.kubernetes.io/arch";
/// Deprecated `beta.kubernetes.io/os` (normalised to the os key).
pub const LABEL_BETA_OS: &str = "beta.kubernetes.io/os";
/// Deprecated `beta.kubernetes.io/instance-type` (normalised to the instance-type key).
pub const LABEL_BETA_INSTANCE_TYPE: &str = "beta.kubernetes.io/instance-type";

/// Architecture value `amd64`.
pub const ARCH_AMD64: &str = "amd64";
/// Architecture value `arm64`.
pub const ARCH_ARM64: &str = "arm64";

// ---------------------------------------------------------------------------------------------
// Karpenter (core) label keys and values

/// The Karpenter API group, also its reserved label domain.
pub const KARPENTER_DOMAIN: &str = "karpenter.sh";
/// `karpenter.sh/nodepool`
pub const LABEL_NODEPOOL: &str = "karpenter.sh/nodepool";
/// `karpenter.sh/capacity-type`
pub const LABEL_CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";
/// `karpenter.sh/initialized`
pub const LABEL_NODE_INITIALIZED: &str = "karpenter.sh/initialized";
/// `karpenter.sh/registered`
pub const LABEL_NODE_REGISTERED: &str = "karpenter.sh/registered";
/// `karpenter.sh/do-not-sync-taints`
pub const LABEL_DO_NOT_SYNC_TAINTS: &str = "karpenter.sh/do-not-sync-taints";

/// Capacity type `spot`.
pub const CAPACITY_TYPE_SPOT: &str = "spot";
/// Capacity type `on-demand`.
pub const CAPACITY_TYPE_ON_DEMAND: &str = "on-demand";
/// Capacity type `reserved`.
pub const CAPACITY_TYPE_RESERVED: &str = "reserved";

// ---------------------------------------------------------------------------------------------
// AWS provider label keys and values

/// The AWS provider API group, also a reserved label domain.
pub const AWS_DOMAIN: &str = "karpenter.k8s.aws";
/// `topology.k8s.aws/zone-id`
pub const LABEL_TOPOLOGY_ZONE_ID: &str = "topology.k8s.aws/zone-id";
/// `karpenter.k8s.aws/ec2nodeclass` (not well-known: restricted in requirements).
pub const LABEL_EC2_NODECLASS: &str = "karpenter.k8s.aws/ec2nodeclass";
/// `karpenter.k8s.aws/capacity-reservation-id`
pub const LABEL_CAPACITY_RESERVATION_ID: &str = "karpenter.k8s.aws/capacity-reservation-id";
/// `karpenter.k8s.aws/capacity-reservation-type`
pub const LABEL_CAPACITY_RESERVATION_TYPE: &str = "karpenter.k8s.aws/capacity-reservation-type";
/// `karpenter.k8s.aws/capacity-reservation-interruptible`
pub const LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE: &str =
    "karpenter.k8s.aws/capacity-reservation-interruptible";
/// `karpenter.k8s.aws/instance-hypervisor`
pub const LABEL_INSTANCE_HYPERVISOR: &str = "karpenter.k8s.aws/instance-hypervisor";
/// `karpenter.k8s.aws/instance-encryption-in-transit-supported`
pub const LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: &str =
    "karpenter.k8s.aws/instance-encryption-in-transit-supported";
/// `karpenter.k8s.aws/nitro-sandbox`
pub const LABEL_INSTANCE_NITRO_SANDBOX: &str = "karpenter.k8s.aws/nitro-sandbox";
/// `karpenter.k8s.aws/instance-category` (e.g. `m` for m5.large)
pub const LABEL_INSTANCE_CATEGORY: &str = "karpenter.k8s.aws/instance-category";
/// `karpenter.k8s.aws/instance-capability-flex`
pub const LABEL_INSTANCE_CAPABILITY_FLEX: &str = "karpenter.k8s.aws/instance-capability-flex";
/// `karpenter.k8s.aws/instance-family` (e.g. `m5`)
pub const LABEL_INSTANCE_FAMILY: &str = "karpenter.k8s.aws/instance-family";
/// `karpenter.k8s.aws/instance-generation` (e.g. `5`)
pub const LABEL_INSTANCE_GENERATION: &str = "karpenter.k8s.aws/instance-generation";
/// `karpenter.k8s.aws/instance-local-nvme`
pub const LABEL_INSTANCE_LOCAL_NVME: &str = "karpenter.k8s.aws/instance-local-nvme";
/// `karpenter.k8s.aws/instance-size` (e.g. `large`)
pub const LABEL_INSTANCE_SIZE: &str = "karpenter.k8s.aws/instance-size";
/// `karpenter.k8s.aws/instance-cpu`
pub const LABEL_INSTANCE_CPU: &str = "karpenter.k8s.aws/instance-cpu";
/// `karpenter.k8s.aws/instance-cpu-manufacturer`
pub const LABEL_INSTANCE_CPU_MANUFACTURER: &str = "karpenter.k8s.aws/instance-cpu-manufacturer";
/// `karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz`
pub const LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ: &str =
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz";
/// `karpenter.k8s.aws/instance-memory` (MiB)
pub const LABEL_INSTANCE_MEMORY: &str = "karpenter.k8s.aws/instance-memory";
/// `karpenter.k8s.aws/instance-ebs-bandwidth`
pub const LABEL_INSTANCE_EBS_BANDWIDTH: &str = "karpenter.k8s.aws/instance-ebs-bandwidth";
/// `karpenter.k8s.aws/instance-network-bandwidth`
pub const LABEL_INSTANCE_NETWORK_BANDWIDTH: &str = "karpenter.k8s.aws/instance-network-bandwidth";
/// `karpenter.k8s.aws/instance-gpu-name`
pub const LABEL_INSTANCE_GPU_NAME: &str = "karpenter.k8s.aws/instance-gpu-name";
/// `karpenter.k8s.aws/instance-gpu-manufacturer`
pub const LABEL_INSTANCE_GPU_MANUFACTURER: &str = "karpenter.k8s.aws/instance-gpu-manufacturer";
/// `karpenter.k8s.aws/instance-gpu-count`
pub const LABEL_INSTANCE_GPU_COUNT: &str = "karpenter.k8s.aws/instance-gpu-count";
/// `karpenter.k8s.aws/instance-gpu-memory`
pub const LABEL_INSTANCE_GPU_MEMORY: &str = "karpenter.k8s.aws/instance-gpu-memory";
/// `karpenter.k8s.aws/instance-accelerator-name`
pub const LABEL_INSTANCE_ACCELERATOR_NAME: &str = "karpenter.k8s.aws/instance-accelerator-name";
/// `karpenter.k8s.aws/instance-accelerator-manufacturer`
pub const LABEL_INSTANCE_ACCELERATOR_MANUFACTURER: &str =
    "karpenter.k8s.aws/instance-accelerator-manufacturer";
/// `karpenter.k8s.aws/instance-accelerator-count`
pub const LABEL_INSTANCE_ACCELERATOR_COUNT: &str = "karpenter.k8s.aws/instance-accelerator-count";
/// `karpenter.k8s.aws/instance-tenancy` (`default` | `dedicated`)
pub const LABEL_INSTANCE_TENANCY: &str = "karpenter.k8s.aws/instance-tenancy";
/// `karpenter.k8s.aws/placement-group-id`
pub const LABEL_PLACEMENT_GROUP_ID: &str = "karpenter.k8s.aws/placement-group-id";
/// `karpenter.k8s.aws/placement-group-partition`
pub const LABEL_PLACEMENT_GROUP_PARTITION: &str = "karpenter.k8s.aws/placement-group-partition";

/// Tenancy value `default`.
pub const TENANCY_DEFAULT: &str = "default";
/// Tenancy value `dedicated`.
pub const TENANCY_DEDICATED: &str = "dedicated";

// ---------------------------------------------------------------------------------------------
// Well-known sets

/// Core Karpenter's well-known labels, in the order used when suggesting a
/// likely typo (most commonly meant first).
pub const CORE_WELL_KNOWN_LABELS: [&str; 8] = [
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_INSTANCE_TYPE,
    LABEL_ARCH,
    LABEL_OS,
    LABEL_CAPACITY_TYPE,
    LABEL_WINDOWS_BUILD,
];

/// Labels the AWS provider adds to the well-known set.
pub const AWS_WELL_KNOWN_LABELS: [&str; 29] = [
    LABEL_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_RESERVATION_TYPE,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_INSTANCE_HYPERVISOR,
    LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED,
    LABEL_INSTANCE_NITRO_SANDBOX,
    LABEL_INSTANCE_CATEGORY,
    LABEL_INSTANCE_CAPABILITY_FLEX,
    LABEL_INSTANCE_FAMILY,
    LABEL_INSTANCE_GENERATION,
    LABEL_INSTANCE_SIZE,
    LABEL_INSTANCE_LOCAL_NVME,
    LABEL_INSTANCE_CPU,
    LABEL_INSTANCE_CPU_MANUFACTURER,
    LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
    LABEL_INSTANCE_MEMORY,
    LABEL_INSTANCE_EBS_BANDWIDTH,
    LABEL_INSTANCE_NETWORK_BANDWIDTH,
    LABEL_INSTANCE_GPU_NAME,
    LABEL_INSTANCE_GPU_MANUFACTURER,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_GPU_MEMORY,
    LABEL_INSTANCE_ACCELERATOR_NAME,
    LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
    LABEL_INSTANCE_ACCELERATOR_COUNT,
    LABEL_TOPOLOGY_ZONE_ID,
    LABEL_INSTANCE_TENANCY,
    LABEL_PLACEMENT_GROUP_ID,
    LABEL_PLACEMENT_GROUP_PARTITION,
];

/// A set of label keys with fast membership tests and a stable iteration
/// order (the order keys were given in, used for typo hints).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelKeySet {
    in_order: Vec<String>,
    sorted: Vec<String>,
}

impl LabelKeySet {
    /// The empty set (strict compatibility: no key may stay undefined).
    pub const fn new() -> LabelKeySet {
        LabelKeySet {
            in_order: Vec::new(),
            sorted: Vec::new(),
        }
    }

    /// Builds a set; duplicates keep their first position.
    pub fn from_keys<I, S>(keys: I) -> LabelKeySet
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut set = LabelKeySet::new();
        for key in keys {
            set.insert(key.into());
        }
        set
    }

    /// Adds a key (no-op when present).
    pub fn insert(&mut self, key: String) {
        if let Err(position) = self.sorted.binary_search(&key) {
            self.sorted.insert(position, key.clone());
            self.in_order.push(key);
        }
    }

    /// Whether `key` is in the set.
    pub fn contains(&self, key: &str) -> bool {
        self.sorted
            .binary_search_by(|probe| probe.as_str().cmp(key))
            .is_ok()
    }

    /// Keys in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.in_order.iter().map(String::as_str)
    }

    /// Keys in sorted order.
    pub fn sorted(&self) -> impl Iterator<Item = &str> {
        self.sorted.iter().map(String::as_str)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }
}

/// The empty key set, for strict compatibility checks.
pub static NO_UNDEFINED_LABELS: LabelKeySet = LabelKeySet::new();

static CORE_WELL_KNOWN: LazyLock<LabelKeySet> =
    LazyLock::new(|| LabelKeySet::from_keys(CORE_WELL_KNOWN_LABELS));

static AWS_WELL_KNOWN: LazyLock<LabelKeySet> = LazyLock::new(|| {
    LabelKeySet::from_keys(
        CORE_WELL_KNOWN_LABELS
            .iter()
            .chain(AWS_WELL_KNOWN_LABELS.iter())
            .copied(),
    )
});

/// Core Karpenter's well-known labels (what a provider without extra labels uses).
pub fn core_well_known_labels() -> &'static LabelKeySet {
    &CORE_WELL_KNOWN
}

/// The well-known labels of Karpenter with the AWS provider (core + AWS).
/// These may stay undefined on a NodePool and still be requested by pods
/// (`AllowUndefinedWellKnownLabels`), and are exempt from restricted domains.
pub fn well_known_labels() -> &'static LabelKeySet {
    &AWS_WELL_KNOWN
}

/// Whether `key` is a well-known label of Karpenter with the AWS provider.
pub fn is_well_known_label(key: &str) -> bool {
    well_known_labels().contains(key)
}

/// The only meaningful values of a well-known label, where Karpenter knows
/// them: capacity type (core) and instance tenancy (AWS).
pub fn well_known_values(key: &str) -> Option<&'static [&'static str]> {
    match key {
        LABEL_CAPACITY_TYPE => Some(&[
            CAPACITY_TYPE_ON_DEMAND,
            CAPACITY_TYPE_SPOT,
            CAPACITY_TYPE_RESERVED,
        ]),
        LABEL_INSTANCE_TENANCY => Some(&[TENANCY_DEDICATED, TENANCY_DEFAULT]),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Normalisation

/// Deprecated keys and the current key each one means.
pub const NORMALIZED_LABELS: [(&str, &str); 5] = [
    (LABEL_BETA_ZONE, LABEL_TOPOLOGY_ZONE),
    (LABEL_BETA_ARCH, LABEL_ARCH),
    (LABEL_BETA_OS, LABEL_OS),
    (LABEL_BETA_INSTANCE_TYPE, LABEL_INSTANCE_TYPE),
    (LABEL_BETA_REGION, LABEL_TOPOLOGY_REGION),
];

/// Maps a deprecated beta key to its current key; other keys are returned
/// unchanged. (Karpenter also has a per-key value translation table, which
/// is empty upstream, so values are never rewritten here.)
#[inline(always)]
pub fn normalize_label_key(key: &str) -> &str {
    // Every deprecated key starts with "beta." or "failure-domain.".
    if matches!(key.as_bytes().first(), Some(b'b' | b'f')) {
        normalize_beta_key(key)
    } else {
        key
    }
}

fn normalize_beta_key(key: &str) -> &str {
    for (beta, current) in NORMALIZED_LABELS {
        if key == beta {
            return current;
        }
    }
    key
}

/// The deprecated alias of a current key, if it has one.
pub fn beta_alias(current_key: &str) -> Option<&'static str> {
    NORMALIZED_LABELS
        .iter()
        .find(|(_, current)| *current == current_key)
        .map(|(beta, _)| *beta)
}

// ---------------------------------------------------------------------------------------------
// Restricted labels and syntax

/// Why a label key or value is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// The key is reserved for Karpenter or the kubelet.
    #[error(
        "using label {key} is not allowed as it might interfere with the internal provisioning \
         logic; specify a well known label or a custom label that does not use a restricted \
         domain ({domains})"
    )]
    Restricted {
        /// The offending key.
        key: String,
        /// The restricted domains of the rule set that was applied.
        domains: String,
    },
    /// The key is not a Kubernetes qualified name.
    #[error("key {key:?} is not a qualified name: {reason}")]
    InvalidKey {
        /// The offending key.
        key: String,
        /// Which syntax rule failed.
        reason: String,
    },
    /// The value is not a valid Kubernetes label value.
    #[error("invalid label value {value:?}: {reason}")]
    InvalidValue {
        /// The offending value.
        value: String,
        /// Which syntax rule failed.
        reason: String,
    },
}

/// Which generation of Karpenter's restricted-label rules to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestrictedLabelRules {
    /// Karpenter v1.10 and later: only `kubernetes.io/hostname` and the
    /// `karpenter.sh` / `karpenter.k8s.aws` domains (and their subdomains)
    /// are restricted, well-known keys excepted.
    #[default]
    Current,
    /// Karpenter before v1.10: additionally every domain ending in
    /// `kubernetes.io` or `k8s.io`, except domains ending in
    /// `node.kubernetes.io`, `node-restriction.kubernetes.io` or `kops.k8s.io`.
    BeforeV1_10,
}

/// The domain part of a key (`""` when the key has no `/`).
pub fn label_domain(key: &str) -> &str {
    key.split_once('/').map_or("", |(domain, _)| domain)
}

/// Checks a (normalised) requirement or template label key against
/// Karpenter-with-AWS restricted-label rules (core `IsRestrictedLabel`).
pub fn check_restricted_label(key: &str, rules: RestrictedLabelRules) -> Result<(), LabelError> {
    if is_well_known_label(key) {
        return Ok(());
    }
    let domain = label_domain(key);
    let restricted = match rules {
        RestrictedLabelRules::Current => {
            [KARPENTER_DOMAIN, AWS_DOMAIN]
                .iter()
                .any(|restricted| is_same_or_subdomain(domain, restricted))
                || key == LABEL_HOSTNAME
        }
        RestrictedLabelRules::BeforeV1_10 => {
            // Older rule compares plain suffixes, without a dot boundary.
            let excepted = [
                "kops.k8s.io",
                "node.kubernetes.io",
                "node-restriction.kubernetes.io",
            ]
            .iter()
            .any(|exception| domain.ends_with(exception));
            !excepted
                && (["kubernetes.io", "k8s.io", KARPENTER_DOMAIN, AWS_DOMAIN]
                    .iter()
                    .any(|restricted| domain.ends_with(restricted))
                    || key == LABEL_HOSTNAME)
        }
    };
    if restricted {
        let domains = match rules {
            RestrictedLabelRules::Current => "karpenter.k8s.aws, karpenter.sh",
            RestrictedLabelRules::BeforeV1_10 => {
                "k8s.io, karpenter.k8s.aws, karpenter.sh, kubernetes.io"
            }
        };
        return Err(LabelError::Restricted {
            key: key.to_string(),
            domains: domains.to_string(),
        });
    }
    Ok(())
}

fn is_same_or_subdomain(domain: &str, parent: &str) -> bool {
    domain == parent
        || (domain.len() > parent.len()
            && domain.ends_with(parent)
            && domain.as_bytes()[domain.len() - parent.len() - 1] == b'.')
}

const QUALIFIED_NAME_MAX_LEN: usize = 63;
const DNS_SUBDOMAIN_MAX_LEN: usize = 253;

/// Checks Kubernetes' qualified-name syntax for a label key: optional
/// DNS-subdomain prefix and `/`, then a name of at most 63 characters made of
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
pub fn validate_label_key(key: &str) -> Result<(), LabelError> {
    let invalid = |reason: &str| LabelError::InvalidKey {
        key: key.to_string(),
        reason: reason.to_string(),
    };
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err(invalid("prefix part must be non-empty"));
        }
        if !is_dns_subdomain(prefix) {
            return Err(invalid(
                "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters",
            ));
        }
    }
    if name.is_empty() {
        return Err(invalid("name part must be non-empty"));
    }
    if !is_label_name(name) {
        return Err(invalid(
            "name part must be at most 63 characters of alphanumerics, '-', '_' or '.', \
             starting and ending with an alphanumeric character",
        ));
    }
    Ok(())
}

/// Checks Kubernetes' label-value syntax: empty, or at most 63 characters of
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
pub fn validate_label_value(value: &str) -> Result<(), LabelError> {
    if value.is_empty() || is_label_name(value) {
        return Ok(());
    }
    Err(LabelError::InvalidValue {
        value: value.to_string(),
        reason: "must be empty or at most 63 characters of alphanumerics, '-', '_' or '.', \
                 starting and ending with an alphanumeric character"
            .to_string(),
    })
}

fn is_label_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= QUALIFIED_NAME_MAX_LEN
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns_subdomain(domain: &str) -> bool {
    domain.len() <= DNS_SUBDOMAIN_MAX_LEN
        && domain.split('.').all(|part| {
            let bytes = part.as_bytes();
            !bytes.is_empty()
                && is_lower_alphanumeric(bytes[0])
                && is_lower_alphanumeric(bytes[bytes.len() - 1])
                && bytes
                    .iter()
                    .all(|b| is_lower_alphanumeric(*b) || *b == b'-')
        })
}

fn is_lower_alphanumeric(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

// ---------------------------------------------------------------------------------------------
// Labels

/// A label map with deterministic (sorted) iteration. Keys are stored as
/// given; matching code normalises beta keys where Karpenter does.
///
/// Shared until changed (copy on write): copies are cheap, and a copy
/// compared with the map it was taken from is equal by address, without
/// reading the labels (caches keyed by a node's labels rely on that).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(Arc<BTreeMap<String, String>>);

impl serde::Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        BTreeMap::serialize(&self.0, serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Labels {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Labels, D::Error> {
        BTreeMap::deserialize(deserializer).map(Labels::from)
    }
}

impl Labels {
    /// An empty label map.
    pub fn new() -> Labels {
        Labels::default()
    }

    /// Sets a label, returning the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        Arc::make_mut(&mut self.0).insert(key.into(), value.into())
    }

    /// The value of `key`, exactly as stored.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The value for a current (normalised) key, falling back to its
    /// deprecated beta alias when only that is present.
    pub fn get_normalized(&self, current_key: &str) -> Option<&str> {
        self.get(current_key)
            .or_else(|| beta_alias(current_key).and_then(|beta| self.get(beta)))
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Removes a label, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        if !self.0.contains_key(key) {
            return None;
        }
        Arc::make_mut(&mut self.0).remove(key)
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Labels in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Copies every label of `other` over this map (later wins, like `lo.Assign`).
    pub fn extend_from(&mut self, other: &Labels) {
        for (k, v) in other.iter() {
            self.insert(k, v);
        }
    }

    /// The underlying sorted map.
    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Labels {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Labels {
        Labels(Arc::new(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        ))
    }
}

impl From<BTreeMap<String, String>> for Labels {
    fn from(map: BTreeMap<String, String>) -> Labels {
        Labels(Arc::new(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies share the map until one changes: the change stays in the
    /// copy (the original, and other copies, keep their labels), and the
    /// copies compare as their contents do.
    #[test]
    fn copies_change_alone() {
        let original: Labels = [("zone", "a"), ("arch", "amd64")].into_iter().collect();
        let kept = original.clone();
        let mut changed = original.clone();
        changed.insert("zone", "b");
        assert_eq!(original.get("zone"), Some("a"));
        assert_eq!(kept, original);
        assert_ne!(changed, original);
        let mut removed = original.clone();
        assert_eq!(removed.remove("absent"), None);
        assert_eq!(removed.remove("arch").as_deref(), Some("amd64"));
        assert_eq!(original.len(), 2);
        assert_eq!(removed.len(), 1);
        let json = serde_json::to_string(&original).unwrap_or_default();
        assert_eq!(json, r#"{"arch":"amd64","zone":"a"}"#);
    }

    /// core: pkg/apis/v1/labels.go `NormalizedLabels` — the five beta keys map to GA keys.
    #[test]
    fn beta_keys_normalise_to_ga_keys() {
        assert_eq!(normalize_label_key(LABEL_BETA_ZONE), LABEL_TOPOLOGY_ZONE);
        assert_eq!(
            normalize_label_key(LABEL_BETA_REGION),
            LABEL_TOPOLOGY_REGION
        );
        assert_eq!(normalize_label_key(LABEL_BETA_ARCH), LABEL_ARCH);
        assert_eq!(normalize_label_key(LABEL_BETA_OS), LABEL_OS);
        assert_eq!(
            normalize_label_key(LABEL_BETA_INSTANCE_TYPE),
            LABEL_INSTANCE_TYPE
        );
        assert_eq!(normalize_label_key("example.com/team"), "example.com/team");
        // Every entry of the table, including any added later, is found.
        for (beta, current) in NORMALIZED_LABELS {
            assert_eq!(normalize_label_key(beta), current);
        }
        assert_eq!(beta_alias(LABEL_ARCH), Some(LABEL_BETA_ARCH));
        assert_eq!(beta_alias(LABEL_NODEPOOL), None);
    }

    /// core labels.go `WellKnownLabels` + aws labels.go `init()` additions.
    #[test]
    fn well_known_sets_hold_core_and_aws_keys() {
        let core = core_well_known_labels();
        assert_eq!(core.len(), 8);
        assert!(core.contains(LABEL_WINDOWS_BUILD));
        assert!(!core.contains(LABEL_INSTANCE_FAMILY));
        let aws = well_known_labels();
        assert_eq!(aws.len(), 37);
        for key in [
            LABEL_INSTANCE_FAMILY,
            LABEL_TOPOLOGY_ZONE_ID,
            LABEL_CAPACITY_TYPE,
        ] {
            assert!(aws.contains(key), "{key}");
        }
        // Not well-known: the hostname and the node class label.
        assert!(!aws.contains(LABEL_HOSTNAME));
        assert!(!aws.contains(LABEL_EC2_NODECLASS));
        // Insertion order keeps core keys first (used for typo hints).
        assert_eq!(aws.iter().next(), Some(LABEL_NODEPOOL));
    }

    /// core labels.go `WellKnownValuesForRequirements`; aws adds tenancy.
    #[test]
    fn well_known_values_for_capacity_type_and_tenancy() {
        assert_eq!(
            well_known_values(LABEL_CAPACITY_TYPE).map(<[_]>::len),
            Some(3)
        );
        assert!(
            well_known_values(LABEL_INSTANCE_TENANCY)
                .is_some_and(|values| values.contains(&"dedicated"))
        );
        assert_eq!(well_known_values(LABEL_TOPOLOGY_ZONE), None);
    }

    /// core labels.go `IsRestrictedLabel` (v1.10+): hostname, karpenter.sh domain
    /// and subdomains except well-known keys; aws adds the karpenter.k8s.aws domain.
    #[test]
    fn current_restricted_label_rules() {
        let check = |key| check_restricted_label(key, RestrictedLabelRules::Current).is_ok();
        assert!(!check(LABEL_HOSTNAME));
        assert!(check(LABEL_NODEPOOL));
        assert!(check(LABEL_CAPACITY_TYPE));
        assert!(!check("karpenter.sh/custom"));
        assert!(!check("sub.karpenter.sh/custom"));
        assert!(!check(LABEL_NODE_INITIALIZED));
        assert!(check(LABEL_INSTANCE_FAMILY));
        assert!(!check("karpenter.k8s.aws/custom"));
        assert!(!check(LABEL_EC2_NODECLASS));
        // Dot boundary: a domain merely ending in the text is not a subdomain.
        assert!(check("notkarpenter.sh/custom"));
        // kubernetes.io domains are not restricted any more.
        assert!(check("example.kubernetes.io/team"));
        assert!(check("k8s.io/custom"));
        assert!(check("team"));
    }

    /// core labels.go before commit 37f5de7 (v1.10): kubernetes.io and k8s.io domains
    /// restricted, except node.kubernetes.io, node-restriction.kubernetes.io, kops.k8s.io.
    #[test]
    fn legacy_restricted_label_rules() {
        let check = |key| check_restricted_label(key, RestrictedLabelRules::BeforeV1_10).is_ok();
        assert!(!check("example.kubernetes.io/team"));
        assert!(!check("k8s.io/custom"));
        assert!(!check(LABEL_HOSTNAME));
        assert!(check("node.kubernetes.io/custom"));
        assert!(check("node-restriction.kubernetes.io/custom"));
        assert!(check("kops.k8s.io/instancegroup"));
        assert!(check(LABEL_ARCH));
        assert!(check(LABEL_WINDOWS_BUILD));
        assert!(!check("karpenter.sh/custom"));
        assert!(check("example.com/team"));
        let error = check_restricted_label("karpenter.sh/custom", RestrictedLabelRules::Current)
            .expect_err("restricted");
        assert!(error.to_string().contains("karpenter.sh/custom"));
    }

    /// k8s apimachinery `IsQualifiedName` / `IsValidLabelValue` syntax.
    #[test]
    fn key_and_value_syntax() {
        assert!(validate_label_key("example.com/team").is_ok());
        assert!(validate_label_key("team_a.b-c").is_ok());
        assert!(validate_label_key("/team").is_err());
        assert!(validate_label_key("Example.com/team").is_err());
        assert!(validate_label_key("example.com/").is_err());
        assert!(validate_label_key("-team").is_err());
        assert!(validate_label_key(&"a".repeat(64)).is_err());
        assert!(validate_label_key(&"a".repeat(63)).is_ok());
        assert!(validate_label_value("").is_ok());
        assert!(validate_label_value("us-east-1a").is_ok());
        assert!(validate_label_value("bad value").is_err());
        assert!(validate_label_value("trailing-").is_err());
    }

    #[test]
    fn labels_iterate_sorted_and_find_beta_aliases() {
        let labels: Labels = [("b", "2"), ("a", "1"), (LABEL_BETA_ARCH, "arm64")]
            .into_iter()
            .collect();
        let keys: Vec<&str> = labels.keys().collect();
        assert_eq!(keys, vec!["a", "b", LABEL_BETA_ARCH]);
        assert_eq!(labels.get_normalized(LABEL_ARCH), Some("arm64"));
        assert_eq!(labels.get_normalized(LABEL_OS), None);
    }
}
