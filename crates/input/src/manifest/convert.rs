//! Converts k8s-openapi pod specs into [`crate::kube::pod::PodSpec`]:
//! effective requests, annotations that matter, and every scheduling
//! constraint. Problems name the exact field.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::error::{ManifestError, ManifestWarning, Position, Warnings};
use super::tree::Node;
use crate::kube::labels::{validate_label_key, validate_label_value};
use crate::kube::pod::{
    self, DoNotDisrupt, HostPort, InclusionPolicy, InitContainer, NodeSelectorExpression,
    PodAffinity, PodAffinityTerm, PodSpec, TopologySpreadConstraint, WeightedNodeSelectorTerm,
    WeightedPodAffinityTerm, WhenUnsatisfiable,
};
use crate::kube::quantity::Quantity;
use crate::kube::requirements::Operator;
use crate::kube::resources::{ResourceNames, Resources};
use crate::kube::selector::{LabelSelector, SelectorExpression, SelectorOperator};
use crate::kube::taints::{TaintEffect, Toleration, TolerationOperator};
use crate::time::duration::parse_go_duration;

/// A RuntimeClass as pods see it.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuntimeClassInfo {
    pub overhead: Resources,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
}

/// Priority classes, built-in and from the manifests.
#[derive(Debug, Clone, Default)]
pub(crate) struct PriorityClasses {
    pub by_name: BTreeMap<String, i32>,
    pub global_default: Option<i32>,
}

impl PriorityClasses {
    pub fn with_builtins() -> Self {
        let mut by_name = BTreeMap::new();
        // Kubernetes' built-in classes (scheduling/v1 SystemPriorityClasses).
        by_name.insert("system-cluster-critical".to_string(), 2_000_000_000);
        by_name.insert("system-node-critical".to_string(), 2_000_001_000);
        PriorityClasses {
            by_name,
            global_default: None,
        }
    }
}

/// Everything a conversion needs besides the object itself.
pub(crate) struct Ctx<'a> {
    pub file: &'a str,
    /// The document (or List item) node, for locating fields.
    pub node: &'a Node,
    /// Path of `node` in the document (`""`, or `items[3]`).
    pub base: &'a str,
    pub names: &'a mut ResourceNames,
    pub warnings: &'a mut Warnings,
    pub runtime_classes: &'a BTreeMap<String, RuntimeClassInfo>,
    pub priority_classes: &'a PriorityClasses,
    /// Pods come from a cluster snapshot, bound by the scheduler: their
    /// `nodeName` is where they run, not a preset placement.
    pub pods_bound: bool,
}

