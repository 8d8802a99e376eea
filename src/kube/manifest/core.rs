//! Core Kubernetes kinds: deserialized through k8s-openapi from the located
//! tree, then converted to the internal workload and PDB forms.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget as K8sPdb;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::Document;
use super::convert::{self, Ctx, PriorityClasses, RuntimeClassInfo};
use super::error::{ManifestError, Warnings};
use crate::kube::duration::parse_go_duration;
use crate::kube::pod::DURATION_ANNOTATION;
use crate::kube::resources::ResourceNames;
use crate::kube::workload::{
    IntOrPercent, JobSpec, PodDisruptionBudget, UnhealthyPodEvictionPolicy, Workload, WorkloadKind,
};

/// Whether `(apiVersion, kind)` is a core kind this module reads.
pub fn is_core_kind(api_version: &str, kind: &str) -> bool {
    matches!(
        (api_version, kind),
        ("v1", "Pod")
            | (
                "apps/v1",
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            )
            | ("batch/v1", "Job")
            | ("policy/v1", "PodDisruptionBudget")
            | ("node.k8s.io/v1", "RuntimeClass")
            | ("scheduling.k8s.io/v1", "PriorityClass")
    )
}

/// The core objects of a set of manifests, in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreManifests {
    /// Pod-creating objects.
    pub workloads: Vec<Workload>,
    /// Disruption budgets.
    pub pdbs: Vec<PodDisruptionBudget>,
}

/// Collects core documents, then converts them once every RuntimeClass and
/// PriorityClass is known (a pod may come before its RuntimeClass).
#[derive(Debug, Default)]
pub struct CoreReader {
    runtime_classes: BTreeMap<String, RuntimeClassInfo>,
    priority_classes: Option<PriorityClasses>,
    pending: Vec<Document>,
}

impl CoreReader {
    /// An empty reader.
    pub fn new() -> CoreReader {
        CoreReader::default()
    }

    /// Adds a core document (see [`is_core_kind`]). Class objects are read
    /// now; everything else when [`CoreReader::finish`] is called.
    pub fn add(
        &mut self,
        doc: Document,
        names: &mut ResourceNames,
        warnings: &mut Warnings,
    ) -> Result<(), ManifestError> {
        let priority = self
            .priority_classes
            .get_or_insert_with(PriorityClasses::with_builtins);
        match doc.kind.as_str() {
            "RuntimeClass" => {
                let rc: RuntimeClass = doc.deserialize()?;
                let no_classes = BTreeMap::new();
                let empty = PriorityClasses::default();
                let mut ctx = ctx(&doc, names, warnings, &no_classes, &empty);
                let overhead = rc.overhead.as_ref().and_then(|o| o.pod_fixed.as_ref());
                let mut info = RuntimeClassInfo {
                    overhead: ctx.resources(overhead, "overhead.podFixed")?,
                    ..RuntimeClassInfo::default()
                };
                if let Some(s) = &rc.scheduling {
                    info.node_selector = s.node_selector.clone().unwrap_or_default();
                    if s.tolerations.as_ref().is_some_and(|t| !t.is_empty()) {
                        ctx.warn_once(
                            "runtimeclass.scheduling.tolerations",
                            "scheduling.tolerations",
                            "RuntimeClass tolerations are not modelled",
                        );
                    }
                }
                self.runtime_classes
                    .insert(rc.metadata.name.clone().unwrap_or_default(), info);
            }
            "PriorityClass" => {
                let pc: PriorityClass = doc.deserialize()?;
                let value = pc.value.unwrap_or(0);
                if pc.global_default == Some(true) {
                    priority.global_default = Some(value);
                }
                priority
                    .by_name
                    .insert(pc.metadata.name.clone().unwrap_or_default(), value);
            }
            _ => self.pending.push(doc),
        }
        Ok(())
    }

    /// Converts the collected workloads and PDBs.
    pub fn finish(
        self,
        names: &mut ResourceNames,
        warnings: &mut Warnings,
    ) -> Result<CoreManifests, ManifestError> {
        let priority = self
            .priority_classes
            .unwrap_or_else(PriorityClasses::with_builtins);
        let mut out = CoreManifests::default();
        for doc in &self.pending {
            let mut ctx = ctx(doc, names, warnings, &self.runtime_classes, &priority);
            match doc.kind.as_str() {
                "PodDisruptionBudget" => out.pdbs.push(pdb(&mut ctx, doc)?),
                _ => out.workloads.push(workload(&mut ctx, doc)?),
            }
        }
        Ok(out)
    }
}

