//! A controller that hands back its last pass while nothing that pass read
//! has changed (`kept_pass`) publishes what one that runs every pass
//! publishes: the same command, the same `Unconsolidatable` messages and
//! the same methods marked consolidated, on random small clusters where
//! time alone turns judgements (`consolidateAfter` windows, nominations,
//! do-not-disrupt durations, the recorder's 15 min dedupe, the 5 min
//! consolidation state renewal), with and without a consolidation state.

use proptest::prelude::*;

use super::*;
use crate::karpenter::disruption::{CONSOLIDATION_STATE_RESET, POLLING_PERIOD};
use crate::karpenter::provisioning::Provisioner;

/// A change between two passes.
#[derive(Debug, Clone)]
enum Change {
    /// Time passes alone.
    Wait {
        secs: u64,
    },
    Bind {
        node: usize,
        cpu: i64,
    },
    /// A pod protected by `karpenter.sh/do-not-disrupt` for `secs` from
    /// now (0: for good).
    BindProtected {
        node: usize,
        cpu: i64,
        secs: u64,
    },
    /// Marked for deletion with its pods still on it.
    MarkDeleting {
        node: usize,
    },
    Remove {
        pod: usize,
    },
    Nominate {
        node: usize,
        secs: u64,
    },
    Pending {
        cpu: i64,
    },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => (1..120u64).prop_map(|secs| Change::Wait { secs }),
        2 => (120..1200u64).prop_map(|secs| Change::Wait { secs }),
        2 => (0..8usize, 100..2500i64).prop_map(|(node, cpu)| Change::Bind { node, cpu }),
        2 => (0..8usize, 100..1500i64, 0..120u64)
            .prop_map(|(node, cpu, secs)| Change::BindProtected { node, cpu, secs }),
        2 => (0..64usize).prop_map(|pod| Change::Remove { pod }),
        1 => (0..8usize, 1..60u64).prop_map(|(node, secs)| Change::Nominate { node, secs }),
        1 => (100..2500i64).prop_map(|cpu| Change::Pending { cpu }),
        1 => (0..8usize).prop_map(|node| Change::MarkDeleting { node }),
    ]
}

const SIZES: [&str; 4] = ["fake-it-1", "fake-it-2", "fake-it-3", "fake-it-4"];

struct Run {
    env: Env,
    nodes: Vec<NodeId>,
    pods: Vec<PodId>,
}

impl Run {
    fn new(initial: &[(usize, Vec<i64>)], budget: u32, consolidate_after: u64) -> Run {
        let mut env = Env::fake();
        env.require_on_demand();
        env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(budget);
        env.pool_mut().disruption.consolidate_after = Some(Duration::from_secs(consolidate_after));
        env.consolidation_state = Some(env.now);
        let mut run = Run {
            env,
            nodes: Vec::new(),
            pods: Vec::new(),
        };
        for (i, (size, pods)) in initial.iter().enumerate() {
            let node = run
                .env
                .node(&format!("n{i:02}"), SIZES[*size], CapacityType::OnDemand);
            run.nodes.push(node);
            for &cpu in pods {
                run.pods.push(run.env.pod(node, cpu));
            }
            // Windows that end one after another while nothing else
            // changes.
            let last_event = run.env.now - SimDuration::from_secs(7 * i as u64);
            run.env.claim_mut(node).lifecycle.last_pod_event_at = Some(last_event);
        }
        run
    }

    /// A pod event on `node` now (its `consolidateAfter` starts over).
    fn pod_event(&mut self, node: NodeId) {
        let now = self.env.now;
        self.env.claim_mut(node).lifecycle.last_pod_event_at = Some(now);
    }

    /// Applies `change`, then lets the polling period pass; the cluster's
    /// consolidation state follows every change, and is renewed once it is
    /// 5 min old, as the engine keeps it.
    fn apply(&mut self, change: &Change) {
        let now = self.env.now;
        let pick = |nodes: &[NodeId], i: usize| nodes[i % nodes.len()];
        let change = match change {
            Change::Wait { .. } | Change::Remove { .. } => change,
            _ if self.nodes.is_empty() => &Change::Wait { secs: 0 },
            _ => change,
        };
        let changed = match *change {
            Change::Wait { secs } => {
                self.env.now += SimDuration::from_secs(secs);
                false
            }
            Change::Bind { node, cpu } => {
                let node = pick(&self.nodes, node);
                self.pods.push(self.env.pod(node, cpu));
                self.pod_event(node);
                true
            }
            Change::BindProtected { node, cpu, secs } => {
                let node = pick(&self.nodes, node);
                let pod = self.env.pod_with(node, cpu, |spec| {
                    spec.do_not_disrupt = Some(match secs {
                        0 => DoNotDisrupt::Always,
                        _ => DoNotDisrupt::For(Duration::from_secs(secs)),
                    });
                });
                self.env.cluster.pod_mut(pod).unwrap().lifecycle.started_at = Some(now);
                self.pods.push(pod);
                self.pod_event(node);
                true
            }
            Change::Remove { pod } if !self.pods.is_empty() => {
                let pod = self.pods.remove(pod % self.pods.len());
                let node = self.env.cluster.pod(pod).and_then(|p| p.node);
                self.env.pending.retain(|p| *p != pod);
                self.env.cluster.remove_pod(pod);
                if let Some(node) = node {
                    self.pod_event(node);
                }
                true
            }
            Change::Nominate { node, secs } => {
                let node = pick(&self.nodes, node);
                self.env.claim_mut(node).lifecycle.nominated_until =
                    Some(now + SimDuration::from_secs(secs));
                true
            }
            Change::MarkDeleting { node } if self.nodes.len() > 1 => {
                let node = self.nodes.remove(node % self.nodes.len());
                self.env.cluster.node_mut(node).unwrap().marked_for_deletion = true;
                true
            }
            Change::Pending { cpu } => {
                let pod = self.env.pod(self.nodes[0], cpu);
                self.env.cluster.unbind(pod);
                self.env.pending.push(pod);
                self.pods.push(pod);
                true
            }
            Change::Remove { .. } | Change::MarkDeleting { .. } => false,
        };
        self.env.now += POLLING_PERIOD;
        let later = self.env.now;
        if let Some(state) = &mut self.env.consolidation_state {
            if changed {
                *state = now;
            }
            if later.saturating_duration_since(*state) >= CONSOLIDATION_STATE_RESET {
                *state = later;
            }
        }
    }

