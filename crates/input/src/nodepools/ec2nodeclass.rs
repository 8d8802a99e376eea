//! `karpenter.k8s.aws/v1` EC2NodeClass, read into the
//! [`NodeClassSettings`] that shape a node's capacity and allocatable.
//! `spec.capacityReservationSelectorTerms` is read into the terms that pick
//! the scenario's capacity reservations the NodeClass may launch into.
//! Unknown fields are errors; real fields that karpsim does not model
//! (subnets, security groups, IAM, tags, user data, ...) get one warning each.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::nodepool::{At, RawObject, object_name};
use crate::cloud::nodeclass::{
    AmiFamily, InstanceStorePolicy, KubeletSettings, NodeClassSettings, Reserved, Threshold,
};
use crate::cloud::reservation::ReservationSelectorTerm;
use crate::kube::quantity::Quantity;
use crate::manifest::{Document, Located, ManifestError, Position, Warnings};

/// An EC2NodeClass.
#[derive(Debug, Clone, PartialEq)]
pub struct Ec2NodeClass {
    /// `metadata.name`.
    pub name: String,
    /// Where `metadata.name` is written.
    pub position: Position,
    /// What shapes capacity.
    pub settings: NodeClassSettings,
    /// `spec.capacityReservationSelectorTerms` (empty: no reservation).
    pub capacity_reservation_terms: Vec<ReservationSelectorTerm>,
}

type Unmodelled = Option<Located<IgnoredAny>>;

/// `spec` as written: one field per field of the EC2NodeClass CRD, so that
/// every unknown one is an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSpec {
    ami_family: Option<Located<String>>,
    ami_selector_terms: Option<Vec<RawAmiTerm>>,
    kubelet: Option<RawKubelet>,
    block_device_mappings: Option<Vec<RawBlockDevice>>,
    instance_store_policy: Option<Located<String>>,
    subnet_selector_terms: Unmodelled,
    security_group_selector_terms: Unmodelled,
    capacity_reservation_selector_terms: Option<Located<Vec<Located<RawReservationTerm>>>>,
    placement_group_selector_terms: Unmodelled,
    role: Unmodelled,
    instance_profile: Unmodelled,
    tags: Unmodelled,
    user_data: Unmodelled,
    metadata_options: Unmodelled,
    detailed_monitoring: Unmodelled,
    #[serde(rename = "associatePublicIPAddress")]
    associate_public_ip_address: Unmodelled,
    context: Unmodelled,
    ipv4_prefix_delegation: Unmodelled,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAmiTerm {
    alias: Option<Located<String>>,
    id: Unmodelled,
    name: Unmodelled,
    owner: Unmodelled,
    tags: Unmodelled,
    ssm_parameter: Unmodelled,
}