fn ctx<'a>(
    doc: &'a Document,
    names: &'a mut ResourceNames,
    warnings: &'a mut Warnings,
    runtime_classes: &'a BTreeMap<String, RuntimeClassInfo>,
    priority_classes: &'a PriorityClasses,
) -> Ctx<'a> {
    Ctx {
        file: &doc.file,
        node: &doc.node,
        base: &doc.base_path,
        names,
        warnings,
        runtime_classes,
        priority_classes,
    }
}

fn namespace(meta: &ObjectMeta) -> String {
    meta.namespace
        .clone()
        .unwrap_or_else(|| "default".to_string())
}

fn replicas(ctx: &Ctx<'_>, value: Option<i32>) -> Result<u32, ManifestError> {
    match value {
        None => Ok(1),
        Some(n) => u32::try_from(n).map_err(|_| {
            ctx.error(
                "spec.replicas",
                None,
                format!("replicas must not be negative, got {n}"),
            )
        }),
    }
}

fn template(
    ctx: &mut Ctx<'_>,
    t: &PodTemplateSpec,
    namespace: &str,
) -> Result<Arc<crate::kube::pod::PodSpec>, ManifestError> {
    let Some(spec) = &t.spec else {
        return Err(ctx.error("spec.template", None, "missing spec.template.spec"));
    };
    convert::pod_spec(
        ctx,
        t.metadata.as_ref(),
        spec,
        namespace,
        "spec.template.metadata",
        "spec.template.spec",
    )
    .map(Arc::new)
}

fn workload(ctx: &mut Ctx<'_>, doc: &Document) -> Result<Workload, ManifestError> {
    let (metadata, kind, template) = match doc.kind.as_str() {
        "Pod" => {
            let pod: Pod = doc.deserialize()?;
            let Some(spec) = &pod.spec else {
                return Err(ctx.error("", None, "missing spec"));
            };
            let ns = namespace(&pod.metadata);
            let t = convert::pod_spec(ctx, Some(&pod.metadata), spec, &ns, "metadata", "spec")?;
            (pod.metadata, WorkloadKind::Pod, Arc::new(t))
        }
        "Deployment" => {
            let d: Deployment = doc.deserialize()?;
            let spec = d.spec;
            let replicas = replicas(ctx, spec.replicas)?;
            let t = template(ctx, &spec.template, &namespace(&d.metadata))?;
            (d.metadata, WorkloadKind::Deployment { replicas }, t)
        }
        "ReplicaSet" => {
            let d: ReplicaSet = doc.deserialize()?;
            let spec = d.spec;
            let replicas = replicas(ctx, spec.replicas)?;
            let Some(t) = &spec.template else {
                return Err(ctx.error("spec", None, "missing spec.template"));
            };
            let t = template(ctx, t, &namespace(&d.metadata))?;
            (d.metadata, WorkloadKind::ReplicaSet { replicas }, t)
        }
        "StatefulSet" => {
            let d: StatefulSet = doc.deserialize()?;
            let spec = d.spec;
            let replicas = replicas(ctx, spec.replicas)?;
            if spec
                .volume_claim_templates
                .as_ref()
                .is_some_and(|v| !v.is_empty())
            {
                ctx.warn_once(
                    "volumes.persistentVolumeClaim",
                    "spec.volumeClaimTemplates",
                    "persistent volumes are not modelled (volume topology and attach limits are ignored)",
                );
            }
            let t = template(ctx, &spec.template, &namespace(&d.metadata))?;
            (d.metadata, WorkloadKind::StatefulSet { replicas }, t)
        }
        "DaemonSet" => {
            let d: DaemonSet = doc.deserialize()?;
            let spec = d.spec;
            let t = template(ctx, &spec.template, &namespace(&d.metadata))?;
            (d.metadata, WorkloadKind::DaemonSet, t)
        }
        "Job" => {
            let j: Job = doc.deserialize()?;
            let spec = j.spec.unwrap_or_default();
            let count = |field: &str, v: Option<i32>| -> Result<Option<u32>, ManifestError> {
                v.map(|n| {
                    u32::try_from(n).map_err(|_| {
                        ctx.error(
                            &format!("spec.{field}"),
                            None,
                            format!("{field} must not be negative, got {n}"),
                        )
                    })
                })
                .transpose()
            };
            let parallelism = count("parallelism", spec.parallelism)?.unwrap_or(1);
            let completions = count("completions", spec.completions)?;
            let active_deadline = match spec.active_deadline_seconds {
                Some(s) if s <= 0 => {
                    return Err(ctx.error(
                        "spec.activeDeadlineSeconds",
                        None,
                        format!("activeDeadlineSeconds must be positive, got {s}"),
                    ));
                }
                Some(s) => Some(std::time::Duration::from_secs(s as u64)),
                None => None,
            };
            let duration = match j
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DURATION_ANNOTATION))
            {
                Some(v) => Some(parse_go_duration(v).map_err(|e| {
                    ctx.error("metadata.annotations", Some(DURATION_ANNOTATION), e)
                })?),
                None => None,
            };
            let t = template(ctx, &spec.template, &namespace(&j.metadata))?;
            let job = JobSpec {
                parallelism,
                completions,
                active_deadline,
                duration,
            };
            (j.metadata, WorkloadKind::Job(job), t)
        }
        other => {
            return Err(ctx.error("kind", None, format!("internal: unexpected kind {other:?}")));
        }
    };
    Ok(Workload {
        name: metadata.name.clone().unwrap_or_default(),
        namespace: namespace(&metadata),
        kind,
        template,
    })
}

