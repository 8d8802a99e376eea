//! The consolidation methods' memory of the consolidation state they found
//! nothing at (core: disruption/consolidation.go `IsConsolidated`,
//! `markConsolidated`; consolidation_test.go, where `IsConsolidated` is
//! expected false after a pass a budget held back).

use super::*;
use crate::karpenter::provisioning::Provisioner;

/// One on-demand node of the cheapest type that holds its pod: nothing to
/// consolidate until another node has room for the pod.
fn lone_node() -> (Env, NodeId) {
    let mut env = Env::fake();
    env.require_on_demand();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 1000);
    (env, a)
}

/// A do-not-disrupt node with room for the lone node's pod.
fn add_room(env: &mut Env) {
    let keep = env.node("keep", "fake-it-15", CapacityType::OnDemand);
    env.claim_mut(keep).lifecycle.do_not_disrupt = true;
    env.pod(keep, 1000);
}

fn pass_at(
    env: &mut Env,
    disruption: &mut Disruption,
    after: SimDuration,
    state: SimTime,
) -> PassOutcome {
    env.now = NOW + after;
    env.consolidation_state = Some(state);
    let provisioner = Provisioner::new();
    env.with_disruption_input(|input| disruption.next_command(input, &provisioner))
}

#[test]
fn a_method_that_found_nothing_skips_until_the_consolidation_state_changes() {
    let (mut env, a) = lone_node();
    let mut disruption = Disruption::new(env.options);
    let first = pass_at(&mut env, &mut disruption, SimDuration::ZERO, NOW);
    assert_eq!(first.command, None);
    assert_eq!(
        first.consolidated,
        [
            Method::MultiNodeConsolidation,
            Method::SingleNodeConsolidation
        ],
        "both found nothing and no budget held them back"
    );
    add_room(&mut env);
    let same_state = pass_at(&mut env, &mut disruption, SimDuration::from_secs(10), NOW);
    assert_eq!(same_state.command, None, "consolidated: the methods skip");
    assert!(same_state.consolidated.is_empty(), "they did not compute");
    let one_shot = env.with_disruption_input(next_command);
    assert_eq!(
        command(&one_shot).candidates,
        [a],
        "a pass that remembers nothing deletes the node"
    );
    let changed = NOW + SimDuration::from_secs(10);
    let next = pass_at(
        &mut env,
        &mut disruption,
        SimDuration::from_secs(10),
        changed,
    );
    let cmd = command(&next);
    assert_eq!(cmd.method, Method::SingleNodeConsolidation);
    assert_eq!(cmd.candidates, [a]);
}

#[test]
fn a_method_held_back_by_a_budget_is_not_marked_consolidated() {
    let (mut env, a) = lone_node();
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(0);
    let mut disruption = Disruption::new(env.options);
    let held = pass_at(&mut env, &mut disruption, SimDuration::ZERO, NOW);
    assert_eq!(held.command, None);
    assert!(held.consolidated.is_empty(), "{:?}", held.consolidated);
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Percent(100);
    add_room(&mut env);
    let next = pass_at(&mut env, &mut disruption, SimDuration::from_secs(10), NOW);
    assert_eq!(
        command(&next).candidates,
        [a],
        "the same state, but nothing was marked"
    );
}

#[test]
fn a_one_shot_pass_never_skips() {
    let (mut env, _) = lone_node();
    let mut disruption = Disruption::new(env.options);
    env.consolidation_state = None;
    let provisioner = Provisioner::new();
    let outcome = env.with_disruption_input(|input| disruption.next_command(input, &provisioner));
    assert_eq!(outcome.command, None);
    add_room(&mut env);
    let next = env.with_disruption_input(|input| disruption.next_command(input, &provisioner));
    assert!(next.command.is_some(), "without a state nothing is marked");
}
