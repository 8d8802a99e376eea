//! The combined manifest loader: core Kubernetes objects (through
//! [`crate::manifest`]) plus Karpenter's NodePools and EC2NodeClasses,
//! from one or more multi-document YAML texts, read strictly and validated
//! as Karpenter's CRDs, CEL rules and runtime checks do.

pub mod ec2nodeclass;
pub mod edit;
pub mod nodeoverlay;
pub mod nodepool;

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod overlay_tests;
#[cfg(test)]
mod validation_tests;

use self::ec2nodeclass::{Ec2NodeClass, read_ec2nodeclass};
use self::edit::NodePoolEdit;
use self::nodeoverlay::{ReadOverlay, read_nodeoverlay};
use self::nodepool::{NodePoolSource, read_nodepool};
use crate::kube::resources::ResourceNames;
use crate::manifest::{
    CORE_KINDS, CoreManifests, CoreReader, Document, ManifestError, ManifestWarning,
    PROVISIONING_KINDS, Position, Warnings, is_core_kind, split_documents,
};
use crate::nodepool::NodePool;

/// Everything read from a set of manifests.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    /// NodePools in document order.
    pub nodepools: Vec<NodePool>,
    /// Where each NodePool is written (same order as `nodepools`).
    pub nodepool_sources: Vec<NodePoolSource>,
    /// EC2NodeClasses in document order.
    pub nodeclasses: Vec<Ec2NodeClass>,
    /// `karpenter.sh/v1alpha1` NodeOverlays in document order.
    pub nodeoverlays: Vec<ReadOverlay>,
    /// Workloads and PDBs.
    pub core: CoreManifests,
    /// The names of extended resources seen, shared by every resource vector.
    pub resource_names: ResourceNames,
    /// Warnings, at most one per distinct subject.
    pub warnings: Vec<ManifestWarning>,
}

/// Reads one YAML text; `file` names it in messages.
pub fn load_str(file: &str, text: &str) -> Result<Manifests, ManifestError> {
    load(&[(file, text)])
}

/// Reads several `(file name, YAML text)` sources as one set, so that a pod
/// may use a RuntimeClass or PriorityClass defined in another file.
pub fn load(sources: &[(&str, &str)]) -> Result<Manifests, ManifestError> {
    load_with_edits(sources, &[])
}

/// [`load`] with `edits` applied, in order, to every NodePool document
/// before it is read (see [`edit`]).
pub fn load_with_edits(
    sources: &[(&str, &str)],
    edits: &[NodePoolEdit],
) -> Result<Manifests, ManifestError> {
    let mut out = Manifests::default();
    let mut warnings = Warnings::default();
    let mut core = CoreReader::new();
    for (file, text) in sources {
        for mut doc in split_documents(file, text)? {
            match (doc.api_version.as_str(), doc.kind.as_str()) {
                ("karpenter.sh/v1", "NodePool") => {
                    for edit in edits {
                        edit.apply(&mut doc.node, &doc.file, &doc.base_path)?;
                    }
                    let (pool, source) =
                        read_nodepool(&doc, &mut out.resource_names, &mut warnings)?;
                    let first = out.nodepools.iter().position(|p| p.name == pool.name);
                    if let Some(first) = first {
                        return Err(duplicate(
                            "NodePool",
                            &pool.name,
                            &source.at,
                            &out.nodepool_sources[first].at,
                        ));
                    }
                    out.nodepools.push(pool);
                    out.nodepool_sources.push(source);
                }
                ("karpenter.k8s.aws/v1", "EC2NodeClass") => {
                    let class = read_ec2nodeclass(&doc, &mut warnings)?;
                    if let Some(first) = out.nodeclasses.iter().find(|c| c.name == class.name) {
                        return Err(duplicate(
                            "EC2NodeClass",
                            &class.name,
                            &class.position,
                            &first.position,
                        ));
                    }
                    out.nodeclasses.push(class);
                }
                ("karpenter.sh/v1alpha1", "NodeOverlay") => {
                    let read = read_nodeoverlay(&doc)?;
                    let first = out
                        .nodeoverlays
                        .iter()
                        .find(|o| o.overlay.name == read.overlay.name);
                    if let Some(first) = first {
                        return Err(duplicate(
                            "NodeOverlay",
                            &read.overlay.name,
                            &read.at,
                            &first.at,
                        ));
                    }
                    out.nodeoverlays.push(read);
                }
                (_, "NodePool" | "EC2NodeClass") => {
                    let node = doc.node.get("apiVersion").unwrap_or(&doc.node);
                    return Err(ManifestError::field(
                        &doc.file,
                        node,
                        doc.path("apiVersion"),
                        format!(
                            "unsupported apiVersion {:?} for {} (karpsim reads karpenter.sh/v1 NodePool and karpenter.k8s.aws/v1 EC2NodeClass)",
                            doc.api_version, doc.kind
                        ),
                    ));
                }
                (api, kind)
                    if is_core_kind(api, kind) || PROVISIONING_KINDS.contains(&(api, kind)) =>
                {
                    core.add(doc, &mut out.resource_names, &mut warnings)?
                }
                _ => skip_unread_kind(&doc, &mut warnings)?,
            }
        }
    }
    out.core = core.finish(&mut out.resource_names, &mut warnings)?;
    out.warnings = warnings.into_vec();
    Ok(out)
}

