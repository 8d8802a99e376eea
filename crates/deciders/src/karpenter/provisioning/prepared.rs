//! The solve inputs that stay the same from one solve to the next while
//! NodePools, catalogs and DaemonSets do: each NodePool's template (its
//! pre-filtered instance types and DaemonSet overhead groups), the topology
//! domains NodePools could launch into, the price tables new NodeClaims are
//! ranked by, and node labels as requirements. A simulation solves many
//! times over the same NodePools (every provisioning batch, every
//! consolidation probe), so building these once and keeping them (in a
//! [`super::Provisioner`]) saves most of each solve's setup without
//! changing any of its answers. It also keeps the views of the last
//! [`ExistingNodes`] built with it and, through `node_requirements`, node
//! labels as requirements.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::NodePoolContext;
use super::existing::{ExistingNodes, KeptViews};
use super::node_requirements::NodeRequirements;
use super::template::TemplateCore;
use super::topology::{DomainSource, DomainSources, strict_or_empty};
use crate::cloud::{Offering, Price};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_ZONE_ID};
use crate::kube::pod::PodSpec;
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::Resources;
use crate::kube::taints::TaintEffect;
use crate::nodepool::NodePool;
use crate::scheduler::Cluster;

/// What [`super::solve`] would otherwise build from its NodePools,
/// catalogs and DaemonSets on every call. Build it with [`Prepared::new`]
/// from the same NodePools (in the same order) and DaemonSets the solves
/// will see, and build it again whenever any of them changes: a NodePool,
/// a catalog's offerings or availability, or the DaemonSet set.
pub struct Prepared {
    /// One per NodePool, in input order.
    pools: Vec<PreparedPool>,
    /// NodePool indices in the order solve tries them: weight descending,
    /// then name descending.
    order: Vec<usize>,
    /// Whether any NodePool has a PreferNoSchedule taint (relaxation may
    /// then tolerate them).
    tolerate_prefer_no_schedule: bool,
    domains: DomainSources,
    /// The DaemonSet templates it was built from (held, so their identity
    /// stays meaningful for [`Prepared::matches`]).
    daemonsets: Vec<Arc<PodSpec>>,
    /// Each DaemonSet pod's strict node requirements (none if its terms
    /// are invalid), for existing nodes' overhead.
    daemon_requirements: Vec<Requirements>,
    /// Per NodePool index, its price tables by the requirements offerings
    /// read (zone, zone id, capacity type), compared in place: new
    /// NodeClaims of every solve share a handful of these.
    price_tables: Mutex<Vec<ByOfferingKeys<PriceTable>>>,
    /// Per NodePool index, each catalog type's worst launch price by the
    /// requirements offerings read, built by the caller (see
    /// [`Prepared::worst_launch_prices`]).
    worst_launch_prices: Mutex<Vec<ByOfferingKeys<Vec<Option<Price>>>>>,
    /// Node labels as requirements, by node.
    node_requirements: NodeRequirements,
    /// See [`Prepared::launch_rooms`].
    launch_rooms: OnceLock<Arc<[LaunchRoom]>>,
    /// The placement views of the last [`super::ExistingNodes`] built with
    /// this setup, by node id, with the node revisions they were made at
    /// (see [`crate::scheduler::Cluster::node_revision`]).
    existing_views: Mutex<KeptViews>,
}

/// The requirements a NodeClaim's launch price reads: zone, zone id and
/// capacity type, looked up once. [`Offering::is_compatible`] also reads
/// the capacity-reservation keys; launch prices do not (upstream
/// `WorstLaunchPrice`).
#[derive(Debug, Clone, Copy)]
pub struct OfferingKeys<'r> {
    zone: Option<&'r Requirement>,
    zone_id: Option<&'r Requirement>,
    capacity_type: Option<&'r Requirement>,
}

