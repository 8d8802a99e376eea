//! Core Kubernetes kinds: deserialized through k8s-openapi from the located
//! tree, then converted to the internal workload and PDB forms.
//!
//! Objects are read as the API server would accept them: unknown fields
//! are errors (kubectl's strict field validation), and names, namespaces,
//! labels and controller selectors follow the API server's validation
//! (`pkg/apis/*/validation` in kubernetes/kubernetes). Two objects of one
//! kind with one name in one namespace are an error. An object with only
//! `metadata.generateName` gets a name as the API server gives one (the
//! prefix and five characters; karpsim numbers them instead of drawing
//! them at random, so runs repeat).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget as K8sPdb;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::Document;
use super::convert::{self, Ctx, PriorityClasses, RuntimeClassInfo, check_labels};
use super::error::{ManifestError, Position, Warnings};
use crate::kube::names::{check_dns_label, check_dns_subdomain, generated_name};
use crate::kube::pod::DURATION_ANNOTATION;
use crate::kube::provisioning_request::ProvisioningRequest;
use crate::kube::resources::ResourceNames;
use crate::kube::workload::{
    IntOrPercent, JobSpec, PodDisruptionBudget, UnhealthyPodEvictionPolicy, Workload, WorkloadKind,
};
use crate::time::duration::parse_go_duration;

#[path = "provreq.rs"]
mod provreq;
pub use provreq::PROVISIONING_KINDS;

