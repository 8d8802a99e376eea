//! The combined manifest loader: core Kubernetes objects (through
//! [`crate::kube::manifest`]) plus Karpenter's NodePools and EC2NodeClasses,
//! from one or more multi-document YAML texts.

use super::ec2nodeclass::{Ec2NodeClass, read_ec2nodeclass};
use super::nodepool::{NodePool, NodePoolSource, read_nodepool};
use crate::kube::manifest::{
    CoreManifests, CoreReader, ManifestError, ManifestWarning, Position, Warnings, is_core_kind,
    split_documents,
};
use crate::kube::resources::ResourceNames;

/// Everything read from a set of manifests.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    /// NodePools in document order.
    pub nodepools: Vec<NodePool>,
    /// Where each NodePool is written (same order as `nodepools`).
    pub nodepool_sources: Vec<NodePoolSource>,
    /// EC2NodeClasses in document order.
    pub nodeclasses: Vec<Ec2NodeClass>,
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
    let mut out = Manifests::default();
    let mut warnings = Warnings::default();
    let mut core = CoreReader::new();
    for (file, text) in sources {
        for doc in split_documents(file, text)? {
            match (doc.api_version.as_str(), doc.kind.as_str()) {
                ("karpenter.sh/v1", "NodePool") => {
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
                (api, kind) if is_core_kind(api, kind) => {
                    core.add(doc, &mut out.resource_names, &mut warnings)?
                }
                (api, kind) => {
                    let subject = format!("kind/{api}/{kind}");
                    let warning = ManifestWarning {
                        at: doc.position(),
                        path: doc.path("kind"),
                        message: format!("{api} {kind} is not read by karpsim; skipped"),
                    };
                    warnings.once(&subject, warning);
                }
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
