//! `v1 PodTemplate` and `autoscaling.x-k8s.io/v1 ProvisioningRequest`
//! (kubernetes/autoscaler
//! `cluster-autoscaler/apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go`
//! and its CRD): read strictly, every pod set's `podTemplateRef` resolved
//! against the PodTemplates of the same manifests (the request and its
//! templates are applied together), each PodTemplate's pod template
//! converted like any controller's.
//!
//! Checked as the CRD checks them: 1 to 32 pod sets, `count` ≥ 1, a class
//! name; of the classes only the two Cluster Autoscaler implements are
//! accepted (`check-capacity.autoscaling.x-k8s.io`,
//! `best-effort-atomic-scale-up.autoscaling.x-k8s.io`), and of the
//! parameters only `noRetry` ("true" or "false"), since the others
//! (`partialCapacityCheck`, `processorInstance`, `ValidUntilSeconds`)
//! change what CA does in ways karpsim does not model.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodTemplate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::super::Document;
use super::super::convert::{self, Ctx};
use super::super::error::ManifestError;
use super::{Identities, identity};
use crate::kube::pod::PodSpec;
use crate::kube::provisioning_request::{PodSet, ProvisioningClass, ProvisioningRequest};

/// The kinds this module reads, with their apiVersion.
pub const PROVISIONING_KINDS: [(&str, &str); 2] = [
    ("v1", "PodTemplate"),
    ("autoscaling.x-k8s.io/v1", "ProvisioningRequest"),
];

/// Most pod sets a request may list (CRD `maxItems`).
const MAX_POD_SETS: usize = 32;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRequest {
    #[allow(dead_code)]
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    metadata: ObjectMeta,
    spec: RawSpec,
    #[allow(dead_code)]
    status: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSpec {
    pod_sets: Vec<RawPodSet>,
    provisioning_class_name: String,
    #[serde(default)]
    parameters: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPodSet {
    pod_template_ref: RawReference,
    count: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    name: Option<String>,
}

/// PodTemplates by (namespace, name).
pub(super) type Templates = BTreeMap<(String, String), Arc<PodSpec>>;

/// Reads a PodTemplate into `templates`.
pub(super) fn read_template(
    ctx: &mut Ctx<'_>,
    doc: &Document,
    identities: &mut Identities,
    templates: &mut Templates,
) -> Result<(), ManifestError> {
    let t: PodTemplate = doc.deserialize_strict()?;
    let (namespace, name) = identity(ctx, doc, &t.metadata, identities)?;
    let Some(template) = &t.template else {
        return Err(ctx.error("", None, "missing template"));
    };
    let Some(spec) = &template.spec else {
        return Err(ctx.error("template", None, "missing template.spec"));
    };
    let spec = convert::pod_spec(
        ctx,
        template.metadata.as_ref(),
        spec,
        &namespace,
        "template.metadata",
        "template.spec",
    )?;
    templates.insert((namespace, name), Arc::new(spec));
    Ok(())
}

/// Reads a ProvisioningRequest, resolving its pod sets in `templates`.
pub(super) fn read_request(
    ctx: &mut Ctx<'_>,
    doc: &Document,
    identities: &mut Identities,
    templates: &Templates,
) -> Result<ProvisioningRequest, ManifestError> {
    let raw: RawRequest = doc.deserialize_strict()?;
    let (namespace, name) = identity(ctx, doc, &raw.metadata, identities)?;
    let spec = raw.spec;
    let class = ProvisioningClass::parse(&spec.provisioning_class_name).ok_or_else(|| {
        ctx.error(
            "spec.provisioningClassName",
            None,
            format!(
                "provisioning class {:?} is not one Cluster Autoscaler implements (expected {} or {})",
                spec.provisioning_class_name,
                ProvisioningClass::CheckCapacity.name(),
                ProvisioningClass::BestEffortAtomicScaleUp.name()
            ),
        )
    })?;
    let mut no_retry = false;
    for (key, value) in &spec.parameters {
        match (key.as_str(), value.as_str()) {
            ("noRetry", "true") => no_retry = true,
            ("noRetry", "false") => {}
            ("noRetry", other) => {
                return Err(ctx.error(
                    "spec.parameters",
                    Some(key),
                    format!("noRetry must be \"true\" or \"false\", found {other:?}"),
                ));
            }
            _ => {
                return Err(ctx.error(
                    "spec.parameters",
                    Some(key),
                    format!("parameter {key:?} is not modelled (karpsim reads noRetry only)"),
                ));
            }
        }
    }
    if no_retry && class != ProvisioningClass::CheckCapacity {
        return Err(ctx.error(
            "spec.parameters",
            Some("noRetry"),
            format!(
                "noRetry is read by the {} class only",
                ProvisioningClass::CheckCapacity.name()
            ),
        ));
    }
    if spec.pod_sets.is_empty() || spec.pod_sets.len() > MAX_POD_SETS {
        return Err(ctx.error(
            "spec.podSets",
            None,
            format!(
                "a ProvisioningRequest lists 1 to {MAX_POD_SETS} pod sets, found {}",
                spec.pod_sets.len()
            ),
        ));
    }
    let mut pod_sets = Vec::new();
    for (i, set) in spec.pod_sets.iter().enumerate() {
        let path = format!("spec.podSets[{i}]");
        let max = crate::scenario::limits::MAX_REPLICAS;
        let count = u64::try_from(set.count)
            .ok()
            .filter(|&c| (1..=max).contains(&c))
            .and_then(|c| u32::try_from(c).ok())
            .ok_or_else(|| {
                ctx.error(
                    &path,
                    Some("count"),
                    format!("count must be from 1 to {max}, found {}", set.count),
                )
            })?;
        let ref_path = format!("{path}.podTemplateRef");
        let Some(template_name) = set.pod_template_ref.name.clone().filter(|n| !n.is_empty())
        else {
            return Err(ctx.error(&ref_path, None, "missing podTemplateRef.name"));
        };
        let Some(template) = templates.get(&(namespace.clone(), template_name.clone())) else {
            return Err(ctx.error(
                &ref_path,
                Some("name"),
                format!(
                    "no PodTemplate {template_name:?} in namespace {namespace:?} among these manifests (a ProvisioningRequest's PodTemplates are applied with it)"
                ),
            ));
        };
        pod_sets.push(PodSet {
            template_name,
            template: template.clone(),
            count,
        });
    }
    Ok(ProvisioningRequest {
        name,
        namespace,
        class,
        pod_sets,
        no_retry,
    })
}