impl Ctx<'_> {
    fn full(&self, path: &str) -> String {
        if self.base.is_empty() {
            path.to_string()
        } else {
            format!("{}.{path}", self.base)
        }
    }

    /// An error at `path` (relative to the object), or at `path` + map key.
    pub fn error(
        &self,
        path: &str,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> ManifestError {
        let parent = self.node.at_path(path);
        let target = match (parent, key) {
            (Some(p), Some(k)) => p.get(k).unwrap_or(p),
            (Some(p), None) => p,
            (None, _) => self.node,
        };
        let full = match key {
            Some(k) => format!("{}.{k}", self.full(path)),
            None => self.full(path),
        };
        ManifestError::field(self.file, target, full, message)
    }

    /// One warning per `subject` across the whole load.
    pub fn warn_once(&mut self, subject: &str, path: &str, message: impl Into<String>) {
        let target = self.node.at_path(path).unwrap_or(self.node);
        let warning = ManifestWarning {
            at: Position::of(self.file, target),
            path: self.full(path),
            message: message.into(),
        };
        self.warnings.once(subject, warning);
    }

    /// Parses a resource list, naming the exact entry on error.
    pub fn resources(
        &mut self,
        list: Option<&BTreeMap<String, K8sQuantity>>,
        path: &str,
    ) -> Result<Resources, ManifestError> {
        let mut out = Resources::ZERO;
        for (name, quantity) in list.into_iter().flatten() {
            let parsed = Quantity::parse(&quantity.0)
                .map_err(|e| self.error(path, Some(name), e.to_string()))?;
            if parsed.is_negative() {
                return Err(self.error(
                    path,
                    Some(name),
                    format!("negative quantity {:?}", quantity.0),
                ));
            }
            let kind = self
                .names
                .kind_for(name)
                .map_err(|e| self.error(path, Some(name), e.to_string()))?;
            out.set(kind, kind.amount(parsed));
        }
        Ok(out)
    }

    /// A container's requests after Kubernetes defaulting: a resource with
    /// a limit but no request requests its limit.
    fn container_requests(
        &mut self,
        resources: Option<&core::ResourceRequirements>,
        path: &str,
    ) -> Result<Resources, ManifestError> {
        let Some(resources) = resources else {
            return Ok(Resources::ZERO);
        };
        let requests = self.resources(resources.requests.as_ref(), &format!("{path}.requests"))?;
        let limits = self.resources(resources.limits.as_ref(), &format!("{path}.limits"))?;
        self.check_requests_within_limits(resources, path)?;
        let mut out = requests;
        for (name, _) in resources.limits.iter().flatten() {
            let explicit = resources
                .requests
                .as_ref()
                .is_some_and(|r| r.contains_key(name));
            if let (false, Some(kind)) = (explicit, self.names.lookup(name)) {
                out.set(kind, limits.get(kind));
            }
        }
        Ok(out)
    }
}

