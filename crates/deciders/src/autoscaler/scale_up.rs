//! Scale-up: from unschedulable pods to "increase group X by N"
//! (`core/static_autoscaler.go` `RunOnce`, `core/podlistprocessor/*`,
//! `core/scaleup/orchestrator/orchestrator.go`,
//! `processors/nodegroupset/*`).
//!
//! 1. Unschedulable pods: pending, marked Unschedulable by kube-scheduler,
//!    not terminating, priority ≥ the expendable cutoff, older than
//!    `newPodScaleUpDelay`.
//! 2. Filter-out-schedulable: in priority order, each pod that passes the
//!    filters on an existing node or an upcoming node (a template copy per
//!    requested-but-unregistered node) is placed there (first fit) and
//!    dropped.
//! 3. If every remaining pod is younger than 2 s, no scale-up this loop
//!    (and scale-down is skipped too).
//! 4. Per group not backed off, below max size and with a template: the
//!    equivalence groups that fit an empty template node go to the
//!    binpacking estimator, limited by max-nodes-per-scale-up, the group's
//!    (and, when balancing, its similar groups') room, and max-nodes-total.
//! 5. The expander chain picks one option; with balancing the nodes are
//!    spread over similar groups, smallest first.

use std::collections::BTreeMap;

use super::config::ValidCaConfig;
use super::estimator::{estimate, order_decreasing};
use super::expander::{ScaleUpOption, choose};
use super::groups::{NodeGroupState, NodeTemplate};
use super::snapshot::Snapshot;
use super::state::CaState;
use crate::cluster::{Cluster, OwnerRef, PodId, PodPhase};
use crate::kube::labels::{LABEL_HOSTNAME, Labels};
use crate::kube::resources::{ResourceKind, Resources};
use crate::time::{SimDuration, SimTime};

/// Pods younger than this do not trigger a scale-up yet
/// (`unschedulablePodTimeBuffer`).
pub const UNSCHEDULABLE_POD_TIME_BUFFER: SimDuration = SimDuration::from_secs(2);
/// Pod equivalence groups per controller (`maxEquivalenceGroupsByController`).
pub const MAX_EQUIVALENCE_GROUPS_PER_CONTROLLER: usize = 10;

/// Why a group offered no option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupSkip {
    /// In backoff after a failed scale-up.
    BackedOff,
    /// Target size already at max size.
    MaxSizeReached,
    /// No template (first instance type unknown).
    NoTemplate,
    /// No pending pod fits an empty template node.
    NoPodFits,
    /// The limiter allowed no node (max-nodes-total).
    NoRoom,
    /// All or nothing: the group's option leaves pods out.
    NotAllPodsFit,
}

/// What the scale-up part of a loop decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScaleUpPlan {
    /// Increases per group (after balancing), in group order.
    pub increases: Vec<(String, u32)>,
    /// Every option the expander saw.
    pub options: Vec<ScaleUpOption>,
    /// The option it chose.
    pub chosen: Option<usize>,
    /// Groups without an option, with why.
    pub skipped: Vec<(String, GroupSkip)>,
    /// Pending pods that fit existing or upcoming nodes.
    pub fit_existing: Vec<PodId>,
    /// Pending pods left after filter-out-schedulable.
    pub remaining: Vec<PodId>,
    /// All remaining pods were too new: scale-down waits this loop too.
    pub all_pods_new: bool,
}

/// Pods CA would try to help, in CA's processing order (priority, then age).
pub fn unschedulable_pods(cluster: &Cluster, config: &ValidCaConfig, now: SimTime) -> Vec<PodId> {
    let c = config.config();
    let mut pods: Vec<_> = cluster
        .pods()
        .filter(|(_, p)| {
            p.node.is_none()
                && p.phase == PodPhase::Pending
                && p.unschedulable
                && p.lifecycle.deleting_since.is_none()
                && p.spec.priority >= c.expendable_pods_priority_cutoff
                && p.created_at + c.new_pod_scale_up_delay <= now
        })
        .map(|(id, p)| (std::cmp::Reverse(p.spec.priority), p.uid, id))
        .collect();
    pods.sort();
    pods.into_iter().map(|(_, _, id)| id).collect()
}

