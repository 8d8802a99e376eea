//! Tests of the existing-node views, closures, fit lists and first fits.

use std::sync::Arc;

use rand::{RngExt, SeedableRng};

use super::{ExistingNodes, ExistingSet, OWN_TREE_AFTER, TreeRoom};
use crate::karpenter::provisioning::pod::PodWork;
use crate::karpenter::provisioning::tests::{World, default_pool, pod};
use crate::kube::labels::LABEL_NODEPOOL;
use crate::kube::resources::{GIB, ResourceKind, Resources};
use crate::scheduler::NodeId;
use rand::rngs::Xoshiro256PlusPlus as SimRng;

/// A world of `n` nodes of random size and fill, some uninitialized.
fn random_world(rng: &mut SimRng, n: usize) -> (World, Vec<NodeId>) {
    let mut world = World::fake(default_pool(), 8);
    let mut nodes = Vec::new();
    for i in 0..n {
        let cpu = rng.random_range(1..=8) * 1000;
        let room = Resources::cpu_mem(cpu, cpu / 1000 * 4 * GIB).with(ResourceKind::Pods, 20);
        let registered = rng.random_bool(0.8);
        let id = world.add_node(
            &format!("node-{i:03}"),
            &[(LABEL_NODEPOOL, "default")],
            room,
            registered,
        );
        for _ in 0..rng.random_range(0..4) {
            world.add_running(pod(rng.random_range(1..=4) * 250, 512), id);
        }
        nodes.push(id);
    }
    (world, nodes)
}

/// The tree search finds, for any request and any closed set, the same
/// node as trying every open node in order and taking the first with
/// room (which is how the solve tried them before the tree), whether
/// the nodes are closed by the solve or partly by a closure; limits are
/// charged with the open nodes only, either way.
#[test]
fn first_fit_matches_trying_every_node_in_order() {
    let mut rng = SimRng::seed_from_u64(7);
    for round in 0..20 {
        let (world, nodes) = random_world(&mut rng, 1 + round * 5);
        let prepared = world.prepare();
        let base = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
        let mut closed: Vec<NodeId> = nodes
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.3))
            .collect();
        closed.sort_unstable();
        let mut set = ExistingSet::new(&base, &world.cluster, base.unclosed(), &closed);
        // The same nodes closed partly by a pass-wide closure.
        let (wide, own): (Vec<NodeId>, Vec<NodeId>) =
            closed.iter().partition(|_| rng.random_bool(0.5));
        let closure = base.closure(&world.cluster, &wide);
        let mut split = ExistingSet::new(&base, &world.cluster, &closure, &own);
        for pool in ["default", "other"] {
            assert_eq!(
                split.pool_usage(&world.cluster, pool),
                set.pool_usage(&world.cluster, pool)
            );
        }
        let open_nodes = nodes.len() - closed.len();
        assert_eq!(
            set.pool_usage(&world.cluster, "default").nodes,
            open_nodes as i64
        );
        for _ in 0..30 {
            let cpu = rng.random_range(1..=32) * 250;
            let requests = Resources::cpu_mem(cpu, rng.random_range(1..=16) * GIB / 2)
                .with(ResourceKind::Pods, 1);
            let by_tree = set
                .first_fit(&requests, |n| requests.fits(&n.remaining).then_some(n.id))
                .map(|(_, id)| id);
            let in_order = base
                .nodes
                .iter()
                .find(|n| closed.binary_search(&n.id).is_err() && requests.fits(&n.remaining))
                .map(|n| n.id);
            assert_eq!(by_tree, in_order, "round {round}, cpu {cpu}m");
            let by_split = split
                .first_fit(&requests, |n| requests.fits(&n.remaining).then_some(n.id))
                .map(|(_, id)| id);
            assert_eq!(by_split, in_order, "round {round}, cpu {cpu}m, split");
        }
    }
}

