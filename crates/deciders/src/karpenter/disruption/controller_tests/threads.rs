//! Passes whose single-node simulations run side by side or stop early:
//! the outcome is the one a single thread simulating every pod finds.

use super::*;
use crate::cloud::Price;

/// Gives a pod host port 8080, so no two such pods share a node.
fn one_per_node(spec: &mut PodSpec) {
    spec.host_ports.push(HostPort {
        port: 8080,
        protocol: "TCP".into(),
        host_ip: String::new(),
    });
}

/// `count` nodes `{prefix}00`, `{prefix}01`, … of a type, each running one
/// half-CPU pod with host port 8080.
fn nodes_of_one_pod(
    env: &mut Env,
    prefix: &str,
    type_name: &str,
    capacity_type: CapacityType,
    count: usize,
) -> Vec<NodeId> {
    (0..count)
        .map(|i| {
            let node = env.node(&format!("{prefix}{i:02}"), type_name, capacity_type);
            env.pod_with(node, 500, one_per_node);
            node
        })
        .collect()
}

/// The pass's single-node simulations may run side by side (one per
/// thread of the current rayon pool): the outcome, command and notes
/// alike, is the one a single thread going in candidate order finds. The
/// pods share a host port, so no two fit one node: multi-node finds
/// nothing, and each spot node needs a new spot node (noted:
/// spot-to-spot is off); the on-demand node among them is replaced by a
/// cheaper spot node, and the candidates after it are not noted (20
/// candidates on each side: 41 take the side-by-side path).
#[test]
fn side_by_side_single_node_simulations_find_what_one_thread_finds() {
    let mut env = Env::fake();
    // By savings ratio: the dear spot nodes, the on-demand node, the cheap
    // spot nodes.
    let before = nodes_of_one_pod(&mut env, "dear", "fake-it-30", CapacityType::Spot, 20);
    let after = nodes_of_one_pod(&mut env, "cheap", "fake-it-2", CapacityType::Spot, 20);
    let od = nodes_of_one_pod(&mut env, "od", "fake-it-7", CapacityType::OnDemand, 1)[0];
    let one = env.pass_on_threads(1);
    let cmd = command(&one);
    assert_eq!(cmd.method, Method::SingleNodeConsolidation);
    assert_eq!(cmd.candidates, vec![od]);
    for node in before {
        assert_eq!(note(&one, node), SPOT_TO_SPOT_DISABLED);
    }
    for node in after {
        assert_eq!(note(&one, node), "");
    }
    assert_eq!(env.pass_on_threads(4), one);
}

/// When multi-node finds a command, the single-node simulations running
/// alongside it are cut short and their outcomes (notes included) dropped,
/// as if they had never run: 40 on-demand nodes with one small pod each
/// merge into one, on 1 thread and on 4 alike.
#[test]
fn multi_node_command_drops_the_single_node_outcomes_alongside() {
    let mut env = Env::fake();
    for i in 0..40 {
        let node = env.node(&format!("n{i:02}"), "fake-it-7", CapacityType::OnDemand);
        env.pod(node, 100);
    }
    let one = env.pass_on_threads(1);
    assert_eq!(command(&one).method, Method::MultiNodeConsolidation);
    assert!(
        one.unconsolidatable.is_empty(),
        "{:?}",
        one.unconsolidatable
    );
    assert_eq!(env.pass_on_threads(4), one);
}

/// A node whose message would be dropped (quiet) gets the same decision
/// without one: its simulation stops once the outcome is sure to be a
/// no-op (no new NodeClaim can undercut it), and a quiet no-op is not
/// noted. Quiet or not, the on-demand node among the spot nodes of the
/// side-by-side test is replaced by the same command; quiet spot nodes
/// are not noted, the others still are; on 1 and 4 threads alike.
#[test]
fn quiet_nodes_get_the_same_decisions_without_messages() {
    let mut env = Env::fake();
    let spot = nodes_of_one_pod(&mut env, "dear", "fake-it-30", CapacityType::Spot, 20);
    let od = nodes_of_one_pod(&mut env, "od", "fake-it-7", CapacityType::OnDemand, 1)[0];
    let loud = env.pass_on_threads(1);
    let (quiet, noted) = spot.split_at(10);
    env.quiet = Some(quiet.iter().chain([&od]).map(|&n| (n, NOW)).collect());
    let hushed = env.pass_on_threads(1);
    assert_eq!(hushed.command, loud.command);
    assert_eq!(command(&hushed).candidates, vec![od]);
    for &node in quiet {
        assert_eq!(note(&loud, node), SPOT_TO_SPOT_DISABLED);
        assert_eq!(note(&hushed, node), "");
    }
    for &node in noted {
        assert_eq!(note(&hushed, node), SPOT_TO_SPOT_DISABLED);
    }
    assert_eq!(env.pass_on_threads(4), hushed);
}