impl Ctx<'_> {
    /// core validation `ValidateResourceRequirements`: a request may not
    /// exceed its limit, and a resource that cannot be overcommitted
    /// (extended resources, hugepages) must request exactly its limit.
    fn check_requests_within_limits(
        &self,
        resources: &core::ResourceRequirements,
        path: &str,
    ) -> Result<(), ManifestError> {
        let requests_path = format!("{path}.requests");
        for (name, request) in resources.requests.iter().flatten() {
            let limit = resources.limits.as_ref().and_then(|l| l.get(name));
            let overcommit = overcommit_allowed(name);
            let Some(limit) = limit else {
                if !overcommit {
                    return Err(self.error(
                        &requests_path,
                        Some(name),
                        format!("a limit must be set for {name}: it cannot be overcommitted, so its request must equal its limit"),
                    ));
                }
                continue;
            };
            // Both already parsed by `resources`; unparsable ones were refused.
            let (Ok(r), Ok(l)) = (Quantity::parse(&request.0), Quantity::parse(&limit.0)) else {
                continue;
            };
            if overcommit && r > l {
                return Err(self.error(
                    &requests_path,
                    Some(name),
                    format!(
                        "request {:?} must be less than or equal to {name} limit of {:?}",
                        request.0, limit.0
                    ),
                ));
            }
            if !overcommit && r != l {
                return Err(self.error(
                    &requests_path,
                    Some(name),
                    format!(
                        "request {:?} must be equal to {name} limit of {:?}",
                        request.0, limit.0
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// core helper `IsOvercommitAllowed`: native resources (no domain, or a
/// `kubernetes.io` one) except hugepages.
pub(crate) fn overcommit_allowed(name: &str) -> bool {
    let native = match name.split_once('/') {
        None => true,
        Some((domain, _)) => domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"),
    };
    native && !name.starts_with("hugepages-")
}

/// Checks label keys and values (apimachinery `ValidateLabels`); the error
/// points at the offending key.
pub(crate) fn check_labels(
    ctx: &Ctx<'_>,
    labels: Option<&BTreeMap<String, String>>,
    path: &str,
) -> Result<(), ManifestError> {
    for (key, value) in labels.into_iter().flatten() {
        validate_label_key(key)
            .and_then(|()| validate_label_value(value))
            .map_err(|e| ctx.error(path, Some(key), e.to_string()))?;
    }
    Ok(())
}

/// Converts a pod (or pod template) to its scheduling form.
/// `meta_path` / `spec_path` locate the metadata and spec in the object.
pub(crate) fn pod_spec(
    ctx: &mut Ctx<'_>,
    metadata: Option<&meta::ObjectMeta>,
    spec: &core::PodSpec,
    namespace: &str,
    meta_path: &str,
    spec_path: &str,
) -> Result<PodSpec, ManifestError> {
    let mut out = PodSpec {
        namespace: namespace.to_string(),
        ..PodSpec::default()
    };
    if let Some(metadata) = metadata {
        check_labels(
            ctx,
            metadata.labels.as_ref(),
            &format!("{meta_path}.labels"),
        )?;
        out.labels = metadata.labels.clone().unwrap_or_default();
        annotations(ctx, metadata.annotations.as_ref(), meta_path, &mut out)?;
    }
    if spec.containers.is_empty() {
        return Err(ctx.error(
            spec_path,
            None,
            format!("{spec_path}.containers: at least one container is required"),
        ));
    }
    check_labels(
        ctx,
        spec.node_selector.as_ref(),
        &format!("{spec_path}.nodeSelector"),
    )?;

    // Requests.
    let mut app = Vec::with_capacity(spec.containers.len());
    for (i, c) in spec.containers.iter().enumerate() {
        let path = format!("{spec_path}.containers[{i}].resources");
        app.push(ctx.container_requests(c.resources.as_ref(), &path)?);
    }
    let mut inits = Vec::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let path = format!("{spec_path}.initContainers[{i}].resources");
        let requests = ctx.container_requests(c.resources.as_ref(), &path)?;
        inits.push(InitContainer {
            requests,
            sidecar: c.restart_policy.as_deref() == Some("Always"),
        });
    }
    let pod_level = match &spec.resources {
        Some(r) => Some(ctx.container_requests(Some(r), &format!("{spec_path}.resources"))?),
        None => None,
    };
    let mut overhead = ctx.resources(spec.overhead.as_ref(), &format!("{spec_path}.overhead"))?;
    if let Some(class) = &spec.runtime_class_name {
        match ctx.runtime_classes.get(class) {
            Some(info) => {
                // The RuntimeClass admission controller fills spec.overhead
                // only when the pod did not set it.
                if spec.overhead.is_none() {
                    overhead = info.overhead;
                }
                for (k, v) in &info.node_selector {
                    out.node_selector.insert(k.clone(), v.clone());
                }
                out.tolerations.extend(info.tolerations.iter().cloned());
            }
            None => ctx.warn_once(
                &format!("runtimeclass/{class}"),
                &format!("{spec_path}.runtimeClassName"),
                format!("RuntimeClass {class:?} is not in the manifests; its pod overhead is taken as zero"),
            ),
        }
    }
    out.requests = pod::effective_requests(&app, &inits, pod_level.as_ref(), &overhead);

    // Priority.
    out.priority_class_name = spec.priority_class_name.clone();
    out.priority = match (spec.priority, &spec.priority_class_name) {
        (Some(p), _) => p,
        (None, Some(class)) => match ctx.priority_classes.by_name.get(class) {
            Some(p) => *p,
            None => {
                ctx.warn_once(
                    &format!("priorityclass/{class}"),
                    &format!("{spec_path}.priorityClassName"),
                    format!("PriorityClass {class:?} is not in the manifests; priority 0 is used"),
                );
                0
            }
        },
        (None, None) => ctx.priority_classes.global_default.unwrap_or(0),
    };

    if let Some(seconds) = spec.termination_grace_period_seconds {
        if seconds < 0 {
            return Err(ctx.error(
                &format!("{spec_path}.terminationGracePeriodSeconds"),
                None,
                format!("must not be negative, got {seconds}"),
            ));
        }
        out.termination_grace = std::time::Duration::from_secs(seconds as u64);
    }
    for (k, v) in spec.node_selector.iter().flatten() {
        out.node_selector.insert(k.clone(), v.clone());
    }
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        out.tolerations.push(toleration(
            ctx,
            t,
            &format!("{spec_path}.tolerations[{i}]"),
        )?);
    }
    if let Some(affinity) = &spec.affinity {
        let path = format!("{spec_path}.affinity");
        if let Some(node) = &affinity.node_affinity {
            node_affinity(ctx, node, &format!("{path}.nodeAffinity"), &mut out)?;
        }
        if let Some(a) = &affinity.pod_affinity {
            out.pod_affinity = pod_affinity(
                ctx,
                a.required_during_scheduling_ignored_during_execution
                    .as_deref(),
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref(),
                &format!("{path}.podAffinity"),
            )?;
        }
        if let Some(a) = &affinity.pod_anti_affinity {
            out.pod_anti_affinity = pod_affinity(
                ctx,
                a.required_during_scheduling_ignored_during_execution
                    .as_deref(),
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref(),
                &format!("{path}.podAntiAffinity"),
            )?;
        }
    }
    for (i, c) in spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
    {
        let path = format!("{spec_path}.topologySpreadConstraints[{i}]");
        out.topology_spread.push(spread(ctx, c, &path)?);
    }
    let host_network = spec.host_network == Some(true);
    let all = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for c in all {
        for p in c.ports.iter().flatten() {
            // With hostNetwork, Kubernetes defaults hostPort to containerPort.
            let port = match (p.host_port, host_network) {
                (Some(port), _) if port > 0 => port,
                (_, true) => p.container_port,
                _ => continue,
            };
            out.host_ports.push(HostPort {
                port,
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_string()),
                host_ip: p.host_ip.clone().unwrap_or_default(),
            });
        }
    }
    out.local_storage_volumes = spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| {
            v.host_path.is_some()
                || v.empty_dir
                    .as_ref()
                    .is_some_and(|e| e.medium.as_deref() != Some("Memory"))
        })
        .map(|v| v.name.clone())
        .collect();
    unmodelled(ctx, spec, spec_path);
    Ok(out)
}

fn annotations(
    ctx: &mut Ctx<'_>,
    annotations: Option<&BTreeMap<String, String>>,
    meta_path: &str,
    out: &mut PodSpec,
) -> Result<(), ManifestError> {
    let Some(annotations) = annotations else {
        return Ok(());
    };
    out.annotations = annotations.clone();
    let path = format!("{meta_path}.annotations");
    if let Some(v) = annotations.get(pod::DO_NOT_DISRUPT_ANNOTATION) {
        out.do_not_disrupt = if v == "true" {
            Some(DoNotDisrupt::Always)
        } else {
            match parse_go_duration(v) {
                Ok(d) => Some(DoNotDisrupt::For(d)),
                Err(_) => {
                    // Karpenter ignores values that are neither "true" nor a duration.
                    ctx.warn_once(
                        "annotation/do-not-disrupt",
                        &path,
                        format!(
                            "{}: {v:?} is neither \"true\" nor a duration; Karpenter ignores it",
                            pod::DO_NOT_DISRUPT_ANNOTATION
                        ),
                    );
                    None
                }
            }
        };
    }
    if let Some(v) = annotations.get(pod::POD_DELETION_COST_ANNOTATION) {
        out.deletion_cost = v.trim().parse().map_err(|_| {
            ctx.error(
                &path,
                Some(pod::POD_DELETION_COST_ANNOTATION),
                format!("invalid pod deletion cost {v:?} (expected a 32-bit integer)"),
            )
        })?;
    }
    if let Some(v) = annotations.get(pod::DURATION_ANNOTATION) {
        out.run_duration = Some(
            parse_go_duration(v)
                .map_err(|e| ctx.error(&path, Some(pod::DURATION_ANNOTATION), e))?,
        );
    }
    Ok(())
}

fn toleration(
    ctx: &Ctx<'_>,
    t: &core::Toleration,
    path: &str,
) -> Result<Toleration, ManifestError> {
    let operator = match t.operator.as_deref() {
        None | Some("Equal") => TolerationOperator::Equal,
        Some("Exists") => TolerationOperator::Exists,
        Some(other) => {
            return Err(ctx.error(
                &format!("{path}.operator"),
                None,
                format!("unknown toleration operator {other:?} (expected Equal, Exists)"),
            ));
        }
    };
    let effect = match t.effect.as_deref() {
        None | Some("") => None,
        Some(e) => Some(TaintEffect::parse(e).ok_or_else(|| {
            ctx.error(
                &format!("{path}.effect"),
                None,
                format!(
                    "unknown taint effect {e:?} (expected NoSchedule, PreferNoSchedule, NoExecute)"
                ),
            )
        })?),
    };
    Ok(Toleration {
        key: t.key.clone().unwrap_or_default(),
        operator,
        value: t.value.clone().unwrap_or_default(),
        effect,
        toleration_seconds: t.toleration_seconds,
    })
}

fn node_term(
    ctx: &Ctx<'_>,
    term: &core::NodeSelectorTerm,
    path: &str,
    uses_match_fields: &mut bool,
) -> Result<Vec<NodeSelectorExpression>, ManifestError> {
    if term.match_fields.as_ref().is_some_and(|f| !f.is_empty()) {
        *uses_match_fields = true;
    }
    let mut out = Vec::new();
    for (i, r) in term.match_expressions.iter().flatten().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let operator = r
            .operator
            .parse::<Operator>()
            .ok()
            .filter(|operator| !operator.is_node_pool_only())
            .ok_or_else(|| {
                ctx.error(
                    &format!("{at}.operator"),
                    None,
                    format!(
                        "unknown operator {:?} (expected In, NotIn, Exists, DoesNotExist, Gt, Lt)",
                        r.operator
                    ),
                )
            })?;
        let values = r.values.clone().unwrap_or_default();
        check_values(operator, &values).map_err(|m| ctx.error(&at, None, m))?;
        let expression = NodeSelectorExpression {
            key: r.key.clone(),
            operator,
            values,
        };
        expression
            .to_requirement()
            .map_err(|e| ctx.error(&at, None, e.to_string()))?;
        out.push(expression);
    }
    Ok(out)
}

/// The value rules Kubernetes applies to node selector requirements.
pub fn check_values(operator: Operator, values: &[String]) -> Result<(), String> {
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            Err(format!("operator {operator:?} needs at least one value"))
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            Err(format!("operator {operator:?} takes no values"))
        }
        Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte => match values {
            [v] if v.parse::<i64>().is_ok() => Ok(()),
            _ => Err(format!(
                "operator {operator:?} needs exactly one integer value, got {values:?}"
            )),
        },
        _ => Ok(()),
    }
}