/// Adds one template copy per upcoming node of each group with an open
/// scale-up that is not backed off (clusterstate `GetUpcomingNodes`: other
/// upcoming nodes would make pods look schedulable forever).
pub fn inject_upcoming(
    snapshot: &mut Snapshot,
    cluster: &Cluster,
    config: &ValidCaConfig,
    groups: &[NodeGroupState],
    templates: &BTreeMap<String, NodeTemplate>,
    state: &CaState,
    now: SimTime,
) {
    let cfg = config.config();
    for group in groups {
        let Some(template) = templates.get(&group.name) else {
            continue;
        };
        if !state.scale_up_requests.contains_key(&group.name)
            || state.is_backed_off(&group.name, now)
        {
            continue;
        }
        let provision_time = cfg.options_for(&group.name).max_node_provision_time;
        for i in 0..group.upcoming(cluster, now, provision_time, &state.unregistered_since) {
            let mut node = template.node.clone();
            node.name = format!("upcoming-{}-{i}", group.name);
            node.labels.insert(LABEL_HOSTNAME, node.name.clone());
            snapshot.add_node(node, &template.daemon_pods);
        }
    }
}

/// Places what fits existing and upcoming nodes; returns (placed, left).
pub fn filter_out_schedulable(snapshot: &mut Snapshot, pods: &[PodId]) -> (Vec<PodId>, Vec<PodId>) {
    let nodes = snapshot.schedulable_nodes();
    let (mut placed, mut left) = (Vec::new(), Vec::new());
    for &pod in pods {
        match snapshot.place_first_fit(pod, nodes.iter().copied()) {
            Some(_) => placed.push(pod),
            None => left.push(pod),
        }
    }
    (placed, left)
}

/// Groups pods with the same controller and equal spec (at most ten groups
/// per controller; pods without a controller, DaemonSet pods and the
/// overflow are alone).
pub fn equivalence_groups(cluster: &Cluster, pods: &[PodId]) -> Vec<Vec<PodId>> {
    let mut groups: Vec<Vec<PodId>> = Vec::new();
    let mut by_owner: BTreeMap<(String, OwnerRef), Vec<usize>> = BTreeMap::new();
    for &id in pods {
        let Some(pod) = cluster.pod(id) else { continue };
        let Some(owner) = pod.owner.clone().filter(|_| !pod.is_daemonset()) else {
            groups.push(vec![id]);
            continue;
        };
        let known = by_owner
            .entry((pod.spec.namespace.clone(), owner))
            .or_default();
        let same = known.iter().copied().find(|&g| {
            cluster
                .pod(groups[g][0])
                .is_some_and(|e| e.spec == pod.spec)
        });
        match same {
            Some(g) => groups[g].push(id),
            None => {
                groups.push(vec![id]);
                if known.len() < MAX_EQUIVALENCE_GROUPS_PER_CONTROLLER {
                    known.push(groups.len() - 1);
                }
            }
        }
    }
    groups
}

/// Labels ignored when comparing groups (generic plus AWS,
/// `compare_nodegroups.go`, `aws_nodegroups.go`).
pub const BALANCING_IGNORED_LABELS: &[&str] = &[
    LABEL_HOSTNAME,
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/fluentd-ds-ready",
    "kops.k8s.io/instancegroup",
    "alpha.eksctl.io/instance-id",
    "alpha.eksctl.io/nodegroup-name",
    "eks.amazonaws.com/nodegroup",
    "k8s.amazonaws.com/eniConfig",
    "lifecycle",
    "topology.ebs.csi.aws.com/zone",
    "topology.k8s.aws/zone-id",
];

fn within_ratio(a: i64, b: i64, ratio: f64) -> bool {
    let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
    hi == 0.0 || (hi - lo) / hi <= ratio
}

fn comparable_labels(labels: &Labels) -> Vec<(&str, &str)> {
    labels
        .iter()
        .filter(|(k, _)| !BALANCING_IGNORED_LABELS.contains(k))
        .collect()
}

/// `IsCloudProviderNodeInfoSimilar`: equal capacity except memory (≤ 1.5 %),
/// allocatable and free (allocatable − daemon pods) within 5 %, equal
/// labels except the ignored ones.
pub fn similar_templates(a: &NodeTemplate, b: &NodeTemplate) -> bool {
    let (na, nb) = (&a.node, &b.node);
    let kinds: Vec<ResourceKind> = na
        .capacity
        .iter()
        .chain(nb.capacity.iter())
        .map(|(k, _)| k)
        .collect();
    for kind in kinds {
        let (x, y) = (na.capacity.get(kind), nb.capacity.get(kind));
        let ok = if kind == ResourceKind::Memory {
            within_ratio(x, y, 0.015)
        } else {
            x == y
        };
        if !ok {
            return false;
        }
    }
    let free = |t: &NodeTemplate| t.node.allocatable.saturating_sub(&t.daemon_requests());
    for kind in [ResourceKind::Cpu, ResourceKind::Memory] {
        if !within_ratio(na.allocatable.get(kind), nb.allocatable.get(kind), 0.05)
            || !within_ratio(free(a).get(kind), free(b).get(kind), 0.05)
        {
            return false;
        }
    }
    comparable_labels(&na.labels) == comparable_labels(&nb.labels)
}