/// A quiet node that is no candidate at all (a do-not-disrupt pod) is not
/// noted either; a loud one with the same pod still is.
#[test]
fn quiet_nodes_are_not_noted_as_rejected_candidates() {
    let mut env = Env::fake();
    let [hushed, loud] = ["hushed", "loud"].map(|name| {
        let node = env.node(name, "fake-it-7", CapacityType::OnDemand);
        env.pod_with(node, 1000, |s| {
            s.do_not_disrupt = Some(DoNotDisrupt::Always)
        });
        node
    });
    env.quiet = Some([(hushed, NOW)].into());
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert_eq!(note(&outcome, hushed), "");
    assert!(note(&outcome, loud).contains("karpenter.sh/do-not-disrupt"));
}

/// The decisions of the single-node tests that end in a no-op or rest on
/// the spot-to-spot rules (controller_tests: wont_replace_with_a_more_
/// expensive_node, spot_to_spot_disabled, spot_to_spot_needs_15_cheaper_
/// types) are the same when the candidate is quiet, and so are those of a
/// candidate only spot offerings could undercut.
#[test]
fn quiet_candidates_keep_upstream_decisions() {
    let check = |mut env: Env, node: NodeId| {
        let loud = env.pass();
        env.quiet = Some([(node, NOW)].into());
        let hushed = env.pass();
        assert_eq!(hushed.command, loud.command);
        assert_eq!(note(&hushed, node), "");
        loud
    };
    let mut env = Env::fake();
    env.require_on_demand();
    let small = env.node("small", "fake-it-1", CapacityType::OnDemand);
    env.pod(small, 1500);
    assert_eq!(note(&check(env, small), small), NO_CHEAPER_NODE);

    let mut env = Env::fake();
    let a = env.node("a", "fake-it-7", CapacityType::Spot);
    env.pod(a, 1000);
    assert_eq!(note(&check(env, a), a), SPOT_TO_SPOT_DISABLED);

    let mut env = Env::fake();
    env.options.spot_to_spot_consolidation = true;
    let small = env.node("small", "fake-it-5", CapacityType::Spot);
    env.pod(small, 500);
    assert!(note(&check(env, small), small).starts_with("SpotToSpotConsolidation requires 15"));

    // Only spot offerings undercut the spot candidate (on-demand ones cost
    // 100 times the fake price here): with one pod it is replaced; with
    // two that share a host port the second needs a second NodeClaim, so
    // the simulation must not stop at the first.
    let spot_only_cheaper = |pods: usize| {
        let mut env = Env::fake();
        env.options.spot_to_spot_consolidation = true;
        let catalog = &mut env.pools[0].1;
        let types: Vec<(String, Price)> = catalog
            .instance_types()
            .iter()
            .map(|t| (t.name().to_string(), t.on_demand_price))
            .collect();
        for (name, price) in types {
            for zone in crate::cloud::fake::FAKE_ZONES {
                let dear = Price::from_micros(price.micros() * 100);
                catalog.set_offering_price(&name, zone.name, CapacityType::OnDemand, dear);
            }
        }
        let big = env.node("big", "fake-it-30", CapacityType::Spot);
        for _ in 0..pods {
            env.pod_with(big, 500, one_per_node);
        }
        (check(env, big), big)
    };
    let (loud, big) = spot_only_cheaper(1);
    assert_eq!(command(&loud).candidates, vec![big]);
    let (loud, big) = spot_only_cheaper(2);
    assert_eq!(
        note(&loud, big),
        "Can't remove without creating 2 candidates"
    );
}