fn node_affinity(
    ctx: &mut Ctx<'_>,
    affinity: &core::NodeAffinity,
    path: &str,
    out: &mut PodSpec,
) -> Result<(), ManifestError> {
    let na = &mut out.node_affinity;
    if let Some(selector) = &affinity.required_during_scheduling_ignored_during_execution {
        for (i, term) in selector.node_selector_terms.iter().enumerate() {
            let at = format!(
                "{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
            );
            na.required
                .push(node_term(ctx, term, &at, &mut na.uses_match_fields)?);
        }
    }
    for (i, p) in affinity
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .flatten()
        .enumerate()
    {
        let at = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        if !(1..=100).contains(&p.weight) {
            return Err(ctx.error(
                &format!("{at}.weight"),
                None,
                format!("weight {} out of range 1..100", p.weight),
            ));
        }
        let mut ignored = false;
        let expressions = node_term(
            ctx,
            &p.preference,
            &format!("{at}.preference"),
            &mut ignored,
        )?;
        na.preferred.push(WeightedNodeSelectorTerm {
            weight: p.weight,
            expressions,
        });
    }
    Ok(())
}

/// Converts a metav1 label selector.
pub(crate) fn selector(
    ctx: &Ctx<'_>,
    s: &meta::LabelSelector,
    path: &str,
) -> Result<LabelSelector, ManifestError> {
    check_labels(ctx, s.match_labels.as_ref(), &format!("{path}.matchLabels"))?;
    let mut out = LabelSelector {
        match_labels: s.match_labels.clone().unwrap_or_default(),
        match_expressions: Vec::new(),
    };
    for (i, e) in s.match_expressions.iter().flatten().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        validate_label_key(&e.key)
            .map_err(|err| ctx.error(&format!("{at}.key"), None, err.to_string()))?;
        for value in e.values.iter().flatten() {
            validate_label_value(value)
                .map_err(|err| ctx.error(&format!("{at}.values"), None, err.to_string()))?;
        }
        let operator = SelectorOperator::parse(&e.operator).ok_or_else(|| {
            ctx.error(
                &format!("{at}.operator"),
                None,
                format!(
                    "unknown operator {:?} (expected In, NotIn, Exists, DoesNotExist)",
                    e.operator
                ),
            )
        })?;
        let values = e.values.clone().unwrap_or_default();
        let needs_values = matches!(operator, SelectorOperator::In | SelectorOperator::NotIn);
        if needs_values == values.is_empty() {
            let why = if needs_values {
                "needs at least one value"
            } else {
                "takes no values"
            };
            return Err(ctx.error(&at, None, format!("operator {:?} {why}", e.operator)));
        }
        out.match_expressions.push(SelectorExpression {
            key: e.key.clone(),
            operator,
            values,
        });
    }
    Ok(out)
}