impl<'r> OfferingKeys<'r> {
    pub fn new(requirements: &'r Requirements) -> Self {
        OfferingKeys {
            zone: requirements.get(LABEL_TOPOLOGY_ZONE),
            zone_id: requirements.get(LABEL_TOPOLOGY_ZONE_ID),
            capacity_type: requirements.get(LABEL_CAPACITY_TYPE),
        }
    }

    /// Zone, zone id and capacity type, as the price tables are keyed.
    pub fn as_array(&self) -> [Option<&'r Requirement>; 3] {
        [self.zone, self.zone_id, self.capacity_type]
    }

    /// Whether the offering's zone, zone id and capacity type are allowed
    /// (availability is the caller's).
    pub fn allows(&self, offering: &Offering) -> bool {
        self.zone.is_none_or(|r| r.has(offering.zone))
            && self.zone_id.is_none_or(|r| r.has(offering.zone_id))
            && self
                .capacity_type
                .is_none_or(|r| r.has(offering.capacity_type.label()))
    }
}

/// One NodePool's tables of something, with the offering requirements
/// (zone, zone id, capacity type) of each.
type ByOfferingKeys<T> = Vec<([Option<Requirement>; 3], Arc<T>)>;

/// The table of NodePool `pool` under the offering requirements `keys`
/// among `tables`, made by `build` (and kept) the first time.
fn table_by_keys<T>(
    tables: &Mutex<Vec<ByOfferingKeys<T>>>,
    pool: usize,
    keys: [Option<&Requirement>; 3],
    build: impl FnOnce() -> T,
) -> Arc<T> {
    let mut tables = tables.lock().unwrap_or_else(PoisonError::into_inner);
    if tables.len() <= pool {
        tables.resize_with(pool + 1, Vec::new);
    }
    let tables = &mut tables[pool];
    let found = tables
        .iter()
        .find(|(seen, _)| seen.iter().zip(&keys).all(|(a, b)| a.as_ref() == *b));
    if let Some((_, table)) = found {
        return table.clone();
    }
    let table = Arc::new(build());
    tables.push((keys.map(|k| k.cloned()), table.clone()));
    table
}

struct PreparedPool {
    /// The NodePool it was built from.
    pool: NodePool,
    /// Its catalog's type requirements (held, as their identity changes
    /// whenever the catalog's availability does).
    type_requirements: Arc<Vec<Requirements>>,
    catalog_len: usize,
    /// The template, or why the NodePool has none.
    template: Result<TemplateCore, String>,
}

