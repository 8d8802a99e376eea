//! `karpenter.sh/v1` NodePool: every field that affects a decision, read
//! strictly (unknown fields are errors) and validated as the CRD does.
//! Pre-v1 spellings seen in widely copied examples are accepted with a
//! warning saying what v1 expects.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::kube::duration::{is_integer_duration, parse_go_duration};
use crate::kube::manifest::convert::check_values;
use crate::kube::manifest::{
    Document, Located, ManifestError, ManifestWarning, Position, Warnings,
};
use crate::kube::pod::NodeSelectorExpression;
use crate::kube::quantity::Quantity;
use crate::kube::requirements::{Operator, Requirement, Requirements};
use crate::kube::resources::{ResourceKind, ResourceNames};
use crate::kube::taints::{Taint, TaintEffect};

/// Karpenter's default `expireAfter`.
pub const DEFAULT_EXPIRE_AFTER: Duration = Duration::from_secs(720 * 3600);
/// Maximum number of disruption budgets (CRD `maxItems`).
pub const MAX_BUDGETS: usize = 50;

/// One NodePool requirement, with its `minValues`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePoolRequirement {
    /// Key, operator and values, validated.
    pub expression: NodeSelectorExpression,
    /// `minValues` (1–50).
    pub min_values: Option<u32>,
}

/// `spec.template.spec.nodeClassRef`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeClassRef {
    /// API group (`karpenter.k8s.aws`).
    pub group: String,
    /// Kind (`EC2NodeClass`).
    pub kind: String,
    /// Name.
    pub name: String,
}

/// `spec.disruption.consolidationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ConsolidationPolicy {
    /// Only empty nodes are removed.
    WhenEmpty,
    /// Empty and underutilized nodes (the default).
    #[default]
    WhenEmptyOrUnderutilized,
    /// Like `WhenEmptyOrUnderutilized`, gated by a disruption score.
    Balanced,
}

/// A disruption reason a budget can be limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DisruptionReason {
    /// Consolidation of underutilized nodes.
    Underutilized,
    /// Removal of empty nodes.
    Empty,
    /// Replacement of drifted nodes.
    Drifted,
}

/// `budgets[].nodes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetNodes {
    /// A node count.
    Count(u32),
    /// A percentage of the pool's nodes (0–100), rounded up.
    Percent(u32),
}

/// One disruption budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// How many nodes may be disrupting at once.
    pub nodes: BudgetNodes,
    /// Cron schedule (UTC) of when the budget starts being active.
    pub schedule: Option<String>,
    /// How long it stays active after each schedule hit.
    pub duration: Option<Duration>,
    /// Reasons it applies to; empty = all.
    pub reasons: Vec<DisruptionReason>,
}

/// `spec.disruption`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disruption {
    /// The consolidation policy.
    pub consolidation_policy: ConsolidationPolicy,
    /// `consolidateAfter`; `None` = `Never`.
    pub consolidate_after: Option<Duration>,
    /// Budgets (default one budget of 10%).
    pub budgets: Vec<Budget>,
}

impl Default for Disruption {
    fn default() -> Self {
        Disruption {
            consolidation_policy: ConsolidationPolicy::WhenEmptyOrUnderutilized,
            consolidate_after: Some(Duration::ZERO),
            budgets: vec![Budget {
                nodes: BudgetNodes::Percent(10),
                schedule: None,
                duration: None,
                reasons: Vec::new(),
            }],
        }
    }
}

/// A NodePool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePool {
    /// `metadata.name`.
    pub name: String,
    /// `spec.template.metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `spec.template.metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `spec.template.spec.requirements` as written.
    pub requirements: Vec<NodePoolRequirement>,
    /// The same requirements in the algebra's form (keys normalised,
    /// same-key entries intersected, minValues kept).
    pub requirement_set: Requirements,
    /// `spec.template.spec.taints`.
    pub taints: Vec<Taint>,
    /// `spec.template.spec.startupTaints`.
    pub startup_taints: Vec<Taint>,
    /// `expireAfter`; `None` = `Never` (default 720h).
    pub expire_after: Option<Duration>,
    /// `terminationGracePeriod`.
    pub termination_grace_period: Option<Duration>,
    /// `nodeClassRef`.
    pub node_class_ref: NodeClassRef,
    /// `spec.disruption`.
    pub disruption: Disruption,
    /// `spec.limits`: only the listed resources are limited.
    pub limits: BTreeMap<ResourceKind, i64>,
    /// `spec.weight` (1–100).
    pub weight: Option<u32>,
}