fn optional_selector(
    ctx: &Ctx<'_>,
    s: Option<&meta::LabelSelector>,
    path: &str,
) -> Result<Option<LabelSelector>, ManifestError> {
    s.map(|s| selector(ctx, s, path)).transpose()
}

fn affinity_term(
    ctx: &Ctx<'_>,
    t: &core::PodAffinityTerm,
    path: &str,
) -> Result<PodAffinityTerm, ManifestError> {
    if t.topology_key.is_empty() {
        return Err(ctx.error(path, None, "topologyKey must not be empty"));
    }
    Ok(PodAffinityTerm {
        selector: optional_selector(
            ctx,
            t.label_selector.as_ref(),
            &format!("{path}.labelSelector"),
        )?,
        topology_key: t.topology_key.clone(),
        namespaces: t.namespaces.clone().unwrap_or_default(),
        namespace_selector: optional_selector(
            ctx,
            t.namespace_selector.as_ref(),
            &format!("{path}.namespaceSelector"),
        )?,
        match_label_keys: t.match_label_keys.clone().unwrap_or_default(),
        mismatch_label_keys: t.mismatch_label_keys.clone().unwrap_or_default(),
    })
}

fn pod_affinity(
    ctx: &Ctx<'_>,
    required: Option<&[core::PodAffinityTerm]>,
    preferred: Option<&[core::WeightedPodAffinityTerm]>,
    path: &str,
) -> Result<PodAffinity, ManifestError> {
    let mut out = PodAffinity::default();
    for (i, t) in required.into_iter().flatten().enumerate() {
        let at = format!("{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]");
        out.required.push(affinity_term(ctx, t, &at)?);
    }
    for (i, w) in preferred.into_iter().flatten().enumerate() {
        let at = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        if !(1..=100).contains(&w.weight) {
            return Err(ctx.error(
                &format!("{at}.weight"),
                None,
                format!("weight {} out of range 1..100", w.weight),
            ));
        }
        out.preferred.push(WeightedPodAffinityTerm {
            weight: w.weight,
            term: affinity_term(ctx, &w.pod_affinity_term, &format!("{at}.podAffinityTerm"))?,
        });
    }
    Ok(out)
}