/// Places `work` on its first fit, checked against trying every open
/// node of the solve in order; whether it found one.
fn place_first_fit(set: &mut ExistingSet<'_>, work: &PodWork<'_>, context: &str) -> bool {
    let found = set
        .first_fit(&work.requests, |n| {
            work.requests.fits(&n.remaining).then_some(())
        })
        .map(|(i, _)| i);
    let in_order = (0..set.base.nodes.len())
        .find(|&i| set.is_open(i) && work.requests.fits(&set.view(i).remaining));
    assert_eq!(found, in_order, "{context}");
    let Some(i) = found else { return false };
    let requirements = set.view(i).requirements.clone();
    set.add(i, work, requirements);
    true
}

/// The many small solves of a pass share one closure's fit lists:
/// each still gets, for every pod, the first node in try order that
/// holds it, whatever earlier solves asked and found.
#[test]
fn fit_lists_shared_by_many_solves_keep_the_in_order_first_fit() {
    let mut rng = SimRng::seed_from_u64(29);
    let (world, nodes) = random_world(&mut rng, 90);
    let prepared = world.prepare();
    let base = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    let closure = base.closure(&world.cluster, &[nodes[3], nodes[40]]);
    // Few distinct requests, so later solves reuse lists built before.
    let shapes: Vec<(i64, i64)> = (0..6)
        .map(|_| {
            (
                rng.random_range(1..=12) * 250,
                rng.random_range(1..=12) * 512,
            )
        })
        .collect();
    let mut found = 0;
    for solve in 0..200u32 {
        let own = [nodes[rng.random_range(0..nodes.len())]];
        let mut set = ExistingSet::new(&base, &world.cluster, &closure, &own);
        for step in 0..OWN_TREE_AFTER as u32 {
            let (cpu, mem) = shapes[rng.random_range(0..shapes.len())];
            let spec = pod(cpu, mem);
            let work =
                PodWork::new(crate::scheduler::PodId(solve * 100 + step), &spec, false).unwrap();
            if place_first_fit(&mut set, &work, &format!("solve {solve}, step {step}")) {
                found += 1;
            }
        }
        assert!(set.own_tree.is_none(), "small solves search the lists");
    }
    assert!(found > 500, "{found} pods placed");
    assert!(closure.fits.lock().len() <= shapes.len());
}

/// Placing pods lowers the room a search sees, before and after the
/// solve takes its own tree (past [`OWN_TREE_AFTER`] changed nodes):
/// the first fit is always the first open node in order whose current
/// view has room.
#[test]
fn first_fit_sees_the_room_pods_placed_in_this_solve() {
    let mut rng = SimRng::seed_from_u64(13);
    let (world, nodes) = random_world(&mut rng, 120);
    let prepared = world.prepare();
    let base = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    let closed = [nodes[5], nodes[77]];
    let mut set = ExistingSet::new(&base, &world.cluster, base.unclosed(), &closed);
    let mut placed = 0;
    for step in 0..400 {
        let cpu = rng.random_range(1..=8) * 250;
        let spec = pod(cpu, rng.random_range(1..=8) * 256);
        let work = PodWork::new(crate::scheduler::PodId(step), &spec, false).unwrap();
        if place_first_fit(&mut set, &work, &format!("step {step}")) {
            placed += 1;
        }
    }
    assert!(set.changed.len() > OWN_TREE_AFTER && set.own_tree.is_some());
    assert!(placed > 100, "{placed} pods placed");
}