/// A whole Karpenter object with the spec type `S`: its header and status
/// are allowed and left alone (the header was read by `split_documents`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RawObject<S> {
    #[allow(dead_code)]
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    pub metadata: RawMetadata,
    pub spec: S,
    #[allow(dead_code)]
    status: Option<IgnoredAny>,
}

/// Object metadata: only the name matters; every standard field is allowed.
#[derive(Deserialize)]
pub(crate) struct RawMetadata {
    #[serde(default)]
    pub name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSpec {
    template: RawTemplate,
    disruption: Option<RawDisruption>,
    limits: Option<BTreeMap<String, Located<String>>>,
    weight: Option<Located<i64>>,
    replicas: Option<Located<IgnoredAny>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTemplate {
    metadata: Option<RawTemplateMetadata>,
    spec: RawTemplateSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTemplateMetadata {
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTemplateSpec {
    #[serde(default)]
    requirements: Vec<Located<RawRequirement>>,
    taints: Option<Vec<RawTaint>>,
    startup_taints: Option<Vec<RawTaint>>,
    expire_after: Option<Located<String>>,
    termination_grace_period: Option<Located<String>>,
    node_class_ref: Located<RawNodeClassRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRequirement {
    key: String,
    operator: Located<String>,
    #[serde(default)]
    values: Vec<String>,
    min_values: Option<Located<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTaint {
    key: String,
    #[serde(default)]
    value: String,
    effect: Located<String>,
    #[allow(dead_code)]
    time_added: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawNodeClassRef {
    group: Option<String>,
    kind: Option<String>,
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawDisruption {
    consolidation_policy: Option<Located<String>>,
    consolidate_after: Option<Located<String>>,
    budgets: Option<Located<Vec<Located<RawBudget>>>>,
    /// Pre-v1 position of `expireAfter`.
    expire_after: Option<Located<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawBudget {
    nodes: Located<String>,
    schedule: Option<Located<String>>,
    duration: Option<Located<String>>,
    reasons: Option<Vec<Located<String>>>,
}

/// Builds errors and warnings at located values of one document.
pub(crate) struct At<'a> {
    pub doc: &'a Document,
}

impl At<'_> {
    pub fn error<T>(
        &self,
        at: &Located<T>,
        path: &str,
        message: impl Into<String>,
    ) -> ManifestError {
        ManifestError::Field {
            at: Position::at(&self.doc.file, at.position),
            path: self.doc.path(path),
            message: message.into(),
        }
    }

    pub fn warning<T>(
        &self,
        at: &Located<T>,
        path: &str,
        message: impl Into<String>,
    ) -> ManifestWarning {
        ManifestWarning {
            at: Position::at(&self.doc.file, at.position),
            path: self.doc.path(path),
            message: message.into(),
        }
    }
}

/// `Never` or a CRD-pattern duration (`^([0-9]+(s|m|h))+$`).
fn never_or_duration(
    at: &At<'_>,
    value: &Located<String>,
    path: &str,
) -> Result<Option<Duration>, ManifestError> {
    if value.value == "Never" {
        return Ok(None);
    }
    duration(at, value, path, &['s', 'm', 'h']).map(Some)
}

fn duration(
    at: &At<'_>,
    value: &Located<String>,
    path: &str,
    units: &[char],
) -> Result<Duration, ManifestError> {
    let text = &value.value;
    if !is_integer_duration(text, units) {
        let allowed: String = units
            .iter()
            .map(|u| format!("{u}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(at.error(
            value,
            path,
            format!("invalid duration {text:?} (expected whole numbers with units {allowed}, like \"720h\" or \"1h30m\")"),
        ));
    }
    parse_go_duration(text).map_err(|e| at.error(value, path, e))
}

fn taints(
    at: &At<'_>,
    raw: Option<Vec<RawTaint>>,
    path: &str,
) -> Result<Vec<Taint>, ManifestError> {
    let mut out = Vec::new();
    for (i, t) in raw.into_iter().flatten().enumerate() {
        let effect = TaintEffect::parse(&t.effect.value).ok_or_else(|| {
            at.error(
                &t.effect,
                &format!("{path}[{i}].effect"),
                format!(
                    "unknown taint effect {:?} (expected NoSchedule, PreferNoSchedule, NoExecute)",
                    t.effect.value
                ),
            )
        })?;
        out.push(Taint {
            key: t.key,
            value: t.value,
            effect,
        });
    }
    Ok(out)
}

/// Reads a `karpenter.sh/v1 NodePool` document.
pub fn read_nodepool(
    doc: &Document,
    names: &mut ResourceNames,
    warnings: &mut Warnings,
) -> Result<NodePool, ManifestError> {
    let raw: RawObject<RawSpec> = doc.deserialize()?;
    let at = At { doc };
    let spec = raw.spec;
    let tspec = spec.template.spec;
    const REQ: &str = "spec.template.spec.requirements";

    let mut requirements = Vec::new();
    let mut requirement_set = Requirements::new();
    for (i, r) in tspec.requirements.iter().enumerate() {
        let operator = r.value.operator.value.parse::<Operator>().map_err(|_| {
            at.error(
                &r.value.operator,
                &format!("{REQ}[{i}].operator"),
                format!(
                    "unknown operator {:?} (expected In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)",
                    r.value.operator.value
                ),
            )
        })?;
        check_values(operator, &r.value.values)
            .map_err(|m| at.error(r, &format!("{REQ}[{i}]"), m))?;
        if matches!(
            operator,
            Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte
        ) && r.value.values[0].starts_with('-')
        {
            return Err(at.error(
                r,
                &format!("{REQ}[{i}]"),
                format!(
                    "operator {operator:?} needs a non-negative integer, got {:?}",
                    r.value.values[0]
                ),
            ));
        }
        let min_values = match &r.value.min_values {
            None => None,
            Some(m) => {
                let path = format!("{REQ}[{i}].minValues");
                if !(1..=50).contains(&m.value) {
                    return Err(at.error(
                        m,
                        &path,
                        format!("minValues {} out of range 1..50", m.value),
                    ));
                }
                if operator == Operator::In && (r.value.values.len() as i64) < m.value {
                    return Err(at.error(
                        m,
                        &path,
                        format!(
                            "minValues {} is more than the {} values given",
                            m.value,
                            r.value.values.len()
                        ),
                    ));
                }
                Some(m.value as u32)
            }
        };
        let requirement =
            Requirement::with_min_values(&r.value.key, operator, &r.value.values, min_values)
                .map_err(|e| at.error(r, &format!("{REQ}[{i}]"), e.to_string()))?;
        requirement_set.add(requirement);
        requirements.push(NodePoolRequirement {
            expression: NodeSelectorExpression {
                key: r.value.key.clone(),
                operator,
                values: r.value.values.clone(),
            },
            min_values,
        });
    }

    let mut expire_after = match &tspec.expire_after {
        Some(v) => never_or_duration(&at, v, "spec.template.spec.expireAfter")?,
        None => Some(DEFAULT_EXPIRE_AFTER),
    };
    let termination_grace_period = tspec
        .termination_grace_period
        .as_ref()
        .map(|v| {
            duration(
                &at,
                v,
                "spec.template.spec.terminationGracePeriod",
                &['s', 'm', 'h'],
            )
        })
        .transpose()?;

    let r = &tspec.node_class_ref;
    let mut defaulted = Vec::new();
    let group = r.value.group.clone().unwrap_or_else(|| {
        defaulted.push("group");
        "karpenter.k8s.aws".to_string()
    });
    let kind = r.value.kind.clone().unwrap_or_else(|| {
        defaulted.push("kind");
        "EC2NodeClass".to_string()
    });
    if !defaulted.is_empty() {
        warnings.once(
            "nodepool.nodeClassRef.defaulted",
            at.warning(
                r,
                "spec.template.spec.nodeClassRef",
                format!(
                    "karpenter.sh/v1 requires {}; assuming group karpenter.k8s.aws, kind EC2NodeClass",
                    defaulted.join(" and ")
                ),
            ),
        );
    }
    let node_class_ref = NodeClassRef {
        group,
        kind,
        name: r.value.name.clone(),
    };

    let mut disruption = Disruption::default();
    if let Some(d) = &spec.disruption {
        if let Some(p) = &d.consolidation_policy {
            let path = "spec.disruption.consolidationPolicy";
            disruption.consolidation_policy = match p.value.as_str() {
                "WhenEmpty" => ConsolidationPolicy::WhenEmpty,
                "WhenEmptyOrUnderutilized" => ConsolidationPolicy::WhenEmptyOrUnderutilized,
                "Balanced" => ConsolidationPolicy::Balanced,
                "WhenUnderutilized" => {
                    warnings.once(
                        "nodepool.consolidationPolicy.WhenUnderutilized",
                        at.warning(
                            p,
                            path,
                            "\"WhenUnderutilized\" is the pre-v1 name; karpenter.sh/v1 expects \"WhenEmptyOrUnderutilized\" (read as that)",
                        ),
                    );
                    ConsolidationPolicy::WhenEmptyOrUnderutilized
                }
                other => {
                    return Err(at.error(
                        p,
                        path,
                        format!("unknown consolidation policy {other:?} (expected WhenEmpty, WhenEmptyOrUnderutilized, Balanced)"),
                    ));
                }
            };
        }
        if let Some(c) = &d.consolidate_after {
            disruption.consolidate_after =
                never_or_duration(&at, c, "spec.disruption.consolidateAfter")?;
        }
        if let Some(e) = &d.expire_after {
            warnings.once(
                "nodepool.disruption.expireAfter",
                at.warning(
                    e,
                    "spec.disruption.expireAfter",
                    "expireAfter under spec.disruption is the pre-v1 position; karpenter.sh/v1 expects spec.template.spec.expireAfter (read as that)",
                ),
            );
            if tspec.expire_after.is_none() {
                expire_after = never_or_duration(&at, e, "spec.disruption.expireAfter")?;
            }
        }
        if let Some(budgets) = &d.budgets {
            if budgets.value.len() > MAX_BUDGETS {
                return Err(at.error(
                    budgets,
                    "spec.disruption.budgets",
                    format!(
                        "at most {MAX_BUDGETS} budgets are allowed, got {}",
                        budgets.value.len()
                    ),
                ));
            }
            disruption.budgets = budgets
                .value
                .iter()
                .enumerate()
                .map(|(i, b)| budget(&at, b, &format!("spec.disruption.budgets[{i}]")))
                .collect::<Result<_, _>>()?;
        }
    }

    let mut limits = BTreeMap::new();
    for (name, value) in spec.limits.iter().flatten() {
        let path = format!("spec.limits.{name}");
        let q = Quantity::parse(&value.value).map_err(|e| at.error(value, &path, e.to_string()))?;
        if q.is_negative() {
            return Err(at.error(value, &path, format!("negative quantity {:?}", value.value)));
        }
        let kind = names
            .kind_for(name)
            .map_err(|e| at.error(value, &path, e.to_string()))?;
        limits.insert(kind, kind.amount(q));
    }

    let weight = match &spec.weight {
        None => None,
        Some(w) if (1..=100).contains(&w.value) => Some(w.value as u32),
        Some(w) => {
            return Err(at.error(
                w,
                "spec.weight",
                format!("weight {} out of range 1..100", w.value),
            ));
        }
    };
    if let Some(r) = &spec.replicas {
        warnings.once(
            "nodepool.replicas",
            at.warning(
                r,
                "spec.replicas",
                "static NodePools (spec.replicas) are not modelled; read as a dynamic NodePool",
            ),
        );
    }

    let metadata = spec.template.metadata;
    Ok(NodePool {
        name: raw.metadata.name,
        labels: metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default(),
        annotations: metadata.and_then(|m| m.annotations).unwrap_or_default(),
        requirements,
        requirement_set,
        taints: taints(&at, tspec.taints, "spec.template.spec.taints")?,
        startup_taints: taints(
            &at,
            tspec.startup_taints,
            "spec.template.spec.startupTaints",
        )?,
        expire_after,
        termination_grace_period,
        node_class_ref,
        disruption,
        limits,
        weight,
    })
}

fn budget(at: &At<'_>, b: &Located<RawBudget>, path: &str) -> Result<Budget, ManifestError> {
    let raw = &b.value;
    let nodes_text = &raw.nodes.value;
    let bad_nodes = || {
        at.error(
            &raw.nodes,
            &format!("{path}.nodes"),
            format!("invalid nodes {nodes_text:?} (expected a count like \"5\" or a percentage like \"10%\")"),
        )
    };
    let nodes = match nodes_text.strip_suffix('%') {
        Some(p) if (1..=3).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()) => {
            let p: u32 = p.parse().map_err(|_| bad_nodes())?;
            if p > 100 {
                return Err(bad_nodes());
            }
            BudgetNodes::Percent(p)
        }
        Some(_) => return Err(bad_nodes()),
        None if !nodes_text.is_empty() && nodes_text.bytes().all(|c| c.is_ascii_digit()) => {
            BudgetNodes::Count(nodes_text.parse().map_err(|_| bad_nodes())?)
        }
        None => return Err(bad_nodes()),
    };
    if raw.schedule.is_some() != raw.duration.is_some() {
        return Err(at.error(b, path, "'schedule' must be set with 'duration'"));
    }
    let schedule = match &raw.schedule {
        Some(s) => {
            let text = s.value.trim();
            let macros = [
                "@annually",
                "@yearly",
                "@monthly",
                "@weekly",
                "@daily",
                "@midnight",
                "@hourly",
            ];
            if !(macros.contains(&text) || text.split_whitespace().count() == 5) {
                return Err(at.error(
                    s,
                    &format!("{path}.schedule"),
                    format!("invalid schedule {:?} (expected a 5-field cron expression or a macro like @daily)", s.value),
                ));
            }
            Some(text.to_string())
        }
        None => None,
    };
    let duration = match &raw.duration {
        Some(d) => {
            // The CRD allows h/m groups and tolerates a trailing "0s".
            let trimmed = d
                .value
                .strip_suffix("0s")
                .filter(|t| !t.is_empty())
                .unwrap_or(&d.value);
            let located = Located {
                value: trimmed.to_string(),
                position: d.position,
            };
            Some(duration(at, &located, &format!("{path}.duration"), &['h', 'm']).map_err(|_| {
                at.error(
                    d,
                    &format!("{path}.duration"),
                    format!("invalid duration {:?} (expected hours and minutes, like \"10m\" or \"1h30m\")", d.value),
                )
            })?)
        }
        None => None,
    };
    let mut reasons = Vec::new();
    for (i, r) in raw.reasons.iter().flatten().enumerate() {
        reasons.push(match r.value.as_str() {
            "Underutilized" => DisruptionReason::Underutilized,
            "Empty" => DisruptionReason::Empty,
            "Drifted" => DisruptionReason::Drifted,
            other => {
                return Err(at.error(
                    r,
                    &format!("{path}.reasons[{i}]"),
                    format!("unknown disruption reason {other:?} (expected Underutilized, Empty, Drifted)"),
                ));
            }
        });
    }
    Ok(Budget {
        nodes,
        schedule,
        duration,
        reasons,
    })
}