fn spread(
    ctx: &Ctx<'_>,
    c: &core::TopologySpreadConstraint,
    path: &str,
) -> Result<TopologySpreadConstraint, ManifestError> {
    if c.max_skew < 1 {
        return Err(ctx.error(
            &format!("{path}.maxSkew"),
            None,
            format!("maxSkew must be at least 1, got {}", c.max_skew),
        ));
    }
    let when_unsatisfiable = match c.when_unsatisfiable.as_str() {
        "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
        "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
        other => {
            return Err(ctx.error(
                &format!("{path}.whenUnsatisfiable"),
                None,
                format!("unknown value {other:?} (expected DoNotSchedule, ScheduleAnyway)"),
            ));
        }
    };
    let policy = |field: &str, value: Option<&str>, default| match value {
        None => Ok(default),
        Some("Honor") => Ok(InclusionPolicy::Honor),
        Some("Ignore") => Ok(InclusionPolicy::Ignore),
        Some(other) => Err(ctx.error(
            &format!("{path}.{field}"),
            None,
            format!("unknown policy {other:?} (expected Honor, Ignore)"),
        )),
    };
    if let Some(m) = c.min_domains
        && m < 1
    {
        return Err(ctx.error(
            &format!("{path}.minDomains"),
            None,
            format!("minDomains must be at least 1, got {m}"),
        ));
    }
    Ok(TopologySpreadConstraint {
        max_skew: c.max_skew,
        topology_key: c.topology_key.clone(),
        when_unsatisfiable,
        selector: optional_selector(
            ctx,
            c.label_selector.as_ref(),
            &format!("{path}.labelSelector"),
        )?,
        min_domains: c.min_domains,
        node_affinity_policy: policy(
            "nodeAffinityPolicy",
            c.node_affinity_policy.as_deref(),
            InclusionPolicy::Honor,
        )?,
        node_taints_policy: policy(
            "nodeTaintsPolicy",
            c.node_taints_policy.as_deref(),
            InclusionPolicy::Ignore,
        )?,
        match_label_keys: c.match_label_keys.clone().unwrap_or_default(),
    })
}

