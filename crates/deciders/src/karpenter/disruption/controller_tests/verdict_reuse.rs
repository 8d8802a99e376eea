//! Single-node consolidation's kept verdicts and multi-node
//! consolidation's kept no-op search change no decision: on random small
//! clusters changed between passes (pods bound, removed or pending,
//! pending pods bound, nodes added, some uninitialized, initialized,
//! tainted, untainted, relabelled, removed or marked for deletion with
//! their pods still on them, or time passing alone), the controller object
//! that keeps them finds the very command a pass that keeps nothing finds,
//! whether it also keeps whole passes or runs every one.

use proptest::prelude::*;

use super::*;
use crate::karpenter::provisioning::Provisioner;
use crate::kube::pod::DoNotDisrupt;
use crate::kube::taints::{Taint, TaintEffect};

/// A change between two passes.
#[derive(Debug, Clone)]
enum Change {
    Bind { node: usize, cpu: i64 },
    Remove { pod: usize },
    Pending { cpu: i64 },
    BindPending { node: usize },
    MarkDeleting { node: usize },
    AddNode { size: usize, initialized: bool },
    Initialize { node: usize },
    Taint { node: usize, on: bool },
    Label { node: usize },
    RemoveNode { node: usize },
    Wait,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => (0..8usize, 100..3000i64).prop_map(|(node, cpu)| Change::Bind { node, cpu }),
        2 => (0..64usize).prop_map(|pod| Change::Remove { pod }),
        2 => (100..3000i64).prop_map(|cpu| Change::Pending { cpu }),
        1 => (0..8usize).prop_map(|node| Change::BindPending { node }),
        1 => (0..8usize).prop_map(|node| Change::MarkDeleting { node }),
        1 => (0..4usize, any::<bool>()).prop_map(|(size, initialized)| Change::AddNode { size, initialized }),
        1 => (0..8usize).prop_map(|node| Change::RemoveNode { node }),
        1 => (0..8usize).prop_map(|node| Change::Initialize { node }),
        1 => (0..8usize, any::<bool>()).prop_map(|(node, on)| Change::Taint { node, on }),
        1 => (0..8usize).prop_map(|node| Change::Label { node }),
        2 => Just(Change::Wait),
    ]
}

const SIZES: [&str; 4] = ["fake-it-1", "fake-it-2", "fake-it-3", "fake-it-4"];

struct Run {
    env: Env,
    nodes: Vec<NodeId>,
    pods: Vec<PodId>,
    added: usize,
}

impl Run {
    fn add_node(&mut self, size: usize, initialized: bool) {
        let name = format!("n{:02}", self.added);
        self.added += 1;
        let id = self.env.node(&name, SIZES[size], CapacityType::OnDemand);
        if !initialized {
            let node = self.env.cluster.node_mut(id).unwrap();
            node.initialized = false;
            node.claim.as_mut().unwrap().lifecycle.initialized_at = None;
        }
        self.nodes.push(id);
    }

    fn apply(&mut self, change: &Change) {
        match *change {
            Change::Bind { node, cpu } if !self.nodes.is_empty() => {
                let node = self.nodes[node % self.nodes.len()];
                self.pods.push(self.env.pod(node, cpu));
            }
            Change::Remove { pod } if !self.pods.is_empty() => {
                let pod = self.pods.remove(pod % self.pods.len());
                self.env.pending.retain(|p| *p != pod);
                self.env.cluster.remove_pod(pod);
            }
            Change::Pending { cpu } if !self.nodes.is_empty() => {
                let node = self.nodes[0];
                let pod = self.env.pod(node, cpu);
                self.env.cluster.unbind(pod);
                self.env.pending.push(pod);
                self.pods.push(pod);
            }
            Change::BindPending { node }
                if !self.nodes.is_empty() && !self.env.pending.is_empty() =>
            {
                let node = self.nodes[node % self.nodes.len()];
                let pod = self.env.pending.remove(0);
                self.env.cluster.bind(pod, node);
            }
            Change::MarkDeleting { node } if !self.nodes.is_empty() => {
                // Its pods stay on it until drained: every simulation must
                // place them too.
                let node = self.nodes.remove(node % self.nodes.len());
                self.env.cluster.node_mut(node).unwrap().marked_for_deletion = true;
            }
            Change::AddNode { size, initialized } => self.add_node(size, initialized),
            Change::Initialize { node } if !self.nodes.is_empty() => {
                let at = self.env.now;
                let node = self
                    .env
                    .cluster
                    .node_mut(self.nodes[node % self.nodes.len()])
                    .unwrap();
                node.initialized = true;
                node.claim
                    .as_mut()
                    .unwrap()
                    .lifecycle
                    .initialized_at
                    .get_or_insert(at);
            }
            // A taint no pod tolerates, put on or taken off: the node's view
            // changes, not its place in the try order.
            Change::Taint { node, on } if !self.nodes.is_empty() => {
                let node = self
                    .env
                    .cluster
                    .node_mut(self.nodes[node % self.nodes.len()])
                    .unwrap();
                node.taints.retain(|t| t.key != "dedicated");
                if on {
                    node.taints.push(Taint {
                        key: "dedicated".to_string(),
                        value: "other".to_string(),
                        effect: TaintEffect::NoSchedule,
                    });
                }
            }
            // A label no pod selects on.
            Change::Label { node } if !self.nodes.is_empty() => {
                let node = self
                    .env
                    .cluster
                    .node_mut(self.nodes[node % self.nodes.len()])
                    .unwrap();
                let next = node.labels.get("team").map_or(0, |v| v.len()) + 1;
                node.labels.insert("team".to_string(), "x".repeat(next));
            }
            Change::RemoveNode { node } if !self.nodes.is_empty() => {
                let node = self.nodes.remove(node % self.nodes.len());
                let on_it = self.env.cluster.node(node).unwrap().pods.clone();
                for pod in on_it {
                    self.pods.retain(|p| *p != pod);
                    self.env.cluster.remove_pod(pod);
                }
                self.env.cluster.remove_node(node);
            }
            _ => {}
        }
        self.env.now += SimDuration::from_secs(10);
    }
}