    /// The command's candidates go with their pods (its replacements are
    /// not launched): the cluster settles, and passes find nothing.
    fn carry_out(&mut self, command: &Command) {
        for &node in &command.candidates {
            self.nodes.retain(|&n| n != node);
            let on_it = self.env.cluster.node(node).map(|n| n.pods.clone());
            for pod in on_it.unwrap_or_default() {
                self.pods.retain(|&p| p != pod);
                self.env.cluster.remove_pod(pod);
            }
            self.env.cluster.remove_node(node);
        }
        if let Some(state) = &mut self.env.consolidation_state {
            *state = self.env.now;
        }
    }

    /// Applies `changes` one by one, a pass before the first and after
    /// each, on a controller that reuses passes and one that runs every
    /// pass; returns how many passes were reused.
    fn outcomes_match(&mut self, changes: &[Change]) -> Result<u64, TestCaseError> {
        let mut reusing = Disruption::new(self.env.options);
        let mut running = Disruption::new(self.env.options).running_every_pass();
        let provisioner = Provisioner::new();
        for step in 0..=changes.len() {
            if step > 0 {
                self.apply(&changes[step - 1]);
            }
            let (reused, ran) = self.env.with_disruption_input(|input| {
                (
                    reusing.next_command(input, &provisioner),
                    running.next_command(input, &provisioner),
                )
            });
            prop_assert_eq!(&reused, &ran, "after {} changes", step);
            if let Some(command) = ran.command {
                self.carry_out(&command);
            }
        }
        prop_assert_eq!(running.passes_reused(), 0);
        Ok(reusing.passes_reused())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Reused passes publish what passes that run publish.
    #[test]
    fn a_reused_pass_publishes_what_a_pass_that_runs_publishes(
        initial in proptest::collection::vec((0..4usize, proptest::collection::vec(300..2000i64, 0..4)), 2..7),
        changes in proptest::collection::vec(change(), 1..24),
        budget in 1..4u32,
        consolidate_after in 0..90u64,
        tracks_state in any::<bool>(),
    ) {
        let mut run = Run::new(&initial, budget, consolidate_after);
        if !tracks_state {
            // Every method computes every pass, and nothing renews the
            // key: a kept pass may live past a message's dedupe window.
            run.env.consolidation_state = None;
        }
        run.outcomes_match(&changes)?;
    }
}

/// A pass that reads what the last one read is handed back until a node's
/// `consolidateAfter` elapses, and until a do-not-disrupt duration ends;
/// a pass after a pod was bound runs.
#[test]
fn a_pass_is_reused_until_time_turns_a_judgement() {
    // Two full fake-it-1 nodes labelled for a team whose pods select it:
    // no new NodeClaim carries the label, so no pass finds a command.
    let mut run = Run::new(&[(0, Vec::new()), (0, Vec::new())], 1, 60);
    let (protected, waiting) = (run.nodes[0], run.nodes[1]);
    let team = || [("team".to_string(), "x".to_string())].into();
    for node in [protected, waiting] {
        let labels = &mut run.env.cluster.node_mut(node).unwrap().labels;
        labels.insert("team", "x");
        run.env
            .pod_with(node, 1700, |spec| spec.node_selector = team());
    }
    let pod = run.env.pod_with(protected, 100, |spec| {
        spec.node_selector = team();
        spec.do_not_disrupt = Some(DoNotDisrupt::For(Duration::from_secs(200)));
    });
    let start = run.env.now;
    run.env.cluster.pod_mut(pod).unwrap().lifecycle.started_at = Some(start);
    run.pod_event(waiting);
    let mut disruption = Disruption::new(run.env.options);
    let provisioner = Provisioner::new();
    let mut reused_after = |run: &mut Run, change: Change| {
        run.apply(&change);
        let before = disruption.passes_reused();
        run.env
            .with_disruption_input(|input| disruption.next_command(input, &provisioner));
        disruption.passes_reused() - before
    };
    // Passes run until the methods that found nothing are marked (which
    // the next pass reads), then one is reused: within 30 s.
    macro_rules! settle {
        () => {
            let reused: Vec<u64> = (0..3)
                .map(|_| reused_after(&mut run, Change::Wait { secs: 0 }))
                .collect();
            assert_eq!(reused.last(), Some(&1), "nothing turned: {reused:?}");
        };
    }
    settle!();
    // At most 40 s in, then at least 90 s: the 60 s window has elapsed.
    assert_eq!(
        reused_after(&mut run, Change::Wait { secs: 50 }),
        0,
        "the window elapsed"
    );
    settle!();
    // At most 130 s in, then at least 210 s: the 200 s protection ended.
    assert_eq!(
        reused_after(&mut run, Change::Wait { secs: 70 }),
        0,
        "the protection ended"
    );
    settle!();
    assert_eq!(
        reused_after(&mut run, Change::Bind { node: 1, cpu: 10 }),
        0,
        "a pod was bound"
    );
}