/// The core kinds this module reads, with the one apiVersion each is read
/// as. A CronJob is checked like the others but not simulated (scenario
/// generators model CronJobs).
pub const CORE_KINDS: [(&str, &str); 10] = [
    ("v1", "Pod"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("policy/v1", "PodDisruptionBudget"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
];

/// Whether `(apiVersion, kind)` is a core kind this module reads.
pub fn is_core_kind(api_version: &str, kind: &str) -> bool {
    CORE_KINDS.contains(&(api_version, kind))
}

/// Whether objects of `kind` live outside namespaces.
pub fn is_cluster_scoped(kind: &str) -> bool {
    matches!(
        kind,
        "PriorityClass" | "RuntimeClass" | "NodePool" | "EC2NodeClass" | "Namespace" | "Node"
    )
}

/// The name rule the API server applies to a kind's objects.
#[derive(Debug, Clone, Copy)]
enum NameRule {
    /// A DNS-1123 subdomain (most kinds).
    Subdomain,
    /// A DNS-1123 label: a StatefulSet's name is its pods' hostname prefix
    /// (apps validation `ValidateStatefulSetName`).
    Label,
    /// A subdomain of at most this many characters, and why.
    Shorter(usize, &'static str),
}

fn name_rule(kind: &str) -> NameRule {
    match kind {
        "StatefulSet" => NameRule::Label,
        // The Job controller puts the name in its pods' job-name label,
        // whose value has at most 63 characters.
        "Job" => NameRule::Shorter(63, "a Job's name is its pods' job-name label value"),
        // batch validation `ValidateCronJob`: 52, leaving room for the
        // 11-character suffix of the Jobs it creates.
        "CronJob" => NameRule::Shorter(52, "a CronJob's Jobs add 11 characters"),
        _ => NameRule::Subdomain,
    }
}

fn check_name(kind: &str, name: &str) -> Result<(), String> {
    match name_rule(kind) {
        NameRule::Subdomain => check_dns_subdomain(name),
        NameRule::Label => check_dns_label(name),
        NameRule::Shorter(max, why) => {
            check_dns_subdomain(name)?;
            if name.len() > max {
                return Err(format!(
                    "must be no more than {max} characters (got {}; {why})",
                    name.len()
                ));
            }
            Ok(())
        }
    }
}

/// Object names already read, for refusing a second object of one kind
/// with one name in one namespace, and the generateName counters.
#[derive(Debug, Default)]
struct Identities {
    /// (kind, namespace, name) → where the object is.
    seen: BTreeMap<(String, String, String), Position>,
    /// (kind, namespace, generateName) → objects named from it so far.
    generated: BTreeMap<(String, String, String), u64>,
}

/// Checks an object's metadata as the API server's `ValidateObjectMeta`
/// does (name or generateName, namespace, labels) and returns its
/// namespace and name. Cluster-scoped kinds get an empty namespace.
fn identity(
    ctx: &Ctx<'_>,
    doc: &Document,
    meta: &ObjectMeta,
    identities: &mut Identities,
) -> Result<(String, String), ManifestError> {
    let kind = doc.kind.as_str();
    let namespace = if is_cluster_scoped(kind) {
        String::new()
    } else {
        match meta.namespace.as_deref() {
            None | Some("") => "default".to_string(),
            Some(ns) => {
                check_dns_label(ns).map_err(|m| {
                    ctx.error(
                        "metadata.namespace",
                        None,
                        format!("invalid namespace {ns:?}: {m}"),
                    )
                })?;
                ns.to_string()
            }
        }
    };
    let name = match (meta.name.as_deref(), meta.generate_name.as_deref()) {
        (Some(name), _) if !name.is_empty() => {
            check_name(kind, name).map_err(|m| {
                ctx.error(
                    "metadata.name",
                    None,
                    format!("invalid {kind} name {name:?}: {m}"),
                )
            })?;
            name.to_string()
        }
        (_, Some(base)) if !base.is_empty() => {
            let key = (kind.to_string(), namespace.clone(), base.to_string());
            let count = identities.generated.entry(key).or_insert(0);
            let name = generated_name(base, *count);
            *count += 1;
            check_name(kind, &name).map_err(|m| {
                ctx.error(
                    "metadata.generateName",
                    None,
                    format!("invalid generateName {base:?} (names made from it, like {name:?}, are invalid: {m})"),
                )
            })?;
            name
        }
        _ => {
            return Err(ctx.error(
                "metadata",
                None,
                format!("missing metadata.name: a {kind} needs a name (or a generateName)"),
            ));
        }
    };
    check_labels(ctx, meta.labels.as_ref(), "metadata.labels")?;
    let key = (kind.to_string(), namespace.clone(), name.clone());
    let here = doc
        .node
        .at_path("metadata.name")
        .map_or_else(|| doc.position(), |n| Position::of(&doc.file, n));
    if let Some(first) = identities.seen.get(&key) {
        let object = if namespace.is_empty() {
            name.clone()
        } else {
            format!("{namespace}/{name}")
        };
        return Err(ctx.error(
            "metadata.name",
            None,
            format!("duplicate {kind} {object}: already defined at {first}"),
        ));
    }
    identities.seen.insert(key, here);
    Ok((namespace, name))
}

/// The core objects of a set of manifests, in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreManifests {
    /// Pod-creating objects.
    pub workloads: Vec<Workload>,
    /// Disruption budgets.
    pub pdbs: Vec<PodDisruptionBudget>,
    /// ProvisioningRequests, their pod sets resolved.
    pub provisioning_requests: Vec<ProvisioningRequest>,
}

/// Collects core documents, then converts them once every RuntimeClass and
/// PriorityClass is known (a pod may come before its RuntimeClass).
#[derive(Debug, Default)]
pub struct CoreReader {
    runtime_classes: BTreeMap<String, RuntimeClassInfo>,
    priority_classes: Option<PriorityClasses>,
    pending: Vec<Document>,
    identities: Identities,
    pods_bound: bool,
}

impl CoreReader {
    /// An empty reader.
    pub fn new() -> CoreReader {
        CoreReader::default()
    }

    /// An empty reader of a cluster snapshot's objects: pods carry the
    /// `nodeName` the scheduler gave them.
    pub fn for_snapshot() -> CoreReader {
        CoreReader {
            pods_bound: true,
            ..CoreReader::default()
        }
    }

    /// Adds a core document (see [`is_core_kind`]) or one of the
    /// [`PROVISIONING_KINDS`]. Class objects are read now; everything else
    /// when [`CoreReader::finish`] is called.
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
                let rc: RuntimeClass = doc.deserialize_strict()?;
                let no_classes = BTreeMap::new();
                let empty = PriorityClasses::default();
                let mut ctx = ctx(&doc, names, warnings, &no_classes, &empty);
                let (_, name) = identity(&ctx, &doc, &rc.metadata, &mut self.identities)?;
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
                self.runtime_classes.insert(name, info);
            }
            "PriorityClass" => {
                let pc: PriorityClass = doc.deserialize_strict()?;
                let no_classes = BTreeMap::new();
                let empty = PriorityClasses::default();
                let ctx = ctx(&doc, names, warnings, &no_classes, &empty);
                let (_, name) = identity(&ctx, &doc, &pc.metadata, &mut self.identities)?;
                let value = pc.value.unwrap_or(0);
                if pc.global_default == Some(true) {
                    priority.global_default = Some(value);
                }
                priority.by_name.insert(name, value);
            }
            "CronJob" => {
                let cron: CronJob = doc.deserialize_strict()?;
                let no_classes = BTreeMap::new();
                let empty = PriorityClasses::default();
                let mut ctx = ctx(&doc, names, warnings, &no_classes, &empty);
                identity(&ctx, &doc, &cron.metadata, &mut self.identities)?;
                ctx.warn_once(
                    "kind/batch/v1/CronJob",
                    "kind",
                    "batch/v1 CronJob objects are checked but not simulated; a scenario's cronJob generator runs CronJobs",
                );
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
        let CoreReader {
            runtime_classes,
            priority_classes,
            pending,
            mut identities,
            pods_bound,
        } = self;
        let priority = priority_classes.unwrap_or_else(PriorityClasses::with_builtins);
        let mut out = CoreManifests::default();
        let mut job_without_duration = None;
        // PodTemplates first: a ProvisioningRequest may come before them.
        let mut templates = provreq::Templates::new();
        for doc in pending.iter().filter(|d| d.kind == "PodTemplate") {
            let mut ctx = ctx(doc, names, warnings, &runtime_classes, &priority);
            provreq::read_template(&mut ctx, doc, &mut identities, &mut templates)?;
        }
        for doc in &pending {
            let mut ctx = ctx(doc, names, warnings, &runtime_classes, &priority);
            ctx.pods_bound = pods_bound;
            match doc.kind.as_str() {
                "PodTemplate" => {}
                "ProvisioningRequest" => out.provisioning_requests.push(provreq::read_request(
                    &mut ctx,
                    doc,
                    &mut identities,
                    &templates,
                )?),
                "PodDisruptionBudget" => out.pdbs.push(pdb(&mut ctx, doc, &mut identities)?),
                _ => {
                    let w = workload(&mut ctx, doc, &mut identities)?;
                    if let WorkloadKind::Job(job) = &w.kind
                        && job.duration.is_none()
                        && w.template.run_duration.is_none()
                    {
                        job_without_duration.get_or_insert((
                            doc,
                            w.namespace.clone(),
                            w.name.clone(),
                        ));
                    }
                    out.workloads.push(w);
                }
            }
        }
        if let Some((doc, namespace, name)) = job_without_duration {
            let ctx = ctx(doc, names, warnings, &runtime_classes, &priority);
            let mut ctx = ctx;
            ctx.warn_once(
                "job/no-duration",
                "metadata",
                format!(
                    "Job {namespace}/{name} has no {DURATION_ANNOTATION} annotation (on the Job or its pod template): its pods run until the end of the run, or until its activeDeadlineSeconds fails it (so do other such Jobs)"
                ),
            );
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
        pods_bound: false,
    }
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

/// The checks apps/v1 validation makes of a controller's selector
/// (`ValidateDeploymentSpec`, `ValidateReplicaSetSpec`,
/// `ValidateStatefulSetSpec`, `ValidateDaemonSetSpec`): present, not
/// empty, valid, and matching the pod template's labels.
fn controller_selector(
    ctx: &Ctx<'_>,
    doc: &Document,
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    template: &PodTemplateSpec,
) -> Result<(), ManifestError> {
    let kind = doc.kind.as_str();
    // k8s-openapi reads an absent required selector as an empty one.
    let written = doc
        .node
        .at_path("spec.selector")
        .is_some_and(|n| !matches!(n.value, super::Value::Null));
    if !written {
        return Err(ctx.error(
            "spec",
            None,
            format!("missing spec.selector: apps/v1 {kind} requires a selector matching spec.template.metadata.labels"),
        ));
    }
    let parsed = convert::selector(ctx, selector, "spec.selector")?;
    if parsed.is_empty() {
        return Err(ctx.error(
            "spec.selector",
            None,
            format!("empty selector is invalid for {}", kind.to_lowercase()),
        ));
    }
    template_matches(ctx, &parsed, template)
}

fn template_matches(
    ctx: &Ctx<'_>,
    selector: &crate::kube::selector::LabelSelector,
    template: &PodTemplateSpec,
) -> Result<(), ManifestError> {
    let no_labels = BTreeMap::new();
    let labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .unwrap_or(&no_labels);
    if selector.matches(labels) {
        return Ok(());
    }
    let path = if ctx.node.at_path("spec.template.metadata.labels").is_some() {
        "spec.template.metadata.labels"
    } else {
        "spec.template"
    };
    Err(ctx.error(path, None, "`selector` does not match template `labels`"))
}

/// Labels the Job controller puts on its pods and selects them by.
const JOB_GENERATED_LABELS: [&str; 4] = [
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];

/// A Job's selector as the API server takes it (batch strategy
/// `generateSelector`, validation `validateGeneratedSelector`): without
/// `manualSelector: true` the selector is generated, and a selector of
/// other labels is refused ("`selector` not auto-generated"; a generated
/// one, as `kubectl get -o yaml` shows it, is fine); with it, the selector
/// is required and must match the template's labels.
fn job_selector(
    ctx: &Ctx<'_>,
    spec: &k8s_openapi::api::batch::v1::JobSpec,
) -> Result<(), ManifestError> {
    let manual = spec.manual_selector == Some(true);
    let Some(selector) = &spec.selector else {
        if manual {
            return Err(ctx.error(
                "spec",
                None,
                "missing spec.selector: required when spec.manualSelector is true",
            ));
        }
        return Ok(());
    };
    let parsed = convert::selector(ctx, selector, "spec.selector")?;
    if !manual {
        let generated = parsed
            .match_labels
            .keys()
            .chain(parsed.match_expressions.iter().map(|e| &e.key))
            .all(|key| JOB_GENERATED_LABELS.contains(&key.as_str()));
        if !generated {
            return Err(ctx.error(
                "spec.selector",
                None,
                "`selector` not auto-generated (the Job controller makes the selector; set spec.manualSelector: true to choose it)",
            ));
        }
    }
    template_matches(ctx, &parsed, &spec.template)
}

fn workload(
    ctx: &mut Ctx<'_>,
    doc: &Document,
    identities: &mut Identities,
) -> Result<Workload, ManifestError> {
    let (namespace, name, kind, template) = match doc.kind.as_str() {
        "Pod" => {
            let pod: Pod = doc.deserialize_strict()?;
            let (ns, name) = identity(ctx, doc, &pod.metadata, identities)?;
            let Some(spec) = &pod.spec else {
                return Err(ctx.error("", None, "missing spec"));
            };
            let t = convert::pod_spec(ctx, Some(&pod.metadata), spec, &ns, "metadata", "spec")?;
            (ns, name, WorkloadKind::Pod, Arc::new(t))
        }
        "Deployment" => {
            let d: Deployment = doc.deserialize_strict()?;
            let (ns, name) = identity(ctx, doc, &d.metadata, identities)?;
            let spec = d.spec;
            let replicas = replicas(ctx, spec.replicas)?;
            controller_selector(ctx, doc, &spec.selector, &spec.template)?;
            let t = template(ctx, &spec.template, &ns)?;
            (ns, name, WorkloadKind::Deployment { replicas }, t)
        }
        "ReplicaSet" => {
            let d: ReplicaSet = doc.deserialize_strict()?;
            let (ns, name) = identity(ctx, doc, &d.metadata, identities)?;
            let spec = d.spec;
            let replicas = replicas(ctx, spec.replicas)?;
            let Some(t) = &spec.template else {
                return Err(ctx.error("spec", None, "missing spec.template"));
            };
            controller_selector(ctx, doc, &spec.selector, t)?;
            let t = template(ctx, t, &ns)?;
            (ns, name, WorkloadKind::ReplicaSet { replicas }, t)
        }
        "StatefulSet" => {
            let d: StatefulSet = doc.deserialize_strict()?;
            let (ns, name) = identity(ctx, doc, &d.metadata, identities)?;
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
            controller_selector(ctx, doc, &spec.selector, &spec.template)?;
            let t = template(ctx, &spec.template, &ns)?;
            (ns, name, WorkloadKind::StatefulSet { replicas }, t)
        }
        "DaemonSet" => {
            let d: DaemonSet = doc.deserialize_strict()?;
            let (ns, name) = identity(ctx, doc, &d.metadata, identities)?;
            let spec = d.spec;
            controller_selector(ctx, doc, &spec.selector, &spec.template)?;
            let t = template(ctx, &spec.template, &ns)?;
            (ns, name, WorkloadKind::DaemonSet, t)
        }
        "Job" => {
            let j: Job = doc.deserialize_strict()?;
            let (ns, name) = identity(ctx, doc, &j.metadata, identities)?;
            let spec = j.spec.unwrap_or_default();
            job_selector(ctx, &spec)?;
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
            let t = template(ctx, &spec.template, &ns)?;
            let job = JobSpec {
                parallelism,
                completions,
                active_deadline,
                duration,
            };
            (ns, name, WorkloadKind::Job(job), t)
        }
        other => {
            return Err(ctx.error("kind", None, format!("internal: unexpected kind {other:?}")));
        }
    };
    Ok(Workload {
        name,
        namespace,
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

fn pdb(
    ctx: &mut Ctx<'_>,
    doc: &Document,
    identities: &mut Identities,
) -> Result<PodDisruptionBudget, ManifestError> {
    let p: K8sPdb = doc.deserialize_strict()?;
    let (namespace, name) = identity(ctx, doc, &p.metadata, identities)?;
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
        name,
        namespace,
        selector,
        min_available,
        max_unavailable,
        unhealthy_pod_eviction_policy,
    })
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