/// One `capacityReservationSelectorTerms` entry (aws: pkg/apis/v1
/// ec2nodeclass.go `CapacityReservationSelectorTerm`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawReservationTerm {
    id: Option<Located<String>>,
    tags: Option<Located<BTreeMap<String, Located<String>>>>,
    #[serde(rename = "ownerID")]
    owner_id: Option<Located<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawKubelet {
    max_pods: Option<Located<i64>>,
    pods_per_core: Option<Located<i64>>,
    kube_reserved: Option<BTreeMap<String, Located<String>>>,
    system_reserved: Option<BTreeMap<String, Located<String>>>,
    eviction_hard: Option<BTreeMap<String, Located<String>>>,
    eviction_soft: Unmodelled,
    eviction_soft_grace_period: Unmodelled,
    eviction_max_pod_grace_period: Unmodelled,
    image_gc_high_threshold_percent: Unmodelled,
    image_gc_low_threshold_percent: Unmodelled,
    cpu_cfs_quota: Unmodelled,
    #[serde(rename = "clusterDNS")]
    cluster_dns: Unmodelled,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawBlockDevice {
    device_name: Option<String>,
    root_volume: Option<bool>,
    ebs: Option<RawEbs>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEbs {
    volume_size: Option<Located<String>>,
    volume_type: Unmodelled,
    iops: Unmodelled,
    throughput: Unmodelled,
    encrypted: Unmodelled,
    #[serde(rename = "kmsKeyID")]
    kms_key_id: Unmodelled,
    delete_on_termination: Unmodelled,
    #[serde(rename = "snapshotID")]
    snapshot_id: Unmodelled,
    volume_initialization_rate: Unmodelled,
}

fn not_modelled(at: &At<'_>, warnings: &mut Warnings, field: &Unmodelled, path: &str) {
    if let Some(f) = field {
        warnings.once(
            &format!("ec2nodeclass.{path}"),
            at.warning(
                f,
                path,
                "not modelled by karpsim (no effect on capacity or price); ignored",
            ),
        );
    }
}

fn bytes(at: &At<'_>, value: &Located<String>, path: &str) -> Result<i64, ManifestError> {
    let q = Quantity::parse(&value.value).map_err(|e| at.error(value, path, e.to_string()))?;
    if q.is_negative() {
        return Err(at.error(value, path, format!("negative quantity {:?}", value.value)));
    }
    Ok(q.units_ceil())
}

fn reserved(
    at: &At<'_>,
    raw: Option<&BTreeMap<String, Located<String>>>,
    path: &str,
) -> Result<Reserved, ManifestError> {
    let mut out = Reserved::default();
    for (name, value) in raw.into_iter().flatten() {
        let p = format!("{path}.{name}");
        match name.as_str() {
            "cpu" => {
                let q = Quantity::parse(&value.value)
                    .map_err(|e| at.error(value, &p, e.to_string()))?;
                if q.is_negative() {
                    return Err(at.error(
                        value,
                        &p,
                        format!("negative quantity {:?}", value.value),
                    ));
                }
                out.cpu_millis = Some(q.millis_ceil());
            }
            "memory" => out.memory_bytes = Some(bytes(at, value, &p)?),
            "ephemeral-storage" => out.ephemeral_bytes = Some(bytes(at, value, &p)?),
            "pid" => {}
            other => {
                return Err(at.error(
                    value,
                    &p,
                    format!("unknown reserved resource {other:?} (expected cpu, memory, ephemeral-storage, pid)"),
                ));
            }
        }
    }
    Ok(out)
}

fn threshold(at: &At<'_>, value: &Located<String>, path: &str) -> Result<Threshold, ManifestError> {
    if let Some(p) = value.value.strip_suffix('%') {
        return match p.parse::<f64>() {
            Ok(p) if (0.0..=100.0).contains(&p) => Ok(Threshold::Percent(p)),
            _ => Err(at.error(
                value,
                path,
                format!("invalid percentage {:?} (expected 0%..100%)", value.value),
            )),
        };
    }
    Ok(Threshold::Absolute(bytes(at, value, path)?))
}

/// The root device name Karpenter's AMI families use.
pub(crate) fn root_device(family: AmiFamily) -> &'static str {
    match family {
        AmiFamily::Bottlerocket => "/dev/xvdb",
        f if f.is_windows() => "/dev/sda1",
        _ => "/dev/xvda",
    }
}

/// Reads a `karpenter.k8s.aws/v1 EC2NodeClass` document.
pub fn read_ec2nodeclass(
    doc: &Document,
    warnings: &mut Warnings,
) -> Result<Ec2NodeClass, ManifestError> {
    let raw: RawObject<RawSpec> = doc.deserialize()?;
    let at = At { doc };
    let name = object_name(&at, &raw.metadata, "EC2NodeClass")?;
    let spec = raw.spec;
    let mut settings = NodeClassSettings::default();

    for (field, path) in [
        (&spec.subnet_selector_terms, "spec.subnetSelectorTerms"),
        (
            &spec.security_group_selector_terms,
            "spec.securityGroupSelectorTerms",
        ),
        (
            &spec.placement_group_selector_terms,
            "spec.placementGroupSelectorTerms",
        ),
        (&spec.role, "spec.role"),
        (&spec.instance_profile, "spec.instanceProfile"),
        (&spec.tags, "spec.tags"),
        (&spec.user_data, "spec.userData"),
        (&spec.metadata_options, "spec.metadataOptions"),
        (&spec.detailed_monitoring, "spec.detailedMonitoring"),
        (
            &spec.associate_public_ip_address,
            "spec.associatePublicIPAddress",
        ),
        (&spec.context, "spec.context"),
        (&spec.ipv4_prefix_delegation, "spec.ipv4PrefixDelegation"),
    ] {
        not_modelled(&at, warnings, field, path);
    }

    let mut family = None;
    if let Some(f) = &spec.ami_family {
        family = Some(AmiFamily::parse(&f.value).ok_or_else(|| {
            at.error(
                f,
                "spec.amiFamily",
                format!("unknown AMI family {:?} (expected AL2, AL2023, Bottlerocket, Windows2019, Windows2022, Windows2025, Custom)", f.value),
            )
        })?);
    }
    for (i, term) in spec.ami_selector_terms.iter().flatten().enumerate() {
        let path = format!("spec.amiSelectorTerms[{i}]");
        for (field, name) in [
            (&term.id, "id"),
            (&term.name, "name"),
            (&term.owner, "owner"),
            (&term.tags, "tags"),
            (&term.ssm_parameter, "ssmParameter"),
        ] {
            if let Some(f) = field {
                warnings.once(
                    &format!("ec2nodeclass.amiSelectorTerms.{name}"),
                    at.warning(f, &format!("{path}.{name}"), "AMI selection by this field is not modelled; the AMI family decides overhead"),
                );
            }
        }
        if let Some(alias) = &term.alias {
            // `family@version`; the family decides overhead.
            let name = alias.value.split('@').next().unwrap_or_default();
            let parsed = AmiFamily::parse(name)
                .filter(|f| *f != AmiFamily::Custom)
                .ok_or_else(|| {
                    at.error(
                        alias,
                        &format!("{path}.alias"),
                        format!(
                            "invalid alias {:?} (expected family@version, e.g. al2023@latest)",
                            alias.value
                        ),
                    )
                })?;
            family.get_or_insert(parsed);
        }
    }
    settings.ami_family = family.unwrap_or_default();

    if let Some(k) = &spec.kubelet {
        let mut kubelet = KubeletSettings::default();
        let positive = |v: &Located<i64>, path: &str| {
            if v.value < 0 {
                Err(at.error(v, path, format!("must not be negative, got {}", v.value)))
            } else {
                Ok(v.value)
            }
        };
        kubelet.max_pods = k
            .max_pods
            .as_ref()
            .map(|v| positive(v, "spec.kubelet.maxPods"))
            .transpose()?;
        kubelet.pods_per_core = k
            .pods_per_core
            .as_ref()
            .map(|v| positive(v, "spec.kubelet.podsPerCore"))
            .transpose()?;
        kubelet.kube_reserved =
            reserved(&at, k.kube_reserved.as_ref(), "spec.kubelet.kubeReserved")?;
        kubelet.system_reserved = reserved(
            &at,
            k.system_reserved.as_ref(),
            "spec.kubelet.systemReserved",
        )?;
        for (signal, value) in k.eviction_hard.iter().flatten() {
            let path = format!("spec.kubelet.evictionHard.{signal}");
            match signal.as_str() {
                "memory.available" => {
                    kubelet.eviction_memory_available = threshold(&at, value, &path)?
                }
                "nodefs.available" => {
                    kubelet.eviction_nodefs_available = threshold(&at, value, &path)?
                }
                "nodefs.inodesFree" | "imagefs.available" | "imagefs.inodesFree"
                | "pid.available" => {
                    threshold(&at, value, &path)?;
                }
                other => {
                    return Err(at.error(
                        value,
                        &path,
                        format!("unknown eviction signal {other:?}"),
                    ));
                }
            }
        }
        for (field, path) in [
            (&k.eviction_soft, "spec.kubelet.evictionSoft"),
            (
                &k.eviction_soft_grace_period,
                "spec.kubelet.evictionSoftGracePeriod",
            ),
            (
                &k.eviction_max_pod_grace_period,
                "spec.kubelet.evictionMaxPodGracePeriod",
            ),
            (
                &k.image_gc_high_threshold_percent,
                "spec.kubelet.imageGCHighThresholdPercent",
            ),
            (
                &k.image_gc_low_threshold_percent,
                "spec.kubelet.imageGCLowThresholdPercent",
            ),
            (&k.cpu_cfs_quota, "spec.kubelet.cpuCFSQuota"),
            (&k.cluster_dns, "spec.kubelet.clusterDNS"),
        ] {
            not_modelled(&at, warnings, field, path);
        }
        settings.kubelet = kubelet;
    }

    let root_name = root_device(settings.ami_family);
    let devices = spec.block_device_mappings.iter().flatten().enumerate();
    let root = devices
        .clone()
        .find(|(_, d)| d.root_volume == Some(true))
        .or_else(|| {
            devices
                .clone()
                .find(|(_, d)| d.device_name.as_deref() == Some(root_name))
        });
    if let Some((i, device)) = root
        && let Some(size) = device.ebs.as_ref().and_then(|e| e.volume_size.as_ref())
    {
        settings.root_volume_bytes = Some(bytes(
            &at,
            size,
            &format!("spec.blockDeviceMappings[{i}].ebs.volumeSize"),
        )?);
    }
    for (i, d) in spec.block_device_mappings.iter().flatten().enumerate() {
        if let Some(ebs) = &d.ebs {
            for (field, name) in [
                (&ebs.volume_type, "volumeType"),
                (&ebs.iops, "iops"),
                (&ebs.throughput, "throughput"),
                (&ebs.encrypted, "encrypted"),
                (&ebs.kms_key_id, "kmsKeyID"),
                (&ebs.delete_on_termination, "deleteOnTermination"),
                (&ebs.snapshot_id, "snapshotID"),
                (&ebs.volume_initialization_rate, "volumeInitializationRate"),
            ] {
                if let Some(f) = field {
                    warnings.once(
                        &format!("ec2nodeclass.ebs.{name}"),
                        at.warning(
                            f,
                            &format!("spec.blockDeviceMappings[{i}].ebs.{name}"),
                            "not modelled by karpsim; ignored",
                        ),
                    );
                }
            }
        }
    }

    if let Some(p) = &spec.instance_store_policy {
        settings.instance_store_policy = match p.value.as_str() {
            "RAID0" => InstanceStorePolicy::Raid0,
            other => {
                return Err(at.error(
                    p,
                    "spec.instanceStorePolicy",
                    format!("unknown instance store policy {other:?} (expected RAID0)"),
                ));
            }
        };
    }

    let capacity_reservation_terms = match &spec.capacity_reservation_selector_terms {
        Some(terms) => reservation_terms(&at, terms)?,
        None => Vec::new(),
    };

    Ok(Ec2NodeClass {
        name: name.value,
        position: Position::at(&doc.file, name.position),
        settings,
        capacity_reservation_terms,
    })
}

/// Upstream's `MaxItems` on the selector terms and `MaxProperties` on a
/// term's tags.
const MAX_RESERVATION_TERMS: usize = 30;
const MAX_RESERVATION_TAGS: usize = 20;

/// `spec.capacityReservationSelectorTerms`, checked as the CRD's schema and
/// CEL rules check it: each term has `id` or `tags`; `id` stands alone;
/// `id` matches `^cr-[0-9a-z]+$`, `ownerID` `^[0-9]{12}$`; tag keys and
/// values are not empty.
fn reservation_terms(
    at: &At<'_>,
    terms: &Located<Vec<Located<RawReservationTerm>>>,
) -> Result<Vec<ReservationSelectorTerm>, ManifestError> {
    const PATH: &str = "spec.capacityReservationSelectorTerms";
    if terms.value.len() > MAX_RESERVATION_TERMS {
        return Err(at.error(
            terms,
            PATH,
            format!(
                "{} terms; at most {MAX_RESERVATION_TERMS} are allowed",
                terms.value.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(terms.value.len());
    for (i, term) in terms.value.iter().enumerate() {
        let path = format!("{PATH}[{i}]");
        let raw = &term.value;
        if raw.id.is_none() && raw.tags.is_none() {
            return Err(at.error(
                term,
                &path,
                "expected at least one, got none, ['tags', 'id']",
            ));
        }
        let mut read = ReservationSelectorTerm::default();
        if let Some(id) = &raw.id {
            if raw.tags.is_some() || raw.owner_id.is_some() {
                return Err(at.error(
                    id,
                    &format!("{path}.id"),
                    "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term",
                ));
            }
            if !is_reservation_id(&id.value) {
                return Err(at.error(
                    id,
                    &format!("{path}.id"),
                    format!("invalid capacity reservation id {:?} (expected cr- followed by lower-case letters and digits)", id.value),
                ));
            }
            read.id = Some(id.value.clone());
        }
        if let Some(owner) = &raw.owner_id {
            if owner.value.len() != 12 || !owner.value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(at.error(
                    owner,
                    &format!("{path}.ownerID"),
                    format!("invalid owner id {:?} (expected 12 digits)", owner.value),
                ));
            }
            read.owner_id = Some(owner.value.clone());
        }
        if let Some(tags) = &raw.tags {
            if tags.value.len() > MAX_RESERVATION_TAGS {
                return Err(at.error(
                    tags,
                    &format!("{path}.tags"),
                    format!(
                        "{} tags; at most {MAX_RESERVATION_TAGS} are allowed",
                        tags.value.len()
                    ),
                ));
            }
            for (key, value) in &tags.value {
                if key.is_empty() || value.value.is_empty() {
                    return Err(at.error(
                        value,
                        &format!("{path}.tags"),
                        "empty tag keys or values aren't supported",
                    ));
                }
                read.tags.insert(key.clone(), value.value.clone());
            }
        }
        out.push(read);
    }
    Ok(out)
}

/// `^cr-[0-9a-z]+$`.
pub(crate) fn is_reservation_id(id: &str) -> bool {
    id.strip_prefix("cr-").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    })
}