/// One warning per decision-affecting pod field that karpsim ignores.
fn unmodelled(ctx: &mut Ctx<'_>, spec: &core::PodSpec, spec_path: &str) {
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        if v.persistent_volume_claim.is_some() || v.ephemeral.is_some() {
            ctx.warn_once(
                "volumes.persistentVolumeClaim",
                &format!("{spec_path}.volumes[{i}]"),
                "persistent volumes are not modelled (volume topology and attach limits are ignored)",
            );
        }
    }
    if spec.resource_claims.as_ref().is_some_and(|c| !c.is_empty()) {
        ctx.warn_once(
            "resourceClaims",
            &format!("{spec_path}.resourceClaims"),
            "dynamic resource allocation (resourceClaims) is not modelled",
        );
    }
    if let Some(name) = &spec.scheduler_name
        && name != "default-scheduler"
    {
        ctx.warn_once(
            "schedulerName",
            &format!("{spec_path}.schedulerName"),
            format!(
                "schedulerName {name:?} is not modelled; the default scheduler's rules are used"
            ),
        );
    }
    if spec.node_name.is_some() && !ctx.pods_bound {
        ctx.warn_once(
            "nodeName",
            &format!("{spec_path}.nodeName"),
            "a preset nodeName is not modelled; the pod is scheduled like any other",
        );
    }
    if spec.preemption_policy.is_some() {
        ctx.warn_once(
            "preemptionPolicy",
            &format!("{spec_path}.preemptionPolicy"),
            "preemption is not modelled",
        );
    }
    if spec
        .scheduling_gates
        .as_ref()
        .is_some_and(|g| !g.is_empty())
    {
        ctx.warn_once(
            "schedulingGates",
            &format!("{spec_path}.schedulingGates"),
            "scheduling gates are not modelled; the pod is treated as schedulable",
        );
    }
}
