//! One pod's view of the topology while it is tried on every node: the
//! groups that constrain it with its allowed domains, and cheap certain
//! rejections (hostname counts on NodeClaims of this solve, affinity
//! domains) that skip the full domain computation.

use std::borrow::Cow;
use std::cell::Cell;

use super::{Group, Topology, TopologyError, TopologyKind};
use crate::karpenter::provisioning::pod::PodWork;
use crate::kube::labels::{LABEL_HOSTNAME, normalize_label_key};
use crate::kube::pod::PodSpec;
use crate::kube::requirements::{Requirement, Requirements};

impl Topology<'_> {
    /// The groups that constrain `pod`, looked up once for all the nodes
    /// it is tried on.
    pub fn for_pod(&self, pod: &PodWork<'_>) -> PodTopology<'_> {
        if self.owned.is_empty() && self.inverse.is_empty() {
            // No pod of this solve owns a group, and no anti-affinity group
            // exists to select it.
            return PodTopology::unconstrained();
        }
        let owned = self.owned.get(&pod.id).map(Vec::as_slice).unwrap_or(&[]);
        // Inverse groups are anti-affinity groups, whose node filter admits
        // every node: selecting the pod is enough.
        let inverse = self.inverse.iter().filter(|g| g.selects(&pod.spec));
        let mut groups = Vec::new();
        let mut claim_limits = Vec::new();
        let mut affinity_domains = Vec::new();
        for group in owned.iter().map(|&i| &self.groups[i]).chain(inverse) {
            let key = group.spec.key.as_str();
            let pod_domains = pod
                .strict
                .get(key)
                .cloned()
                .unwrap_or_else(|| Requirement::exists(key));
            if key == LABEL_HOSTNAME {
                // On a node limited to its own hostname, anti-affinity
                // admits nothing once the host counts a pod, and spread
                // nothing once count + own exceeds maxSkew.
                match group.spec.kind {
                    TopologyKind::AntiAffinity => claim_limits.push((group, 0)),
                    TopologyKind::Spread => claim_limits.push((
                        group,
                        group
                            .spec
                            .max_skew
                            .saturating_sub(i32::from(group.selects(&pod.spec))),
                    )),
                    TopologyKind::Affinity => {}
                }
            } else if group.spec.kind == TopologyKind::Affinity
                && !group.may_bootstrap(&pod.spec, &pod_domains)
            {
                // Without bootstrapping, affinity admits exactly the node's
                // listed domains that hold a selected pod and that the pod
                // allows.
                let occupied = group
                    .domains
                    .iter()
                    .filter(|&(d, &c)| c > 0 && pod_domains.has(d))
                    .map(|(d, _)| d.as_str())
                    .collect();
                affinity_domains.push(AffinityDomains {
                    key: normalize_label_key(key),
                    occupied,
                    pod_requires: pod.requirements.get(key).cloned(),
                    found_at: Cell::new(0),
                });
            }
            groups.push((group, pod_domains));
        }
        PodTopology {
            groups,
            claim_limits,
            affinity_domains,
        }
    }
}

/// The topology groups constraining one pod, with its allowed domains per
/// group, fixed while the pod is tried on every node.
pub(in crate::karpenter::provisioning) struct PodTopology<'t> {
    groups: Vec<(&'t Group, Requirement)>,
    /// Hostname groups with the most pods a NodeClaim of this solve may
    /// already count in them for the pod to join it.
    claim_limits: Vec<(&'t Group, i32)>,
    /// Affinity groups on other keys that cannot bootstrap.
    affinity_domains: Vec<AffinityDomains<'t>>,
}

/// An affinity group on a key other than the hostname that cannot
/// bootstrap: a node must list one of the domains that hold a pod it
/// selects.
struct AffinityDomains<'t> {
    key: &'t str,
    occupied: Vec<&'t str>,
    /// The pod's own requirement on the key, merged with the node's.
    pod_requires: Option<Requirement>,
    /// Where the last node's requirements asked held the key.
    found_at: Cell<usize>,
}

impl PodTopology<'_> {
    /// The view of a pod no group constrains.
    pub fn unconstrained() -> PodTopology<'static> {
        PodTopology {
            groups: Vec::new(),
            claim_limits: Vec::new(),
            affinity_domains: Vec::new(),
        }
    }

    /// Whether any rule could narrow this pod's domains.
    pub fn constrains(&self) -> bool {
        !self.groups.is_empty()
    }

    /// A cheap certain rejection: the NodeClaim (index `claim`, whose
    /// hostname requirement admits only its own hostname) already counts
    /// too many pods of a hostname anti-affinity or spread group.
    pub fn rejects_claim(&self, claim: usize) -> bool {
        self.claim_limits
            .iter()
            .any(|&(group, most)| group.claim_count(claim) > most)
    }

    /// [`PodTopology::rejects_claim`] for every one of the solve's first
    /// `claims` NodeClaims, known without asking each: a group admits no
    /// pod on a claim that counts one, and counts one on all of them.
    pub fn rejects_all_claims(&self, claims: usize) -> bool {
        claims > 0
            && self
                .claim_limits
                .iter()
                .any(|&(group, most)| most <= 0 && group.claims_counted >= claims)
    }

    /// A cheap certain rejection: the node lists domains for an affinity
    /// key (the merge of `node`'s requirement and the pod's) and none of
    /// them holds a pod the affinity needs.
    #[inline]
    pub fn rejects_node(&self, node: &Requirements) -> bool {
        // Most pods have no such group: no call then.
        !self.affinity_domains.is_empty() && self.rejects_node_by_affinity(node)
    }

    fn rejects_node_by_affinity(&self, node: &Requirements) -> bool {
        self.affinity_domains.iter().any(|affinity| {
            let occupied = |domain: &str| affinity.occupied.contains(&domain);
            let lists_no_occupied = |domains: &Requirement| {
                !domains.is_complement() && !domains.values().iter().any(|d| occupied(d))
            };
            match (
                node.get_hinted(affinity.key, &affinity.found_at),
                &affinity.pod_requires,
            ) {
                (Some(node), Some(pod)) => node.intersection_lists_none(pod, occupied),
                (Some(domains), None) | (None, Some(domains)) => lists_no_occupied(domains),
                (None, None) => false,
            }
        })
    }

    /// The narrowed domains the pod needs on a node whose requirements are
    /// read through `node_domain` (upstream `AddRequirements`); the error
    /// text is only written when `explain` is set.
    pub fn add_requirements<'n>(
        &self,
        node_domain: &dyn Fn(&str) -> Option<Cow<'n, Requirement>>,
        pod: &PodSpec,
        explain: bool,
    ) -> Result<Requirements, TopologyError> {
        let mut narrowed = Requirements::new();
        for (group, pod_domains) in &self.groups {
            let key = group.spec.key.as_str();
            let node_domains =
                node_domain(key).unwrap_or_else(|| Cow::Owned(Requirement::exists(key)));
            let domains = group.next(pod, pod_domains, &node_domains);
            if domains.is_empty() {
                if !explain {
                    return Err(TopologyError(String::new()));
                }
                return Err(TopologyError(format!(
                    "unsatisfiable {} on {key}: no allowed domain (pod allows {pod_domains}, node offers {node_domains})",
                    group.spec.kind.describe(),
                )));
            }
            narrowed.add(domains);
        }
        Ok(narrowed)
    }
}