/// Two objects of one kind with one name in one set of files: the API
/// server would refuse the second (`AlreadyExists`), or `kubectl apply`
/// would make it replace the first; either way one of them is not what runs.
fn duplicate(kind: &str, name: &str, at: &Position, first: &Position) -> ManifestError {
    ManifestError::Field {
        at: at.clone(),
        path: "metadata.name".to_string(),
        message: format!(
            "{kind} {name:?} is defined twice (first at {}:{})",
            first.file, first.place.line
        ),
    }
}

/// Kinds of Kubernetes and common add-ons that karpsim does not model;
/// their objects are skipped with one warning per kind.
const UNMODELLED_KINDS: [&str; 32] = [
    "APIService",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "ControllerRevision",
    "CustomResourceDefinition",
    "Endpoints",
    "EndpointSlice",
    "Event",
    "HorizontalPodAutoscaler",
    "Ingress",
    "IngressClass",
    "Lease",
    "LimitRange",
    "MutatingWebhookConfiguration",
    "Namespace",
    "NetworkPolicy",
    "Node",
    "NodeClaim",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "ReplicationController",
    "ResourceQuota",
    "Role",
    "RoleBinding",
    "Secret",
    "Service",
    "ServiceAccount",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingWebhookConfiguration",
    "VerticalPodAutoscaler",
];

