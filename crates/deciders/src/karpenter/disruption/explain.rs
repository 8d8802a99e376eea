//! The sentences a user reads for a disruption command, e.g.
//! `replace 3 × m5.2xlarge with 1 of [c6a.4xlarge, …]: underutilized,
//! saves up to $0.41/h`.

use super::types::Candidate;
use super::types::PassInput;
use crate::cloud::Price;
use crate::karpenter::provisioning::NewNodeClaim;
use crate::scheduler::Cluster;

/// Options named before the list is cut with `…`.
const OPTIONS_SHOWN: usize = 3;

/// The candidates' instance types, grouped in first-seen order:
/// `3 × m5.2xlarge`, `m5.large, c6a.xlarge`.
pub fn node_types(cluster: &Cluster, candidates: &[&Candidate]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for c in candidates {
        let name = cluster
            .node(c.node)
            .and_then(|n| n.claim.as_ref())
            .map_or_else(|| c.name().to_string(), |claim| claim.instance_type.clone());
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => groups.push((name, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(name, count)| {
            if count == 1 {
                name
            } else {
                format!("{count} × {name}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// `delete 2 empty nodes (m5.large, c6a.xlarge): saves $0.25/h`.
pub fn empty(cluster: &Cluster, candidates: &[&Candidate], savings: Price) -> String {
    format!(
        "delete {} ({}): saves {savings}/h",
        plural(candidates.len(), "empty node"),
        node_types(cluster, candidates)
    )
}

/// `delete 2 × m5.large: underutilized, saves $0.20/h` or
/// `replace 3 × m5.2xlarge with 1 of [c6a.4xlarge, …]: underutilized,
/// saves up to $0.41/h`.
pub(crate) fn consolidation(
    input: &PassInput<'_>,
    candidates: &[&Candidate],
    replacements: &[NewNodeClaim],
    savings: Price,
) -> String {
    let sources = node_types(input.cluster, candidates);
    let Some(claim) = replacements.first() else {
        return format!("delete {sources}: underutilized, saves {savings}/h");
    };
    let catalog = input.nodepools.get(claim.nodepool).map(|c| c.catalog);
    let mut names: Vec<&str> = claim
        .instance_types
        .iter()
        .take(OPTIONS_SHOWN)
        .filter_map(|&i| catalog?.instance_types().get(i).map(|it| it.name()))
        .collect();
    if claim.instance_types.len() > OPTIONS_SHOWN {
        names.push("…");
    }
    format!(
        "replace {sources} with 1 of [{}]: underutilized, saves up to {savings}/h",
        names.join(", ")
    )
}

/// `drifted (NodePoolDrifted): replace with 1 NodeClaim`, or `: delete`
/// when the pods fit elsewhere.
pub fn drift(reason: &str, replacements: usize) -> String {
    if replacements == 0 {
        format!("drifted ({reason}): delete")
    } else {
        format!(
            "drifted ({reason}): replace with {}",
            plural(replacements, "NodeClaim")
        )
    }
}