/// Past [`OWN_TREE_AFTER`] changed nodes, with a node check that refuses
/// some nodes with room, differently for pods of one shape (as their
/// selectors do), and a few pod shapes asked again and again (so later
/// searches skip the subtrees earlier ones found without room): the
/// first fit is still the first open node in order with room that the
/// check takes.
#[test]
fn own_tree_searches_that_skip_roomless_subtrees_keep_the_in_order_first_fit() {
    let mut rng = SimRng::seed_from_u64(31);
    let (world, nodes) = random_world(&mut rng, 150);
    let prepared = world.prepare();
    let base = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    let closed = [nodes[9], nodes[100]];
    let mut set = ExistingSet::new(&base, &world.cluster, base.unclosed(), &closed);
    let refused: Vec<[bool; 2]> = (0..nodes.len())
        .map(|_| [rng.random_bool(0.3), rng.random_bool(0.3)])
        .collect();
    let shapes: Vec<(i64, i64)> = (0..5)
        .map(|_| {
            (
                rng.random_range(1..=10) * 250,
                rng.random_range(1..=10) * 512,
            )
        })
        .collect();
    let (mut placed, mut skipped) = (0, 0);
    for step in 0..600 {
        let (cpu, mem) = shapes[rng.random_range(0..shapes.len())];
        let spec = pod(cpu, mem);
        let work = PodWork::new(crate::scheduler::PodId(step), &spec, false).unwrap();
        let selector = rng.random_range(0..2);
        let takes = |i: usize, n: &super::ExistingNode| {
            !refused[i][selector] && work.requests.fits(&n.remaining)
        };
        let found = set
            .first_fit(&work.requests, |n| {
                let i = base.nodes.iter().position(|b| b.id == n.id).unwrap();
                takes(i, n).then_some(i)
            })
            .map(|(i, _)| i);
        let in_order = (0..set.base.nodes.len()).find(|&i| set.is_open(i) && takes(i, set.view(i)));
        assert_eq!(found, in_order, "step {step}");
        skipped += set
            .dead_ends
            .values()
            .flatten()
            .map(|bits| bits.count_ones())
            .sum::<u32>();
        let Some(i) = found else { continue };
        let requirements = set.view(i).requirements.clone();
        set.add(i, &work, requirements);
        placed += 1;
    }
    assert!(set.own_tree.is_some(), "the solve took its own tree");
    assert!(placed > 100, "{placed} pods placed");
    assert!(skipped > 0, "some subtrees were found without room");
}

/// A tree room never rejects a request that fits the room it was made
/// from, nor the maximum of rooms one of which the request fits; and a
/// room with a negative amount takes nothing.
#[test]
fn tree_rooms_are_a_necessary_condition_of_fitting() {
    let mut rng = SimRng::seed_from_u64(17);
    let mut random = |low: i64| {
        let mut r = Resources::ZERO;
        for kind in [
            ResourceKind::Cpu,
            ResourceKind::Memory,
            ResourceKind::Pods,
            ResourceKind::NvidiaGpu,
        ] {
            if rng.random_bool(0.7) {
                r = r.with(kind, rng.random_range(low..=8));
            }
        }
        r
    };
    for _ in 0..2000 {
        let (want, room, other) = (random(0), random(-2), random(-2));
        let wanted = TreeRoom::wanted(&want);
        let (a, b) = (TreeRoom::of(&room), TreeRoom::of(&other));
        if want.fits(&room) {
            assert!(a.may_fit(&wanted), "{want:?} in {room:?}");
        }
        if want.fits(&room) || want.fits(&other) {
            assert!(a.max(&b).may_fit(&wanted), "{want:?} in max");
        }
        if room.as_room() == Resources::NOTHING_FITS {
            assert!(!a.may_fit(&TreeRoom::wanted(&Resources::ZERO)));
        }
    }
}

/// A second build with the same setup reuses the views of unchanged
/// nodes and remakes those of nodes that changed, with the same
/// content as a build from scratch; a build after no change is the last
/// one.
#[test]
fn unchanged_nodes_keep_their_views() {
    let mut rng = SimRng::seed_from_u64(11);
    let (mut world, nodes) = random_world(&mut rng, 12);
    let prepared = world.prepare();
    let first = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    world.add_running(pod(250, 256), nodes[3]);
    let second = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    assert!(!Arc::ptr_eq(&first, &second), "a node changed");
    let again = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    assert!(Arc::ptr_eq(&second, &again), "no node changed");
    let fresh = ExistingNodes::new(&world.cluster, &world.daemonsets, &world.prepare());
    let view = |nodes: &ExistingNodes, id: NodeId| {
        nodes.nodes.iter().find(|n| n.id == id).cloned().unwrap()
    };
    for &id in &nodes {
        let (a, b, c) = (view(&first, id), view(&second, id), view(&fresh, id));
        assert_eq!(Arc::ptr_eq(&a, &b), id != nodes[3], "node {id:?}");
        assert_eq!(b.remaining, c.remaining);
        assert_eq!(*b.requirements, *c.requirements);
        assert_eq!(b.name, c.name);
    }
    let order = |nodes: &ExistingNodes| nodes.nodes.iter().map(|n| n.id).collect::<Vec<_>>();
    assert_eq!(order(&second), order(&fresh));
    assert_eq!(
        view(&second, nodes[3]).remaining.cpu_millis() + 250,
        view(&first, nodes[3]).remaining.cpu_millis()
    );
}