/// A document karpsim does not read: a kind it reads under another
/// apiVersion and a near misspelling of a known kind (in a Kubernetes or
/// Karpenter API group) are errors, as `kubectl apply` refuses them; other
/// kinds are skipped with one warning per kind.
fn skip_unread_kind(doc: &Document, warnings: &mut Warnings) -> Result<(), ManifestError> {
    let (api, kind) = (doc.api_version.as_str(), doc.kind.as_str());
    let read_kinds = CORE_KINDS.iter().copied().chain(PROVISIONING_KINDS).chain([
        ("karpenter.sh/v1", "NodePool"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        ("karpenter.sh/v1alpha1", "NodeOverlay"),
    ]);
    let read_as: Vec<&str> = read_kinds
        .clone()
        .filter(|&(_, known)| known == kind)
        .map(|(version, _)| version)
        .collect();
    if !read_as.is_empty() {
        let node = doc.node.get("apiVersion").unwrap_or(&doc.node);
        return Err(ManifestError::field(
            &doc.file,
            node,
            doc.path("apiVersion"),
            format!(
                "unsupported apiVersion {api:?} for {kind} (karpsim reads {kind} as {})",
                read_as.join(", ")
            ),
        ));
    }
    if !UNMODELLED_KINDS.contains(&kind) && is_kubernetes_api(api) {
        let known = read_kinds.map(|(_, known)| known).chain(UNMODELLED_KINDS);
        if let Some(near) = crate::suggest::closest(kind, known) {
            let node = doc.node.get("kind").unwrap_or(&doc.node);
            return Err(ManifestError::field(
                &doc.file,
                node,
                doc.path("kind"),
                format!("unknown kind {kind:?} in {api} (did you mean {near:?}?)"),
            ));
        }
    }
    let warning = ManifestWarning {
        at: doc.position(),
        path: doc.path("kind"),
        message: format!("{api} {kind} is not read by karpsim; skipped"),
    };
    warnings.once(&format!("kind/{kind}"), warning);
    Ok(())
}

/// Whether `api_version` is in a Kubernetes or Karpenter API group (where a
/// kind near a known one is a typo, not a custom resource).
fn is_kubernetes_api(api_version: &str) -> bool {
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    !group.contains('.')
        || group.ends_with(".k8s.io")
        || group == "karpenter.sh"
        || group == "karpenter.k8s.aws"
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPLOYMENT_BODY: &str = "metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c}]}
";

    /// `kubectl apply` refuses a kind its API group does not serve ("no
    /// matches for kind"); a near miss of a known kind names it.
    #[test]
    fn a_misspelt_kind_is_an_error_with_a_suggestion() {
        let text = format!("apiVersion: apps/v1\nkind: Deploymnet\n{DEPLOYMENT_BODY}");
        let err = load_str("m.yaml", &text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.yaml:2:7: kind: unknown kind \"Deploymnet\" in apps/v1 (did you mean \"Deployment\"?)"
        );
        let lower = format!("apiVersion: v1\nkind: pod\n{DEPLOYMENT_BODY}");
        assert!(
            load_str("m.yaml", &lower)
                .unwrap_err()
                .to_string()
                .contains("(did you mean \"Pod\"?)")
        );
    }

    /// A known kind under an apiVersion karpsim does not read is an error
    /// naming the version it reads.
    #[test]
    fn an_unknown_api_version_of_a_known_kind_is_an_error() {
        let text = format!("apiVersion: apps/v2\nkind: Deployment\n{DEPLOYMENT_BODY}");
        let err = load_str("m.yaml", &text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.yaml:1:13: apiVersion: unsupported apiVersion \"apps/v2\" for Deployment (karpsim reads Deployment as apps/v1)"
        );
        let beta = "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n";
        assert!(
            load_str("m.yaml", beta)
                .unwrap_err()
                .to_string()
                .contains("as policy/v1)")
        );
    }

    /// Kinds karpsim does not model are skipped with one warning per kind,
    /// as are custom resources of other API groups, even with near names.
    #[test]
    fn unmodelled_kinds_are_skipped_once_per_kind() {
        let service = |name: &str| {
            format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\n---\n")
        };
        let text = format!(
            "{}{}apiVersion: example.com/v1\nkind: Deploymnet\nmetadata: {{name: x}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n",
            service("a"),
            service("b")
        );
        let loaded = load_str("m.yaml", &text).expect("reads");
        let messages: Vec<&str> = loaded.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "v1 Service is not read by karpsim; skipped",
                "example.com/v1 Deploymnet is not read by karpsim; skipped",
                "v1 ConfigMap is not read by karpsim; skipped",
            ]
        );
    }

    /// Every bundled example manifest reads: they must stay valid inputs
    /// as validation grows stricter.
    #[test]
    fn bundled_manifests_read() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut files = Vec::new();
        let mut folders = vec![
            root.join("scenarios/workloads"),
            root.join("scenarios/nodepools"),
            root.join("tests/fixtures/manifests"),
            root.join("tests/fixtures/scenarios/workloads"),
            root.join("tests/fixtures/scenarios/nodepools"),
        ];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).expect("bundled folder") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml") {
                    files.push(path);
                }
            }
        }
        files.sort();
        assert!(files.len() > 10, "{files:?}");
        for path in files {
            let text = std::fs::read_to_string(&path).expect("readable");
            let name = path.display().to_string();
            load_str(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The fuzz class: truncations and one-character edits of a real
    /// manifest file (every kind karpsim reads) give a result or an error,
    /// never a panic.
    #[test]
    fn mutated_manifests_never_panic() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/manifests/workloads.yaml");
        let text = std::fs::read_to_string(path).expect("fixture");
        let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        for (n, &at) in cuts.iter().enumerate().step_by(29) {
            let _ = load_str("m.yaml", &text[..at]);
            let replacement = [":", " ", "x", "-", "\n", "[", "0"][n % 7];
            let next = cuts.get(n + 1).copied().unwrap_or(text.len());
            let edited = format!("{}{replacement}{}", &text[..at], &text[next..]);
            let _ = load_str("m.yaml", &edited);
        }
    }
}