impl Run {
    /// A run on the fake catalog's on-demand types, `budget` nodes
    /// disrupted at a time, with nodes of `initial` sizes and pod CPUs.
    fn new(initial: &[(usize, Vec<i64>)], budget: u32) -> Run {
        let mut run = Run {
            env: Env::fake(),
            nodes: Vec::new(),
            pods: Vec::new(),
            added: 0,
        };
        run.env.require_on_demand();
        run.env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(budget);
        for (size, pods) in initial {
            run.add_node(*size, true);
            let node = *run.nodes.last().unwrap();
            for &cpu in pods {
                run.pods.push(run.env.pod(node, cpu));
            }
        }
        run
    }

    /// Applies `changes` one by one, a pass before the first and after
    /// each: the controller that keeps verdicts and searches must find the
    /// command a pass that keeps nothing finds.
    fn passes_match(&mut self, changes: &[Change]) -> Result<(), TestCaseError> {
        let mut disruption = Disruption::new(self.env.options);
        let mut every_pass = Disruption::new(self.env.options).running_every_pass();
        let provisioner = Provisioner::new();
        for step in 0..=changes.len() {
            if step > 0 {
                self.apply(&changes[step - 1]);
            }
            let (kept, running, fresh) = self.env.with_disruption_input(|input| {
                (
                    disruption.next_command(input, &provisioner),
                    every_pass.next_command(input, &provisioner),
                    next_command(input),
                )
            });
            prop_assert_eq!(&kept.command, &fresh.command, "after {} changes", step);
            prop_assert_eq!(running.command, fresh.command, "after {} changes", step);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Kept verdicts give the decisions of full re-evaluation.
    #[test]
    fn verdict_reuse_decides_as_full_re_evaluation(
        initial in proptest::collection::vec((0..4usize, proptest::collection::vec(600..2000i64, 1..4)), 2..7),
        changes in proptest::collection::vec(change(), 1..16),
    ) {
        // One node at a time, so that single-node consolidation decides
        // most passes (multi-node needs two).
        Run::new(&initial, 1).passes_match(&changes)?;
    }

    /// So do they under a CPU limit that nodes coming and going bring
    /// near (where it may drop an option of the 40-vCPU-wide template)
    /// or leave far.
    #[test]
    fn verdict_reuse_under_limits_decides_as_full_re_evaluation(
        initial in proptest::collection::vec((0..4usize, proptest::collection::vec(600..2000i64, 1..4)), 2..7),
        changes in proptest::collection::vec(change(), 1..16),
        limit_vcpu in 4..400i64,
    ) {
        let mut run = Run::new(&initial, 1);
        run.env.pool_mut().limits.insert(ResourceKind::Cpu, limit_vcpu * 1000);
        run.passes_match(&changes)?;
    }

    /// The kept multi-node search gives the decisions of full
    /// re-evaluation, also while nodes leave their `consolidateAfter`
    /// window with nothing else changing.
    #[test]
    fn search_reuse_decides_as_full_re_evaluation(
        initial in proptest::collection::vec((0..4usize, proptest::collection::vec(300..2000i64, 1..4)), 3..8),
        changes in proptest::collection::vec(change(), 1..16),
        consolidate_after in 0..40u64,
    ) {
        let mut run = Run::new(&initial, 3);
        run.env.pool_mut().disruption.consolidate_after =
            Some(std::time::Duration::from_secs(consolidate_after));
        for &node in &run.nodes.clone() {
            run.env.claim_mut(node).lifecycle.last_pod_event_at =
                Some(run.env.now - SimDuration::from_secs(5 * u64::from(node.0)));
        }
        run.passes_match(&changes)?;
    }
}

/// A pass that would search what the last no-op multi-node search read
/// skips the search; one after a pod was bound, or after a node left its
/// `consolidateAfter` window, searches again.
#[test]
fn a_no_op_multi_node_search_is_skipped_until_its_inputs_change() {
    let mut env = Env::fake();
    env.require_on_demand();
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(3);
    env.pool_mut().disruption.consolidate_after = Some(std::time::Duration::from_secs(60));
    // Four full fake-it-1 nodes labelled for a team whose pods select it:
    // a new NodeClaim cannot carry the label, and no node has room.
    let nodes: Vec<NodeId> = ["a", "b", "c", "d"]
        .iter()
        .map(|name| env.node(name, "fake-it-1", CapacityType::OnDemand))
        .collect();
    let team = || [("team".to_string(), "x".to_string())].into();
    for &node in &nodes {
        env.cluster
            .node_mut(node)
            .unwrap()
            .labels
            .insert("team", "x");
        env.pod_with(node, 1800, |spec| spec.node_selector = team());
    }
    // d is inside its window: closed to the what-ifs, not a candidate.
    let now = env.now;
    env.claim_mut(nodes[3]).lifecycle.last_pod_event_at = Some(now);
    let mut disruption = Disruption::new(env.options).running_every_pass();
    let provisioner = Provisioner::new();
    let mut pass = |env: &Env| {
        env.with_disruption_input(|input| {
            let before = disruption.searches_reused();
            let outcome = disruption.next_command(input, &provisioner);
            assert_eq!(outcome.command, next_command(input).command);
            (outcome.command, disruption.searches_reused() - before)
        })
    };
    assert_eq!(pass(&env), (None, 0), "the first search runs");
    env.now += SimDuration::from_secs(10);
    assert_eq!(pass(&env), (None, 1), "nothing it read changed");
    env.now += SimDuration::from_secs(60);
    assert_eq!(pass(&env), (None, 0), "d left its window");
    env.now += SimDuration::from_secs(10);
    assert_eq!(pass(&env), (None, 1));
    env.pod_with(nodes[0], 10, |spec| spec.node_selector = team());
    assert_eq!(pass(&env), (None, 0), "a pod was bound");
}

/// Nodes `a` (fake-it-2) and `b` (fake-it-1), both labelled for a team,
/// with a 1500m pod that selects the team on `a` and a 1500m pod on `b`
/// (returned too), one node disrupted at a time (multi-node consolidation
/// has nothing to merge). `a`'s pod fits a cheaper type, so the no-op bound
/// cannot rule `a` out; only a simulation finds that no new NodeClaim
/// carries the label and `b` has no room.
fn two_nodes() -> (Env, NodeId, NodeId, PodId) {
    let mut env = Env::fake();
    env.require_on_demand();
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(1);
    let a = env.node("a", "fake-it-2", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-1", CapacityType::OnDemand);
    for node in [a, b] {
        env.cluster
            .node_mut(node)
            .unwrap()
            .labels
            .insert("team", "x");
    }
    env.pod_with(a, 1500, |spec| {
        spec.node_selector = [("team".to_string(), "x".to_string())].into();
    });
    let on_b = env.pod(b, 1500);
    (env, a, b, on_b)
}

/// Nodes `a` (fake-it-3) and `b` (fake-it-1), each with a 1500m pod that
/// selects its node's instance type, one node disrupted at a time. `a`'s
/// pod fits a cheaper type, so the no-op bound cannot rule `a` out; its
/// simulation opens a NodeClaim of fake-it-3 only, no cheaper, and stops.
fn pinned_nodes() -> (Env, NodeId, NodeId) {
    let mut env = Env::fake();
    env.require_on_demand();
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(1);
    let a = env.node("a", "fake-it-3", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-1", CapacityType::OnDemand);
    for (node, type_name) in [(a, "fake-it-3"), (b, "fake-it-1")] {
        env.pod_with(node, 1500, |spec| {
            spec.node_selector = [(LABEL_INSTANCE_TYPE.to_string(), type_name.to_string())].into();
        });
    }
    (env, a, b)
}

/// One pass of `disruption`, checked against a pass that keeps nothing:
/// its command and how many verdicts it reused.
fn pass_counting_reuse(
    disruption: &mut Disruption,
    provisioner: &Provisioner,
    env: &Env,
) -> (Option<Command>, u64) {
    env.with_disruption_input(|input| {
        let before = disruption.verdicts_reused();
        let outcome = disruption.next_command(input, provisioner);
        assert_eq!(outcome.command, next_command(input).command);
        (outcome.command, disruption.verdicts_reused() - before)
    })
}

/// A pass after a change that cannot matter to a quiet candidate (a pod
/// bound to another node that had no room for the candidate's pods)
/// reuses the candidate's verdict, and one after a change that can (room
/// freed on that node) does not; a candidate whose own pods changed is
/// simulated again.
#[test]
fn a_quiet_candidate_keeps_its_verdict_until_room_opens() {
    let (mut env, _, b, filler) = two_nodes();
    let mut disruption = Disruption::new(env.options);
    let provisioner = Provisioner::new();
    let mut pass = |env: &Env| pass_counting_reuse(&mut disruption, &provisioner, env);
    let (command, _) = pass(&env);
    assert!(command.is_none(), "neither node can go: {command:?}");
    env.now += SimDuration::from_secs(10);
    env.pod(b, 50);
    let (command, reused) = pass(&env);
    assert!(command.is_none());
    assert_eq!(
        reused, 1,
        "a's verdict rests on nothing that changed (b's pods did)"
    );
    env.now += SimDuration::from_secs(10);
    env.cluster.remove_pod(filler);
    let (_, reused) = pass(&env);
    assert_eq!(
        reused, 0,
        "a's pods may now fit on b, and b's own pods changed"
    );
}

/// A quiet candidate's what-if that a stop ended rests only on the pods
/// the solve took before it: a pending pod queued after them (smaller)
/// leaves the verdict standing, one queued before them (larger) does not.
#[test]
fn a_stopped_what_if_keeps_its_verdict_while_new_pods_queue_behind() {
    let (mut env, _, b) = pinned_nodes();
    let mut disruption = Disruption::new(env.options);
    let provisioner = Provisioner::new();
    let mut pass = |env: &Env| pass_counting_reuse(&mut disruption, &provisioner, env);
    let add_pending = |env: &mut Env, cpu: i64| {
        let pod = env.pod(b, cpu);
        env.cluster.unbind(pod);
        env.pending.push(pod);
        env.now += SimDuration::from_secs(10);
    };
    // The first pass publishes a's reason (a full simulation); the next,
    // with a pod pending, simulates a quietly: a's 1500m pod, first in the
    // queue, fits neither b nor a cheaper NodeClaim, and the solve stops.
    assert!(pass(&env).0.is_none());
    add_pending(&mut env, 100);
    let (command, reused) = pass(&env);
    assert!(command.is_none());
    assert_eq!(reused, 0, "other pods than when kept, and no stop recorded");
    add_pending(&mut env, 200);
    let (command, reused) = pass(&env);
    assert!(command.is_none());
    assert_eq!(reused, 1, "the new pod queues behind the stop");
    add_pending(&mut env, 1800);
    let (command, reused) = pass(&env);
    assert!(command.is_none());
    assert_eq!(reused, 0, "the new pod queues before a's pod");
}

/// A node launched elsewhere changes what the nodes charge the NodePool's
/// CPU limit with: a quiet candidate's verdict still holds while the limit
/// leaves room for more NodeClaims than its solve took pods (the largest
/// fake type has 40 vCPU; `a`'s solve took one pod), and not once it may
/// leave room for only one.
#[test]
fn a_verdict_outlives_a_new_node_only_while_limits_are_far() {
    // 3 + 2 vCPU before the new node's 2, and room for 40 more at least
    // twice over (far), or for 40 more once (near).
    for (limit_vcpu, reused_after_launch) in [(7 + 80, 1), (7 + 79, 0)] {
        let (mut env, _, b, _) = two_nodes();
        env.pool_mut()
            .limits
            .insert(ResourceKind::Cpu, limit_vcpu * 1000);
        let mut disruption = Disruption::new(env.options);
        let provisioner = Provisioner::new();
        let mut pass = |env: &Env| pass_counting_reuse(&mut disruption, &provisioner, env);
        let (command, _) = pass(&env);
        assert!(command.is_none(), "neither node can go: {command:?}");
        env.now += SimDuration::from_secs(10);
        env.pod(b, 50);
        assert_eq!(
            pass(&env).1,
            1,
            "b's pods changed, the limit's charges did not"
        );
        // A full node that cannot go, too small for a's pod.
        env.now += SimDuration::from_secs(10);
        let c = env.node("c", "fake-it-1", CapacityType::OnDemand);
        env.pod_with(c, 1000, |s| s.do_not_disrupt = Some(DoNotDisrupt::Always));
        let (command, reused) = pass(&env);
        assert!(command.is_none());
        assert_eq!(reused, reused_after_launch, "limit {limit_vcpu} vCPU");
    }
}
