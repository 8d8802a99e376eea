//! `karpenter.sh/v1` NodePool: every field that affects a decision, read
//! strictly (unknown fields are errors) and validated as Karpenter is: the
//! CRD schema and CEL rules (core pkg/apis/crds/karpenter.sh_nodepools.yaml),
//! its runtime validation (pkg/apis/v1/nodepool_validation.go,
//! nodeclaim_validation.go) and the API server's name rules; a budget
//! schedule must also parse as Karpenter's cron library parses it.
//! Pre-v1 spellings seen in widely copied examples are accepted with a
//! warning saying what v1 expects.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::karpenter::disruption::cron::Schedule;
use crate::kube::labels::{
    KARPENTER_DOMAIN, LABEL_NODEPOOL, LabelError, RestrictedLabelRules, check_restricted_label,
    is_well_known_label, label_domain, normalize_label_key, validate_label_key,
    validate_label_value, well_known_values,
};
use crate::kube::pod::NodeSelectorExpression;
use crate::kube::quantity::Quantity;
use crate::kube::requirements::{Operator, Requirement, Requirements};
use crate::kube::resources::ResourceNames;
use crate::kube::taints::{Taint, TaintEffect};
use crate::manifest::convert::check_values;
use crate::manifest::{Document, Located, ManifestError, ManifestWarning, Position, Warnings};
use crate::nodepool::*;
use crate::time::duration::{is_integer_duration, parse_go_duration};

/// Longest label value (apimachinery `LabelValueMaxLength`).
const MAX_LABEL_VALUE_LEN: usize = 63;
/// Longest object name (DNS-1123 subdomain).
const MAX_NAME_LEN: usize = 253;

/// Where a NodePool and its requirements are written, kept beside the
/// [`NodePool`] (not in it, so that comparing pools stays about meaning)
/// for messages made after loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePoolSource {
    /// `metadata.name`.
    pub at: Position,
    /// One entry per requirement, in the order written.
    pub requirements: Vec<RequirementSource>,
}