/// Closing the same nodes (in any order, repeated or not) shares one
/// closure; closing others does not; the shared one is what a fresh
/// closure of those nodes is.
#[test]
fn closures_of_the_same_nodes_are_shared() {
    let mut rng = SimRng::seed_from_u64(5);
    let (world, nodes) = random_world(&mut rng, 12);
    let prepared = world.prepare();
    let base = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    let shared = base.shared_closure(&world.cluster, &[nodes[3], nodes[1]]);
    let again = base.shared_closure(&world.cluster, &[nodes[1], nodes[3], nodes[3]]);
    assert!(Arc::ptr_eq(&shared, &again));
    let other = base.shared_closure(&world.cluster, &[nodes[2]]);
    assert!(!Arc::ptr_eq(&shared, &other));
    let fresh = base.closure(&world.cluster, &[nodes[1], nodes[3]]);
    assert_eq!(shared.ids, fresh.ids);
    assert_eq!(shared.open, fresh.open);
    assert_eq!(shared.leaves, fresh.leaves);
    assert_eq!(shared.pool_usage.len(), fresh.pool_usage.len());
}

/// Builds that keep views through random changes (pods bound and
/// finished, nodes added, removed, marked for deletion and initialized),
/// whether or not the last build is still held elsewhere, make what a build
/// from scratch makes: the same views in the same order, rooms, marks,
/// search tree, pool usage and anti-affinity pods.
#[test]
fn kept_builds_match_fresh_ones_through_random_changes() {
    let mut rng = SimRng::seed_from_u64(23);
    let (mut world, mut nodes) = random_world(&mut rng, 16);
    let prepared = world.prepare();
    let mut held = None;
    let (mut views_kept, mut resorted) = (0, 0);
    let mut last_order: Vec<NodeId> = Vec::new();
    for step in 0..300 {
        let pick = nodes[rng.random_range(0..nodes.len())];
        match rng.random_range(0..6) {
            0 => {
                world.add_running(pod(rng.random_range(1..=4) * 250, 512), pick);
            }
            1 => {
                let on_it = world.cluster.node(pick).map(|n| n.pods.clone());
                if let Some(&victim) = on_it.and_then(|pods| pods.first().copied()).as_ref() {
                    world
                        .cluster
                        .finish_pod(victim, crate::scheduler::PodPhase::Succeeded);
                }
            }
            2 => {
                let cpu = rng.random_range(1..=8) * 1000;
                let room = Resources::cpu_mem(cpu, 4 * GIB).with(ResourceKind::Pods, 20);
                let name = format!("node-{:03}", rng.random_range(0..1000));
                let registered = rng.random_bool(0.7);
                nodes.push(world.add_node(&name, &[(LABEL_NODEPOOL, "default")], room, registered));
            }
            3 if nodes.len() > 2 => {
                world.cluster.remove_node(pick);
                nodes.retain(|&id| id != pick);
            }
            4 => {
                let node = world.cluster.node_mut(pick).unwrap();
                node.marked_for_deletion = !node.marked_for_deletion;
            }
            _ => {
                let node = world.cluster.node_mut(pick).unwrap();
                node.initialized = !node.initialized;
            }
        }
        let kept = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
        let fresh = ExistingNodes::new(&world.cluster, &world.daemonsets, &world.prepare());
        let order = |e: &ExistingNodes| e.nodes.iter().map(|n| n.id).collect::<Vec<_>>();
        let mut try_order: Vec<(bool, &str, NodeId)> = world
            .cluster
            .nodes()
            .map(|(id, n)| (!n.initialized, n.name.as_str(), id))
            .collect();
        try_order.sort();
        let try_order: Vec<NodeId> = try_order.into_iter().map(|(_, _, id)| id).collect();
        assert_eq!(order(&fresh), try_order, "step {step}");
        assert_eq!(order(&kept), try_order, "step {step}");
        for (a, b) in kept.nodes.iter().zip(&fresh.nodes) {
            assert_eq!(
                (
                    a.initialized,
                    &a.name,
                    a.remaining,
                    &*a.requirements,
                    &*a.taints
                ),
                (
                    b.initialized,
                    &b.name,
                    b.remaining,
                    &*b.requirements,
                    &*b.taints
                ),
                "step {step}"
            );
        }
        assert_eq!(kept.rooms, fresh.rooms, "step {step}");
        assert_eq!(kept.marked, fresh.marked, "step {step}");
        assert_eq!(kept.unclosed.open, fresh.unclosed.open, "step {step}");
        assert_eq!(
            kept.unclosed.room_tree, fresh.unclosed.room_tree,
            "step {step}"
        );
        assert_eq!(
            kept.unclosed.pool_usage, fresh.unclosed.pool_usage,
            "step {step}"
        );
        assert_eq!(kept.anti_affinity_pods, fresh.anti_affinity_pods);
        if let Some(previous) = &held {
            let previous: &Arc<ExistingNodes> = previous;
            views_kept += kept
                .nodes
                .iter()
                .filter(|n| previous.nodes.iter().any(|p| Arc::ptr_eq(p, n)))
                .count();
        }
        let now = order(&kept);
        let mut unsorted_then = last_order.clone();
        unsorted_then.retain(|id| now.contains(id));
        resorted += usize::from(now.len() != unsorted_then.len() || now != unsorted_then);
        last_order = now;
        held = rng.random_bool(0.5).then_some(kept);
    }
    assert!(views_kept > 1000, "views are kept ({views_kept})");
    assert!(resorted > 30, "the order changed often ({resorted})");
}