/// Everything a scale-up decision reads.
pub struct ScaleUpInput<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// Configuration.
    pub config: &'a ValidCaConfig,
    /// Group states by name.
    pub groups: &'a BTreeMap<String, &'a NodeGroupState>,
    /// Templates by group name.
    pub templates: &'a BTreeMap<String, NodeTemplate>,
    /// CA's memory.
    pub state: &'a CaState,
    /// Now.
    pub now: SimTime,
    /// The random expander's pick.
    pub random_choice: u64,
}

fn target(input: &ScaleUpInput<'_>, group: &str) -> u32 {
    input.groups.get(group).map_or(0, |s| s.target_size)
}

/// Runs the scale-up part of a loop on `snapshot` (which keeps the pods
/// placed by filter-out-schedulable).
pub fn plan_scale_up(snapshot: &mut Snapshot, input: &ScaleUpInput<'_>) -> ScaleUpPlan {
    let pending = unschedulable_pods(input.cluster, input.config, input.now);
    let (placed, left) = filter_out_schedulable(snapshot, &pending);
    let mut plan = plan_scale_up_for(snapshot, input, &left, ScaleUpMode::default());
    plan.fit_existing = placed;
    plan
}

/// How a scale-up treats its pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScaleUpMode {
    /// Either every pod gets capacity or no node is asked for
    /// (`allOrNothing`, a best-effort atomic ProvisioningRequest).
    pub all_or_nothing: bool,
    /// Scale up even when every pod is new or `maxNodesTotal` is reached
    /// (`ProvisioningRequestScaleUpEnforcer`, for a request's pods).
    pub forced: bool,
}