/// Where one requirement's values are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementSource {
    /// `spec.template.spec.requirements[i]`.
    pub path: String,
    /// One position per value.
    pub values: Vec<Position>,
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
    pub name: Option<Located<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSpec {
    template: RawTemplate,
    disruption: Option<RawDisruption>,
    limits: Option<BTreeMap<String, Located<String>>>,
    weight: Option<Located<i64>>,
    replicas: Option<Located<i64>>,
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
    labels: Option<Located<BTreeMap<String, Located<String>>>>,
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTemplateSpec {
    requirements: Option<Located<Vec<Located<RawRequirement>>>>,
    taints: Option<Vec<RawTaint>>,
    startup_taints: Option<Vec<RawTaint>>,
    expire_after: Option<Located<String>>,
    termination_grace_period: Option<Located<String>>,
    node_class_ref: Located<RawNodeClassRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRequirement {
    key: Located<String>,
    operator: Located<String>,
    values: Option<Located<Vec<Located<String>>>>,
    min_values: Option<Located<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawTaint {
    key: Option<Located<String>>,
    value: Option<Located<String>>,
    effect: Located<String>,
    #[allow(dead_code)]
    time_added: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawNodeClassRef {
    group: Option<String>,
    kind: Option<String>,
    name: Located<String>,
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
    reasons: Option<Located<Vec<Located<String>>>>,
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

/// Taints and startup taints as upstream validates them (core
/// nodeclaim_validation.go `validateTaintsField`, CRD schema): a key that is
/// a qualified name, a value that is empty or a qualified name, a known
/// effect, and no key/effect pair twice across both lists.
fn taints(
    at: &At<'_>,
    raw: Option<Vec<RawTaint>>,
    path: &str,
    seen: &mut Vec<(String, TaintEffect)>,
) -> Result<Vec<Taint>, ManifestError> {
    let mut out = Vec::new();
    for (i, t) in raw.into_iter().flatten().enumerate() {
        let path = format!("{path}[{i}]");
        let Some(key) = t.key.as_ref().filter(|k| !k.value.is_empty()) else {
            return Err(at.error(&t.effect, &format!("{path}.key"), "taint key is required"));
        };
        validate_label_key(&key.value).map_err(|e| {
            at.error(
                key,
                &format!("{path}.key"),
                format!("invalid taint key: {e}"),
            )
        })?;
        let value = t
            .value
            .as_ref()
            .map(|v| v.value.clone())
            .unwrap_or_default();
        if !value.is_empty()
            && let Err(e) = validate_label_key(&value)
        {
            let located = t.value.as_ref().unwrap_or(key);
            let reason = match e {
                LabelError::InvalidKey { reason, .. } => reason,
                other => other.to_string(),
            };
            return Err(at.error(
                located,
                &format!("{path}.value"),
                format!("invalid taint value {value:?}: {reason}"),
            ));
        }
        let effect = TaintEffect::parse(&t.effect.value).ok_or_else(|| {
            at.error(
                &t.effect,
                &format!("{path}.effect"),
                format!(
                    "unknown taint effect {:?} (expected NoSchedule, PreferNoSchedule, NoExecute)",
                    t.effect.value
                ),
            )
        })?;
        if seen.iter().any(|(k, e)| *k == key.value && *e == effect) {
            return Err(at.error(
                key,
                &path,
                format!("duplicate taint key/effect pair {}={effect}", key.value),
            ));
        }
        seen.push((key.value.clone(), effect));
        out.push(Taint {
            key: key.value.clone(),
            value,
            effect,
        });
    }
    Ok(out)
}

/// Why `name` is not a DNS-1123 subdomain (apimachinery
/// `IsDNS1123Subdomain`), the rule the API server applies to the names of
/// NodePools and EC2NodeClasses.
fn dns_subdomain_problem(name: &str) -> Option<String> {
    if name.len() > MAX_NAME_LEN {
        return Some(format!(
            "must be no more than {MAX_NAME_LEN} characters, has {}",
            name.len()
        ));
    }
    let lower_alphanumeric = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let label_ok = |part: &str| {
        let b = part.as_bytes();
        !b.is_empty()
            && lower_alphanumeric(b[0])
            && lower_alphanumeric(b[b.len() - 1])
            && b.iter().all(|&c| lower_alphanumeric(c) || c == b'-')
    };
    (!name.split('.').all(label_ok)).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_string()
    })
}

/// `metadata.name`: required, and a DNS-1123 subdomain (the API server's
/// `ValidateObjectMeta` with `NameIsDNSSubdomain`).
pub(crate) fn object_name(
    at: &At<'_>,
    metadata: &RawMetadata,
    kind: &str,
) -> Result<Located<String>, ManifestError> {
    let Some(name) = metadata.name.as_ref().filter(|n| !n.value.is_empty()) else {
        let node = at.doc.node.get("metadata").unwrap_or(&at.doc.node);
        return Err(ManifestError::field(
            &at.doc.file,
            node,
            at.doc.path("metadata.name"),
            format!("{kind} has no name (metadata.name is required)"),
        ));
    };
    if let Some(problem) = dns_subdomain_problem(&name.value) {
        return Err(at.error(
            name,
            "metadata.name",
            format!("invalid {kind} name {:?}: {problem}", name.value),
        ));
    }
    Ok(name.clone())
}

/// A label value's syntax problem, saying the length when that is it.
fn label_value_problem(value: &str) -> Option<String> {
    if value.len() > MAX_LABEL_VALUE_LEN {
        return Some(format!(
            "label value {value:?} is {} characters; at most {MAX_LABEL_VALUE_LEN} are allowed",
            value.len()
        ));
    }
    validate_label_value(value).err().map(|e| e.to_string())
}

/// Why a requirement or template label key is restricted: upstream's
/// `IsRestrictedLabel` (restricted domains, `kubernetes.io/hostname`; the
/// well-known keys excepted), the CRD's CEL rules (`karpenter.sh/nodepool`,
/// which Karpenter sets itself, and any domain ending in `karpenter.sh`).
fn restricted_key_problem(key: &str) -> Option<String> {
    if key == LABEL_NODEPOOL {
        return Some(format!(
            "label {LABEL_NODEPOOL:?} is restricted (Karpenter sets it to the NodePool's name)"
        ));
    }
    if let Err(e) = check_restricted_label(key, RestrictedLabelRules::Current) {
        return Some(e.to_string());
    }
    (!is_well_known_label(key) && label_domain(key).ends_with(KARPENTER_DOMAIN))
        .then(|| format!("label domain {KARPENTER_DOMAIN:?} is restricted"))
}

/// The parts of one checked requirement.
type CheckedRequirement = (Requirement, NodeSelectorExpression, Option<u32>);

/// A requirement's operator, one of the enum the NodePool and NodeOverlay
/// CRDs share.
pub(crate) fn operator(
    at: &At<'_>,
    written: &Located<String>,
    path: &str,
) -> Result<Operator, ManifestError> {
    written.value.parse::<Operator>().map_err(|_| {
        at.error(
            written,
            &format!("{path}.operator"),
            format!(
                "unknown operator {:?} (expected In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)",
                written.value
            ),
        )
    })
}

/// One requirement, checked as Karpenter checks it: the CRD schema and CEL
/// rules (operator enum, key and value patterns, restricted keys, value
/// counts, minValues 1..50 and at most the number of `In` values) and core
/// nodeclaim_validation.go `ValidateRequirement` (restricted label domains,
/// qualified-name keys, `validateWellKnownValues`: an `In` of capacity type
/// or tenancy needs a known value; unknown ones beside known ones are
/// ignored with a warning, as upstream logs them and proceeds).
fn requirement(
    at: &At<'_>,
    r: &Located<RawRequirement>,
    path: &str,
    pool: &str,
    warnings: &mut Warnings,
) -> Result<CheckedRequirement, ManifestError> {
    let raw = &r.value;
    let operator = operator(at, &raw.operator, path)?;
    let key_path = format!("{path}.key");
    let key = normalize_label_key(&raw.key.value);
    validate_label_key(&raw.key.value).map_err(|e| at.error(&raw.key, &key_path, e.to_string()))?;
    if let Some(problem) = restricted_key_problem(key) {
        return Err(at.error(&raw.key, &key_path, problem));
    }
    let located: Vec<&Located<String>> = raw.values.iter().flat_map(|v| v.value.iter()).collect();
    for (j, v) in located.iter().enumerate() {
        if let Some(problem) = label_value_problem(&v.value) {
            return Err(at.error(*v, &format!("{path}.values[{j}]"), problem));
        }
    }
    let values: Vec<String> = located.iter().map(|v| v.value.clone()).collect();
    check_values(operator, &values).map_err(|m| at.error(r, path, m))?;
    if matches!(
        operator,
        Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte
    ) && values[0].starts_with('-')
    {
        return Err(at.error(
            r,
            path,
            format!(
                "operator {operator:?} needs a non-negative integer, got {:?}",
                values[0]
            ),
        ));
    }
    let min_values = match &raw.min_values {
        None => None,
        Some(m) => {
            let path = format!("{path}.minValues");
            if !(1..=50).contains(&m.value) {
                return Err(at.error(
                    m,
                    &path,
                    format!("minValues {} out of range 1..50", m.value),
                ));
            }
            if operator == Operator::In && (values.len() as i64) < m.value {
                return Err(at.error(
                    m,
                    &path,
                    format!(
                        "minValues {} is more than the {} values given",
                        m.value,
                        values.len()
                    ),
                ));
            }
            Some(m.value as u32)
        }
    };
    if operator == Operator::In
        && let Some(known) = well_known_values(key)
    {
        let expected = known.join(", ");
        let unknown: Vec<(usize, &&Located<String>)> = located
            .iter()
            .enumerate()
            .filter(|(_, v)| !known.contains(&v.value.as_str()))
            .collect();
        let valid = located.len() - unknown.len();
        if let Some((j, first)) = unknown.first()
            && valid == 0
        {
            return Err(at.error(
                **first,
                &format!("{path}.values[{j}]"),
                format!(
                    "invalid {key} value {:?} (expected one of: {expected})",
                    first.value
                ),
            ));
        }
        if let Some(min) = min_values
            && valid < min as usize
        {
            return Err(at.error(
                r,
                path,
                format!(
                    "minValues {min} needs {min} valid {key} values, but only {valid} of [{}] are (expected values: {expected})",
                    values.join(", ")
                ),
            ));
        }
        for (j, v) in unknown {
            let value_path = format!("{path}.values[{j}]");
            warnings.once(
                &format!("nodepool/{pool}/{value_path}"),
                at.warning(
                    *v,
                    &value_path,
                    format!(
                        "{:?} is not a {key} value (expected one of: {expected}); ignored, as Karpenter does",
                        v.value
                    ),
                ),
            );
        }
    }
    let requirement = Requirement::with_min_values(&raw.key.value, operator, &values, min_values)
        .map_err(|e| at.error(r, path, e.to_string()))?;
    let expression = NodeSelectorExpression {
        key: raw.key.value.clone(),
        operator,
        values,
    };
    Ok((requirement, expression, min_values))
}

/// Reads a `karpenter.sh/v1 NodePool` document, with where its parts are
/// written.
pub fn read_nodepool(
    doc: &Document,
    names: &mut ResourceNames,
    warnings: &mut Warnings,
) -> Result<(NodePool, NodePoolSource), ManifestError> {
    let raw: RawObject<RawSpec> = doc.deserialize()?;
    let at = At { doc };
    let name = object_name(&at, &raw.metadata, "NodePool")?;
    if name.value.len() > MAX_LABEL_VALUE_LEN {
        return Err(at.error(
            &name,
            "metadata.name",
            format!(
                "NodePool name {:?} is {} characters; at most {MAX_LABEL_VALUE_LEN} are allowed, as it becomes the karpenter.sh/nodepool label value of every node it launches",
                name.value,
                name.value.len()
            ),
        ));
    }
    let spec = raw.spec;
    let tspec = spec.template.spec;
    const REQ: &str = "spec.template.spec.requirements";

    let mut source = NodePoolSource {
        at: Position::at(&doc.file, name.position),
        requirements: Vec::new(),
    };
    let mut requirements = Vec::new();
    let mut requirement_set = Requirements::new();
    let raw_requirements = tspec.requirements.as_ref();
    if let Some(list) = raw_requirements
        && list.value.len() > MAX_REQUIREMENTS
    {
        return Err(at.error(
            list,
            REQ,
            format!(
                "at most {MAX_REQUIREMENTS} requirements are allowed, got {}",
                list.value.len()
            ),
        ));
    }
    for (i, r) in raw_requirements
        .map(|l| l.value.as_slice())
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let path = format!("{REQ}[{i}]");
        let (requirement, expression, min_values) =
            requirement(&at, r, &path, &name.value, warnings)?;
        requirement_set.add(requirement);
        source.requirements.push(RequirementSource {
            path: doc.path(&path),
            values: r
                .value
                .values
                .iter()
                .flat_map(|v| v.value.iter())
                .map(|v| Position::at(&doc.file, v.position))
                .collect(),
        });
        requirements.push(NodePoolRequirement {
            expression,
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
    if r.value.name.value.is_empty() {
        return Err(at.error(
            &r.value.name,
            "spec.template.spec.nodeClassRef.name",
            "name may not be empty",
        ));
    }
    let node_class_ref = NodeClassRef {
        group,
        kind,
        name: r.value.name.value.clone(),
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
    // Static NodePools (core pkg/apis/v1/nodepool.go: `replicas` has
    // minimum 0, and the CEL rules allow only `limits.nodes` and no
    // `weight` beside it).
    let replicas = match &spec.replicas {
        None => None,
        Some(r) if r.value < 0 => {
            return Err(at.error(
                r,
                "spec.replicas",
                format!("replicas must not be negative, got {}", r.value),
            ));
        }
        Some(r) => Some(u32::try_from(r.value).map_err(|_| {
            at.error(
                r,
                "spec.replicas",
                format!(
                    "replicas {} is more than one run simulates ({})",
                    r.value,
                    u32::MAX
                ),
            )
        })?),
    };
    if replicas.is_some() {
        if let Some((name, value)) = spec
            .limits
            .iter()
            .flatten()
            .find(|(name, _)| name.as_str() != "nodes")
        {
            return Err(at.error(
                value,
                &format!("spec.limits.{name}"),
                "only 'limits.nodes' is supported on static NodePools (spec.replicas is set)",
            ));
        }
        if let Some(w) = &spec.weight {
            return Err(at.error(
                w,
                "spec.weight",
                "'weight' is not supported on static NodePools (spec.replicas is set)",
            ));
        }
    }

    let metadata = spec.template.metadata;
    let labels = template_labels(&at, metadata.as_ref().and_then(|m| m.labels.as_ref()))?;
    let mut seen_taints = Vec::new();
    let taints_read = taints(
        &at,
        tspec.taints,
        "spec.template.spec.taints",
        &mut seen_taints,
    )?;
    let startup_taints = taints(
        &at,
        tspec.startup_taints,
        "spec.template.spec.startupTaints",
        &mut seen_taints,
    )?;
    let pool = NodePool {
        name: name.value,
        labels,
        annotations: metadata.and_then(|m| m.annotations).unwrap_or_default(),
        requirements,
        requirement_set,
        taints: taints_read,
        startup_taints,
        expire_after,
        termination_grace_period,
        node_class_ref,
        disruption,
        limits,
        weight,
        replicas,
    };
    Ok((pool, source))
}

/// `spec.template.metadata.labels`, checked as core nodepool_validation.go
/// `validateLabels` and the CRD do: qualified-name keys that are not
/// restricted, label-value syntax (at most 63 characters), at most 100.
fn template_labels(
    at: &At<'_>,
    raw: Option<&Located<BTreeMap<String, Located<String>>>>,
) -> Result<BTreeMap<String, String>, ManifestError> {
    let Some(raw) = raw else {
        return Ok(BTreeMap::new());
    };
    const PATH: &str = "spec.template.metadata.labels";
    if raw.value.len() > MAX_TEMPLATE_LABELS {
        return Err(at.error(
            raw,
            PATH,
            format!(
                "at most {MAX_TEMPLATE_LABELS} labels are allowed, got {}",
                raw.value.len()
            ),
        ));
    }
    let mut out = BTreeMap::new();
    for (key, value) in &raw.value {
        let path = format!("{PATH}.{key}");
        validate_label_key(key).map_err(|e| at.error(value, &path, e.to_string()))?;
        if let Some(problem) = restricted_key_problem(key) {
            return Err(at.error(value, &path, problem));
        }
        if let Some(problem) = label_value_problem(&value.value) {
            return Err(at.error(value, &path, problem));
        }
        out.insert(key.clone(), value.value.clone());
    }
    Ok(out)
}

/// The CRD pattern of a budget duration,
/// `^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`: hours, minutes, or hours
/// then minutes, with the "0s" Go's `Duration.String` appends allowed.
fn is_budget_duration(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let body = text.strip_suffix("0s").unwrap_or(text);
    match body.split_once('h') {
        Some((hours, rest)) => {
            digits(hours) && (rest.is_empty() || rest.strip_suffix('m').is_some_and(digits))
        }
        None => body.strip_suffix('m').is_some_and(digits),
    }
}

/// One disruption budget, checked against the CRD (nodes pattern
/// `^((100|[0-9]{1,2})%|[0-9]+)$`, schedule pattern, duration pattern,
/// schedule with duration, reasons a set of known reasons) and against
/// what Karpenter's budget check parses: a schedule the CRD lets through
/// but robfig/cron's `ParseStandard` refuses (`0 25 * * *`) makes upstream
/// fail closed, so the NodePool would never be disrupted.
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
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let nodes = match nodes_text.strip_suffix('%') {
        Some(p) if p == "100" || (p.len() <= 2 && digits(p)) => {
            BudgetNodes::Percent(p.parse().map_err(|_| bad_nodes())?)
        }
        Some(_) => return Err(bad_nodes()),
        // Counts beyond u32 mean "no limit" as surely as u32::MAX does.
        None if digits(nodes_text) => BudgetNodes::Count(
            nodes_text
                .parse::<u64>()
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
                .map_err(|_| bad_nodes())?,
        ),
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
            let schedule_path = format!("{path}.schedule");
            if !(macros.contains(&text) || text.split_whitespace().count() == 5) {
                return Err(at.error(
                    s,
                    &schedule_path,
                    format!("invalid schedule {:?} (expected a 5-field cron expression or a macro like @daily)", s.value),
                ));
            }
            if let Err(e) = Schedule::parse(text) {
                return Err(at.error(
                    s,
                    &schedule_path,
                    format!(
                        "invalid schedule {:?}: {e} (Karpenter's budget check would fail and disrupt no node of this NodePool)",
                        s.value
                    ),
                ));
            }
            Some(text.to_string())
        }
        None => None,
    };
    let duration = match &raw.duration {
        Some(d) => {
            let bad = || {
                at.error(
                    d,
                    &format!("{path}.duration"),
                    format!("invalid duration {:?} (expected hours and minutes, like \"10m\", \"2h\" or \"1h30m\")", d.value),
                )
            };
            if !is_budget_duration(&d.value) {
                return Err(bad());
            }
            Some(parse_go_duration(&d.value).map_err(|_| bad())?)
        }
        None => None,
    };
    let mut reasons = Vec::new();
    for (i, r) in raw.reasons.iter().flat_map(|l| l.value.iter()).enumerate() {
        let reason_path = format!("{path}.reasons[{i}]");
        let reason = match r.value.as_str() {
            "Underutilized" => DisruptionReason::Underutilized,
            "Empty" => DisruptionReason::Empty,
            "Drifted" => DisruptionReason::Drifted,
            other => {
                return Err(at.error(
                    r,
                    &reason_path,
                    format!("unknown disruption reason {other:?} (expected Underutilized, Empty, Drifted)"),
                ));
            }
        };
        // The CRD makes reasons a set (x-kubernetes-list-type: set).
        if reasons.contains(&reason) {
            return Err(at.error(
                r,
                &reason_path,
                format!("duplicate disruption reason {:?}", r.value),
            ));
        }
        reasons.push(reason);
    }
    Ok(Budget {
        nodes,
        schedule,
        duration,
        reasons,
    })
}