impl Prepared {
    /// Builds every NodePool's template and the domain sources.
    pub fn new(nodepools: &[NodePoolContext<'_>], daemonsets: &[Arc<PodSpec>]) -> Prepared {
        // Static NodePools are not the dynamic provisioner's (core:
        // provisioner.go `NewScheduler` drops them): no template is tried,
        // no domain or taint of theirs counts.
        let mut order: Vec<usize> = (0..nodepools.len())
            .filter(|&i| !nodepools[i].pool.is_static())
            .collect();
        order.sort_by(|&a, &b| {
            let (pa, pb) = (nodepools[a].pool, nodepools[b].pool);
            (pb.weight.unwrap_or(0), &pb.name).cmp(&(pa.weight.unwrap_or(0), &pa.name))
        });
        let pools: Vec<PreparedPool> = nodepools
            .iter()
            .map(|ctx| {
                let type_requirements = ctx.catalog.type_requirements().clone();
                PreparedPool {
                    pool: ctx.pool.clone(),
                    catalog_len: ctx.catalog.len(),
                    template: TemplateCore::new(
                        ctx.pool,
                        ctx.catalog,
                        type_requirements.clone(),
                        daemonsets,
                    ),
                    type_requirements,
                }
            })
            .collect();
        let sources = order
            .iter()
            .map(|&i| {
                let pool = nodepools[i].pool;
                let mut requirements = pool.requirement_set.clone();
                for (key, value) in &pool.labels {
                    requirements.add(Requirement::in_values(key, [value.as_str()]));
                }
                DomainSource {
                    requirements,
                    taints: pool.taints.clone(),
                    type_requirements: pools[i].type_requirements.clone(),
                }
            })
            .collect();
        let tolerate_prefer_no_schedule = order.iter().any(|&i| {
            nodepools[i]
                .pool
                .taints
                .iter()
                .any(|t| t.effect == TaintEffect::PreferNoSchedule)
        });
        Prepared {
            pools,
            order,
            tolerate_prefer_no_schedule,
            domains: DomainSources::new(sources),
            daemonsets: daemonsets.to_vec(),
            daemon_requirements: daemonsets.iter().map(|ds| strict_or_empty(ds)).collect(),
            price_tables: Mutex::new(Vec::new()),
            worst_launch_prices: Mutex::new(Vec::new()),
            node_requirements: NodeRequirements::default(),
            launch_rooms: OnceLock::new(),
            existing_views: Mutex::new(KeptViews::default()),
        }
    }

    /// Whether this was built from these inputs, as far as can be told
    /// cheaply: equal NodePools in the same order, the same catalog type
    /// requirements (shared, so any availability change shows) and the
    /// same DaemonSet templates. A catalog whose prices changed in place
    /// without any availability change is not detected: whoever changes
    /// catalogs must drop the prepared inputs.
    pub fn matches(&self, nodepools: &[NodePoolContext<'_>], daemonsets: &[Arc<PodSpec>]) -> bool {
        self.pools.len() == nodepools.len()
            && self.pools.iter().zip(nodepools).all(|(prepared, ctx)| {
                prepared.catalog_len == ctx.catalog.len()
                    && Arc::ptr_eq(&prepared.type_requirements, ctx.catalog.type_requirements())
                    && prepared.pool == *ctx.pool
            })
            && self.built_from_daemonsets(daemonsets)
    }

    /// Whether it was built from these DaemonSet templates (the same ones,
    /// not equal copies).
    fn built_from_daemonsets(&self, daemonsets: &[Arc<PodSpec>]) -> bool {
        self.daemonsets.len() == daemonsets.len()
            && self
                .daemonsets
                .iter()
                .zip(daemonsets)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }

    /// NodePool indices in the order the solve tries them.
    pub(super) fn order(&self) -> &[usize] {
        &self.order
    }

    /// The template of NodePool `index`, or why it has none.
    pub(super) fn template(&self, index: usize) -> Result<&TemplateCore, &str> {
        match &self.pools[index].template {
            Ok(core) => Ok(core),
            Err(e) => Err(e),
        }
    }

    /// Whether relaxation may tolerate PreferNoSchedule taints.
    pub(super) fn tolerate_prefer_no_schedule(&self) -> bool {
        self.tolerate_prefer_no_schedule
    }

    /// The price table of NodePool `pool` under the offering requirements
    /// `keys` (zone, zone-id, capacity type), computed by `build` the first
    /// time.
    pub(super) fn price_table(
        &self,
        pool: usize,
        keys: [Option<&Requirement>; 3],
        build: impl FnOnce() -> PriceTable,
    ) -> Arc<PriceTable> {
        table_by_keys(&self.price_tables, pool, keys, build)
    }

    /// Each catalog type's worst launch price (by
    /// [`crate::cloud::Catalog::instance_types`] index) for NodePool `pool`
    /// under the offering requirements `keys` (zone, zone-id, capacity
    /// type), computed by `build` the first time: consolidation asks it of
    /// nearly every simulated replacement, and it depends only on those
    /// requirements and the catalog's offerings, which this setup is
    /// rebuilt for.
    pub fn worst_launch_prices(
        &self,
        pool: usize,
        keys: [Option<&Requirement>; 3],
        build: impl FnOnce() -> Vec<Option<Price>>,
    ) -> Arc<Vec<Option<Price>>> {
        table_by_keys(&self.worst_launch_prices, pool, keys, build)
    }

    /// Every type a new NodeClaim of the NodePools (`nodepools`, those
    /// this was built from) may launch as: each template option's
    /// allocatable and the price of its cheapest available offering in a zone and
    /// capacity type the NodePool allows, cheapest first. No launch of it
    /// under requirements that add to the NodePool's costs less at worst
    /// ([`crate::karpenter::disruption::consolidation::worst_launch_price`]
    /// reads the same [`OfferingKeys`]). Built on first use.
    pub fn launch_rooms(&self, nodepools: &[NodePoolContext<'_>]) -> Arc<[LaunchRoom]> {
        self.launch_rooms
            .get_or_init(|| {
                let mut rooms = Vec::new();
                for &index in &self.order {
                    let (Ok(core), Some(context)) = (self.template(index), nodepools.get(index))
                    else {
                        continue;
                    };
                    let keys = OfferingKeys::new(&core.requirements);
                    let types = context.catalog.instance_types();
                    for &option in &core.options {
                        let Some(it) = types.get(option as usize) else {
                            continue;
                        };
                        let cheapest = it
                            .offerings
                            .iter()
                            .filter(|o| o.available && keys.allows(o))
                            .map(|o| o.price)
                            .min();
                        if let Some(price) = cheapest {
                            rooms.push(LaunchRoom {
                                price,
                                allocatable: it.allocatable,
                            });
                        }
                    }
                }
                // Stable: equal prices keep the NodePool and option order.
                rooms.sort_by_key(|room| room.price);
                rooms.into()
            })
            .clone()
    }

    /// Takes what the last build of node views kept; hand the new one
    /// back with [`Prepared::keep_existing_views`].
    pub(super) fn take_existing_views(&self) -> KeptViews {
        std::mem::take(
            &mut *self
                .existing_views
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Takes over what `previous` kept that neither NodePools nor catalogs
    /// decide: node label requirements and, when built from the same
    /// DaemonSets, the last node views (a build reads only the cluster,
    /// the DaemonSets and node labels), so a catalog change (an offering
    /// found unavailable, new spot prices) does not remake every view.
    fn carry_over(&self, previous: &Prepared) {
        self.node_requirements
            .take_from(&previous.node_requirements);
        if self.built_from_daemonsets(&previous.daemonsets) {
            self.keep_existing_views(previous.take_existing_views());
        }
    }

    /// Keeps what the last build of node views made.
    pub(super) fn keep_existing_views(&self, kept: KeptViews) {
        *self
            .existing_views
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = kept;
    }

    /// Topology domains from what the NodePools could launch.
    pub(super) fn domains(&self) -> &DomainSources {
        &self.domains
    }

    /// Node labels as requirements, made once per node while its labels
    /// stay the same.
    pub(super) fn node_requirements(&self) -> &NodeRequirements {
        &self.node_requirements
    }
}

/// One type a new NodeClaim may launch as (see [`Prepared::launch_rooms`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaunchRoom {
    /// Its cheapest available offering the NodePool allows.
    pub price: Price,
    /// What pods can use (no NodeClaim of the type holds more).
    pub allocatable: Resources,
}

/// A template's types in launch-preference order under some offering
/// requirements: by cheapest compatible price, then name.
#[derive(Debug)]
pub(super) struct PriceTable {
    /// The template's options by (price, name, index).
    pub order: Vec<u32>,
}

impl PriceTable {
    /// The table of a template's `options` at `price`, ordering ties with
    /// `name`.
    pub fn new<'n>(
        options: &[u32],
        price: impl Fn(u32) -> Price,
        name: impl Fn(u32) -> &'n str,
    ) -> PriceTable {
        let mut priced: Vec<(Price, u32)> = options.iter().map(|&i| (price(i), i)).collect();
        priced.sort_by(|&(pa, a), &(pb, b)| (pa, name(a), a).cmp(&(pb, name(b), b)));
        PriceTable {
            order: priced.into_iter().map(|(_, i)| i).collect(),
        }
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("nodepools", &self.pools.len())
            .field("order", &self.order)
            .field("daemonsets", &self.daemonsets.len())
            .finish_non_exhaustive()
    }
}

/// One [`Prepared`] kept across solves: handed out while it still
/// [`Prepared::matches`] the inputs, rebuilt when it does not. Whoever
/// changes a catalog in place (availability, prices) calls
/// [`PreparedCache::clear`], as a price change is not detected.
#[derive(Debug, Default)]
pub struct PreparedCache {
    /// The setup kept, and whether it may still be handed out (a retired
    /// one is kept only for what the next one takes over).
    current: Mutex<Option<(Arc<Prepared>, bool)>>,
}

impl PreparedCache {
    /// The setup for these NodePools and DaemonSets, built only when the
    /// one kept was built from others (or was cleared).
    pub fn get(
        &self,
        nodepools: &[NodePoolContext<'_>],
        daemonsets: &[Arc<PodSpec>],
    ) -> Arc<Prepared> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        match current.as_ref() {
            Some((prepared, true)) if prepared.matches(nodepools, daemonsets) => prepared.clone(),
            _ => {
                let prepared = Arc::new(Prepared::new(nodepools, daemonsets));
                if let Some((previous, _)) = current.take() {
                    prepared.carry_over(&previous);
                }
                *current = Some((prepared.clone(), true));
                prepared
            }
        }
    }

    /// Drops the kept setup: the next [`PreparedCache::get`] rebuilds
    /// from nothing.
    pub fn clear(&self) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Retires the kept setup after a catalog changed in place: the next
    /// [`PreparedCache::get`] builds another, which takes over the node
    /// label requirements and node views (see `Prepared::carry_over`).
    pub fn retire(&self) {
        if let Some((_, usable)) = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            *usable = false;
        }
    }
}

impl ExistingNodes {
    /// The view of every node of `cluster`, marked for deletion or not. A
    /// node's view is remade only when the node (or a pod on it) changed
    /// since the last build with this setup, and the last build itself is
    /// handed back when no node changed (the cluster's revision is the
    /// same).
    pub fn new(cluster: &Cluster, daemonsets: &[Arc<PodSpec>], prepared: &Prepared) -> Arc<Self> {
        let kept = prepared.take_existing_views();
        if let Some((revision, last)) = &kept.last
            && *revision == cluster.revision()
            && last.fits(cluster)
        {
            let last = last.clone();
            prepared.keep_existing_views(kept);
            return last;
        }
        let (existing, mut keep) = ExistingNodes::build(
            cluster,
            daemonsets,
            &prepared.node_requirements,
            &prepared.daemon_requirements,
            kept,
        );
        let existing = Arc::new(existing);
        keep.last = Some((cluster.revision(), existing.clone()));
        prepared.keep_existing_views(keep);
        existing
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::PreparedCache;
    use crate::karpenter::provisioning::NodePoolContext;
    use crate::karpenter::provisioning::tests::{default_pool, pod};

    /// The cache hands back the same setup while NodePools, catalog
    /// availability and DaemonSets stay the same, and a new one when any of
    /// them changes or it is cleared.
    #[test]
    fn cache_rebuilds_only_when_inputs_change() {
        let pool = default_pool();
        let mut catalog = crate::cloud::fake::instance_types(8);
        let daemonset = Arc::new(pod(100, 128));
        let cache = PreparedCache::default();
        let get = |pool: &_, catalog: &_, daemonsets: &[_]| {
            cache.get(&[NodePoolContext { pool, catalog }], daemonsets)
        };
        let first = get(&pool, &catalog, &[]);
        assert!(Arc::ptr_eq(&first, &get(&pool, &catalog, &[])));

        let with_daemonset = get(&pool, &catalog, std::slice::from_ref(&daemonset));
        assert!(!Arc::ptr_eq(&first, &with_daemonset));
        assert!(Arc::ptr_eq(
            &with_daemonset,
            &get(&pool, &catalog, std::slice::from_ref(&daemonset))
        ));
        let same_spec_other_template = Arc::new(pod(100, 128));
        assert!(!Arc::ptr_eq(
            &with_daemonset,
            &get(&pool, &catalog, &[same_spec_other_template])
        ));

        let before_ice = get(&pool, &catalog, &[]);
        let it = catalog.instance_types()[0].clone();
        let offering = &it.offerings[0];
        assert!(catalog.mark_unavailable(it.name(), offering.zone, offering.capacity_type));
        let after_ice = get(&pool, &catalog, &[]);
        assert!(!Arc::ptr_eq(&before_ice, &after_ice));

        let mut heavier = pool.clone();
        heavier.weight = Some(heavier.weight.unwrap_or(0) + 10);
        assert!(!Arc::ptr_eq(&after_ice, &get(&heavier, &catalog, &[])));

        let kept = get(&heavier, &catalog, &[]);
        cache.clear();
        assert!(!Arc::ptr_eq(&kept, &get(&heavier, &catalog, &[])));
    }

    /// What a new NodeClaim may launch as follows the NodePool's capacity
    /// types: with fake-it-0's on-demand offerings unavailable, an
    /// on-demand NodePool cannot launch it and one that allows spot can;
    /// fake-it-3's cut-price spot offering counts only where spot is
    /// allowed; every type is there at its cheapest allowed offering, with
    /// the catalog's allocatable, cheapest first.
    #[test]
    fn launch_rooms_follow_the_nodepool_capacity_types() {
        use crate::cloud::CapacityType;
        use crate::kube::labels::LABEL_CAPACITY_TYPE;
        use crate::kube::requirements::Requirement;

        let mut catalog = crate::cloud::fake::instance_types(6);
        for zone in ["test-zone-1", "test-zone-2", "test-zone-3"] {
            assert!(catalog.mark_unavailable("fake-it-0", zone, CapacityType::OnDemand));
        }
        let cut_price = crate::cloud::Price::from_micros(1);
        assert!(catalog.set_offering_price(
            "fake-it-3",
            "test-zone-1",
            CapacityType::Spot,
            cut_price
        ));
        let allowing = |types: &[CapacityType]| {
            let mut pool = default_pool();
            pool.requirement_set.add(Requirement::in_values(
                LABEL_CAPACITY_TYPE,
                types.iter().map(|ct| ct.label()),
            ));
            pool
        };
        for types in [
            &[CapacityType::OnDemand][..],
            &[CapacityType::OnDemand, CapacityType::Spot][..],
        ] {
            let pool = allowing(types);
            let contexts = [NodePoolContext {
                pool: &pool,
                catalog: &catalog,
            }];
            let rooms = super::Prepared::new(&contexts, &[]).launch_rooms(&contexts);
            assert!(rooms.windows(2).all(|pair| pair[0].price <= pair[1].price));
            let expected: Vec<super::LaunchRoom> = catalog
                .instance_types()
                .iter()
                .enumerate()
                .filter_map(|(index, it)| {
                    let price = types
                        .iter()
                        .filter_map(|&ct| catalog.cheapest_price(index, ct))
                        .min()?;
                    Some(super::LaunchRoom {
                        price,
                        allocatable: it.allocatable,
                    })
                })
                .collect();
            let spot_allowed = types.contains(&CapacityType::Spot);
            assert_eq!(expected.len(), if spot_allowed { 6 } else { 5 });
            assert_eq!(rooms.len(), expected.len());
            for room in &expected {
                assert!(rooms.contains(room), "{room:?} in {types:?}");
            }
            assert_eq!(rooms[0].price == cut_price, spot_allowed);
        }
    }
}