/// A setup retired after a catalog change hands its node views to the
/// next one: a build over the unchanged cluster is the last build itself,
/// and after a change only that node's view is remade. A cleared cache,
/// or one whose DaemonSets changed, starts from nothing.
#[test]
fn a_retired_setup_hands_its_views_on() {
    use crate::karpenter::provisioning::prepared::PreparedCache;

    let mut rng = SimRng::seed_from_u64(13);
    let (mut world, nodes) = random_world(&mut rng, 12);
    let cache = PreparedCache::default();
    let build = |world: &World, cache: &PreparedCache| {
        let prepared = cache.get(&world.contexts(), &world.daemonsets);
        (
            ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared),
            prepared,
        )
    };
    let (first, first_setup) = build(&world, &cache);
    cache.retire();
    let (second, second_setup) = build(&world, &cache);
    assert!(
        !Arc::ptr_eq(&first_setup, &second_setup),
        "a retired setup is not handed out"
    );
    assert!(Arc::ptr_eq(&first, &second), "the views came along");

    world.add_running(pod(250, 256), nodes[5]);
    cache.retire();
    let (third, _) = build(&world, &cache);
    for (a, b) in second.nodes.iter().zip(&third.nodes) {
        assert_eq!(a.id, b.id);
        assert_eq!(Arc::ptr_eq(a, b), a.id != nodes[5], "node {:?}", a.id);
    }

    let no_view_shared = |a: &ExistingNodes, b: &ExistingNodes| {
        a.nodes
            .iter()
            .zip(&b.nodes)
            .all(|(a, b)| !Arc::ptr_eq(a, b))
    };
    cache.clear();
    let (fourth, _) = build(&world, &cache);
    assert!(no_view_shared(&fourth, &third));
    cache.retire();
    world.daemonsets.push(Arc::new(pod(100, 128)));
    let (fifth, _) = build(&world, &cache);
    assert!(no_view_shared(&fifth, &fourth));
}