/// The scale-up part of a loop for `left`, the pods filter-out-schedulable
/// left (they may be pods that exist only in `snapshot`).
pub fn plan_scale_up_for(
    snapshot: &mut Snapshot,
    input: &ScaleUpInput<'_>,
    left: &[PodId],
    mode: ScaleUpMode,
) -> ScaleUpPlan {
    let cfg = input.config.config();
    let mut plan = ScaleUpPlan {
        remaining: left.to_vec(),
        ..ScaleUpPlan::default()
    };
    if left.is_empty() {
        return plan;
    }
    let registered = input.cluster.nodes().filter(|(_, n)| n.registered).count() as u32;
    if cfg.max_nodes_total > 0 && registered >= cfg.max_nodes_total && !mode.forced {
        return plan;
    }
    let buffer = UNSCHEDULABLE_POD_TIME_BUFFER;
    if left.iter().all(|&id| {
        snapshot
            .cluster()
            .pod(id)
            .is_some_and(|p| p.created_at + buffer > input.now)
    }) {
        plan.all_pods_new = true;
        if !mode.forced {
            return plan;
        }
    }
    let all_nodes: u32 = input.cluster.node_count() as u32
        + input
            .groups
            .values()
            .map(|s| {
                let provision_time = cfg.options_for(&s.name).max_node_provision_time;
                s.upcoming(
                    input.cluster,
                    input.now,
                    provision_time,
                    &input.state.unregistered_since,
                )
            })
            .sum::<u32>();
    let cluster_room = if cfg.max_nodes_total > 0 {
        cfg.max_nodes_total.saturating_sub(all_nodes)
    } else {
        u32::MAX
    };
    let eq_groups = equivalence_groups(snapshot.cluster(), left);
    // Per valid group: which equivalence groups fit an empty template node.
    let mut valid: Vec<(&str, Vec<usize>)> = Vec::new();
    for spec in &cfg.node_groups {
        let name = spec.name.as_str();
        let skip = if input.state.is_backed_off(name, input.now) {
            Some(GroupSkip::BackedOff)
        } else if target(input, name) >= spec.max_size {
            Some(GroupSkip::MaxSizeReached)
        } else {
            None
        };
        if let Some(skip) = skip {
            plan.skipped.push((name.to_string(), skip));
            continue;
        }
        let Some(template) = input.templates.get(name) else {
            plan.skipped.push((name.to_string(), GroupSkip::NoTemplate));
            continue;
        };
        let mark = snapshot.fork();
        let probe = snapshot.add_node(template.node.clone(), &template.daemon_pods);
        let fitting: Vec<usize> = (0..eq_groups.len())
            .filter(|&g| snapshot.fits(eq_groups[g][0], probe))
            .collect();
        snapshot.revert(mark);
        if fitting.is_empty() {
            plan.skipped.push((name.to_string(), GroupSkip::NoPodFits));
            continue;
        }
        valid.push((name, fitting));
    }
    let similar_of = |name: &str, fitting: &Vec<usize>| -> Vec<&str> {
        if !cfg.balance_similar_node_groups {
            return Vec::new();
        }
        let Some(t) = input.templates.get(name) else {
            return Vec::new();
        };
        valid
            .iter()
            .filter(|(other, f)| {
                *other != name
                    && f == fitting
                    && input
                        .templates
                        .get(*other)
                        .is_some_and(|o| similar_templates(t, o))
            })
            .map(|(other, _)| *other)
            .collect()
    };
    let room = |name: &str| {
        cfg.node_groups
            .iter()
            .find(|g| g.name == name)
            .map_or(0, |g| g.max_size.saturating_sub(target(input, name)))
    };
    for (name, fitting) in &valid {
        let Some(template) = input.templates.get(*name) else {
            continue;
        };
        let sng_room: u32 = room(name)
            + similar_of(name, fitting)
                .iter()
                .map(|s| room(s))
                .sum::<u32>();
        let limit = cfg.max_nodes_per_scale_up.min(sng_room).min(cluster_room);
        if limit == 0 {
            plan.skipped.push((name.to_string(), GroupSkip::NoRoom));
            continue;
        }
        let mut groups: Vec<Vec<PodId>> = fitting.iter().map(|&g| eq_groups[g].clone()).collect();
        order_decreasing(snapshot, template, &mut groups);
        let est = estimate(snapshot, template, &groups, limit);
        if est.node_count == 0 || est.pods.is_empty() {
            plan.skipped.push((name.to_string(), GroupSkip::NoPodFits));
            continue;
        }
        if mode.all_or_nothing && est.pods.len() < left.len() {
            plan.skipped
                .push((name.to_string(), GroupSkip::NotAllPodsFit));
            continue;
        }
        let pod_requests: Resources = est
            .pods
            .iter()
            .filter_map(|&id| snapshot.cluster().pod(id))
            .map(|p| p.spec.requests)
            .sum();
        plan.options.push(ScaleUpOption {
            group: name.to_string(),
            node_count: est.node_count,
            pods: est.pods,
            pod_requests,
            template_capacity: template.node.capacity,
        });
    }
    let Some(best) = choose(
        &cfg.expander,
        input.config.tiers(),
        &plan.options,
        input.random_choice,
    ) else {
        return plan;
    };
    plan.chosen = Some(best);
    let option = &plan.options[best];
    let new_nodes = option.node_count.min(cluster_room);
    if mode.all_or_nothing && new_nodes < option.node_count {
        return plan;
    }
    let fitting = valid
        .iter()
        .find(|(n, _)| *n == option.group)
        .map(|(_, f)| f.clone())
        .unwrap_or_default();
    let mut targets: Vec<(String, u32, u32)> = std::iter::once(option.group.as_str())
        .chain(similar_of(&option.group, &fitting))
        .map(|g| (g.to_string(), target(input, g), room(g)))
        .collect();
    let increases = balance(&mut targets, new_nodes);
    let total: u32 = increases.iter().map(|(_, n)| n).sum();
    // `abortAllOrNothing`: the groups' limits cannot take every node.
    if mode.all_or_nothing && total < new_nodes {
        return plan;
    }
    plan.increases = increases;
    plan
}

/// `BalanceScaleUpBetweenGroups`: gives nodes one at a time to the group
/// with the smallest size (current + given) that has room; ties go to the
/// earlier group. Input rows are (group, current size, room).
pub fn balance(groups: &mut [(String, u32, u32)], new_nodes: u32) -> Vec<(String, u32)> {
    let mut given = vec![0u32; groups.len()];
    for _ in 0..new_nodes {
        let pick = (0..groups.len())
            .filter(|&i| given[i] < groups[i].2)
            .min_by_key(|&i| (groups[i].1 + given[i], i));
        let Some(i) = pick else { break };
        given[i] += 1;
    }
    groups
        .iter()
        .zip(given)
        .filter(|(_, n)| *n > 0)
        .map(|((g, _, _), n)| (g.clone(), n))
        .collect()
}