fn int_or_percent(
    ctx: &Ctx<'_>,
    value: Option<&IntOrString>,
    field: &str,
) -> Result<Option<IntOrPercent>, ManifestError> {
    let path = format!("spec.{field}");
    match value {
        None => Ok(None),
        Some(IntOrString::Int(n)) => u32::try_from(*n)
            .map(|n| Some(IntOrPercent::Int(n)))
            .map_err(|_| {
                ctx.error(
                    &path,
                    None,
                    format!("{field} must not be negative, got {n}"),
                )
            }),
        Some(IntOrString::String(s)) => {
            let bad = || {
                ctx.error(
                    &path,
                    None,
                    format!(
                        "invalid {field} {s:?} (expected an integer or a percentage like \"50%\")"
                    ),
                )
            };
            let Some(number) = s.strip_suffix('%') else {
                return s
                    .parse::<u32>()
                    .map(|n| Some(IntOrPercent::Int(n)))
                    .map_err(|_| bad());
            };
            match number.parse::<u32>() {
                Ok(p) if p <= 100 => Ok(Some(IntOrPercent::Percent(p))),
                _ => Err(bad()),
            }
        }
    }
}

fn pdb(ctx: &mut Ctx<'_>, doc: &Document) -> Result<PodDisruptionBudget, ManifestError> {
    let p: K8sPdb = doc.deserialize()?;
    let spec = p.spec.unwrap_or_default();
    let min_available = int_or_percent(ctx, spec.min_available.as_ref(), "minAvailable")?;
    let max_unavailable = int_or_percent(ctx, spec.max_unavailable.as_ref(), "maxUnavailable")?;
    if min_available.is_some() && max_unavailable.is_some() {
        return Err(ctx.error(
            "spec",
            None,
            "minAvailable and maxUnavailable cannot both be set",
        ));
    }
    let selector = spec
        .selector
        .as_ref()
        .map(|s| convert::selector(ctx, s, "spec.selector"))
        .transpose()?;
    let unhealthy_pod_eviction_policy = match spec.unhealthy_pod_eviction_policy.as_deref() {
        None | Some("IfHealthyBudget") => UnhealthyPodEvictionPolicy::IfHealthyBudget,
        Some("AlwaysAllow") => UnhealthyPodEvictionPolicy::AlwaysAllow,
        Some(other) => {
            return Err(ctx.error(
                "spec.unhealthyPodEvictionPolicy",
                None,
                format!("unknown policy {other:?} (expected IfHealthyBudget, AlwaysAllow)"),
            ));
        }
    };
    Ok(PodDisruptionBudget {
        name: p.metadata.name.clone().unwrap_or_default(),
        namespace: namespace(&p.metadata),
        selector,
        min_available,
        max_unavailable,
        unhealthy_pod_eviction_policy,
    })
}
