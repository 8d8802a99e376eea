//! Turns a validated [`Scenario`] into the engine's inputs: reads the
//! workload manifests of every step and the NodePool files of every variant,
//! loads each EC2NodeClass's catalog, and checks that every NodePool allows
//! at least one instance type in the scenario's zones (warning, once per
//! NodePool, about a pool that allows spot without saying so and about
//! `In` values of well-known labels the region's catalog lacks), and reads the spot
//! inputs (interruption trace, spot price history; see
//! [`load_spot_inputs`](super::load_spot_inputs)) that every variant shares.
//! A pinned pricing snapshot (`pricingSnapshot`) is read here too and
//! every catalog is built from it.
//! All file reading of a run happens here, before anything is simulated.

use karpsim_catalog::BundledCatalog;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use super::generate::GeneratorFactory;
use super::{
    KarpenterConfig, KarpenterSettings, KnownNames, ObjectKind, ObjectRef, Provisioner, Scenario,
    SpotInputError, SpotInputs, WorkloadAction, load_spot_inputs,
};
use super::{Problem, ScenarioError};
use crate::autoscaler::CaConfigError;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::cloud::overlay::{NodeOverlay, PoolView, apply_overlays};
use crate::cloud::reservation::ReservationSelectorTerm;
use crate::cloud::{Catalog, CatalogError};
use crate::cluster_snapshot::{self, Snapshot, SnapshotError};
use crate::karpenter::instance_types::{
    filter_instance_types, template_requirements, unknown_in_values,
};
use crate::kube::labels::LABEL_CAPACITY_TYPE;
use crate::manifest::{ManifestError, ManifestWarning};
use crate::nodepools::edit::NodePoolEdit;
use crate::nodepools::nodeoverlay::ReadOverlay;
use crate::nodepools::{self, Manifests};
use crate::scheduler::kube_scheduler::SchedulerConfig;
use crate::sim::engine::{
    CaSetup, NodePoolStartupFailure, PoolSetup, RunInput, SharedSource, Step, StepAction, Target,
    TargetKind, restrict_zones,
};
use crate::snapshot::{self, PriceSnapshot, SnapshotFileError, SnapshotIdentity};
use karpsim_catalog::zones_of;

/// The bundled catalog's regions and zones, for [`Scenario::load`].
#[derive(Debug, Clone, Copy, Default)]
pub struct BundledRegions;

impl super::RegionCatalog for BundledRegions {
    fn regions(&self) -> Vec<&str> {
        Catalog::regions()
    }

    fn zones(&self, region: &str) -> Option<Vec<&str>> {
        let zones = zones_of(region).ok()?;
        if zones.is_empty() {
            return None;
        }
        Some(zones.into_iter().map(|z| z.name).collect())
    }
}

/// Why a scenario's files could not be turned into runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    /// A referenced file could not be read.
    #[error("cannot read {file}: {reason}")]
    Read {
        /// The file.
        file: String,
        /// The OS error.
        reason: String,
    },
    /// A referenced file is not UTF-8 text.
    #[error("{file}:{}: {error}", error.position)]
    NotUtf8 {
        /// The file.
        file: String,
        /// Where its first invalid byte is.
        error: crate::yaml::NotUtf8,
    },
    /// A manifest is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A `scale` or `delete` step names an object that does not exist at
    /// that moment (with its place in the scenario file).
    #[error(transparent)]
    MissingTarget(super::ScenarioError),
    /// A manifest's workload asks for more replicas than one run simulates.
    #[error(
        "{files}: {kind} {namespace}/{name}: {field} {count} is over the limit of {limit} replicas per workload (see Limits in scenarios/README.md)"
    )]
    TooManyReplicas {
        /// The step's manifest files.
        files: String,
        /// The object's kind.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// `spec.replicas`, `spec.parallelism` or `spec.completions`.
        field: &'static str,
        /// The count.
        count: u32,
        /// [`MAX_REPLICAS`](super::limits::MAX_REPLICAS).
        limit: u64,
    },
    /// The catalog could not be loaded.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// A variant's files hold no NodePool.
    #[error("{variant}: no karpenter.sh/v1 NodePool in {files}")]
    NoNodePool {
        /// `variant <name>`, or the workload item that replaces NodePools.
        variant: String,
        /// Its NodePool files.
        files: String,
    },
    /// A capacity reservation names an instance type or zone the catalog
    /// does not sell it in (with its place in the scenario file).
    #[error(transparent)]
    Reservation(super::ScenarioError),
    /// The interruption trace or spot price history is unusable.
    #[error(transparent)]
    Spot(#[from] SpotInputError),
    /// A Karpenter variant's `startupFailures` names a NodePool it does
    /// not have (with its place in the scenario file).
    #[error(transparent)]
    StartupFailure(super::ScenarioError),
    /// A Cluster Autoscaler variant names an instance type the catalog
    /// does not sell (with its place in the scenario file).
    #[error(transparent)]
    ClusterAutoscaler(#[from] super::ScenarioError),
    /// The pinned pricing snapshot is unreadable or malformed.
    #[error(transparent)]
    PricingSnapshot(#[from] SnapshotFileError),
    /// The cluster snapshot could not be read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The cluster snapshot's nodes are in another region.
    #[error(
        "{file}: the snapshot's nodes are in {snapshot_region}, but the scenario's region is {region} (set region: {snapshot_region})"
    )]
    SnapshotRegionMismatch {
        /// The snapshot.
        file: String,
        /// Its nodes' region.
        snapshot_region: String,
        /// The scenario's region.
        region: String,
    },
    /// The pinned pricing snapshot is for another region.
    #[error(
        "pricingSnapshot {file} holds prices for {snapshot_region}, but the scenario's region is {region}"
    )]
    SnapshotRegion {
        /// The file as the scenario writes it.
        file: String,
        /// The snapshot's region.
        snapshot_region: String,
        /// The scenario's region.
        region: String,
    },
    /// Edits of NodePools for a variant that has no NodePool files (it
    /// runs the NodePools of the scenario's `initialState`).
    #[error(
        "{variant}: cannot set {field}: the variant has no nodePools files to edit (it runs the NodePools of the scenario's initialState)"
    )]
    EditWithoutFiles {
        /// `variant <name>`.
        variant: String,
        /// The first field to set.
        field: String,
    },
    /// A NodePool allows no instance type.
    #[error("{at}: {variant}: NodePool {nodepool} allows no instance type in {zones}{detail}")]
    NoInstanceTypes {
        /// Where the NodePool's name is written.
        at: String,
        /// `variant <name>`, or the workload item that replaces NodePools.
        variant: String,
        /// NodePool.
        nodepool: String,
        /// The zones searched.
        zones: String,
        /// The most common exclusion.
        detail: String,
    },
}

/// A scenario ready to run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// One engine input per variant, in scenario order.
    pub runs: Vec<RunInput>,
    /// Manifest warnings (fields karpsim does not model, …), one line each.
    pub warnings: Vec<String>,
    /// The pricing snapshot every catalog of the runs was built from.
    pub pricing: SnapshotIdentity,
}

/// The scenario's prices: its pinned snapshot file (checked to be for the
/// scenario's region) or the bundled snapshot; and the catalogs built from
/// them so far, one per region and EC2NodeClass settings (every variant and
/// check of a scenario asks for the same few).
struct Pricing {
    pinned: Option<PriceSnapshot>,
    identity: SnapshotIdentity,
    built: RefCell<Vec<(String, NodeClassSettings, Catalog)>>,
}

impl Pricing {
    fn of(scenario: &Scenario) -> Result<Pricing, PrepareError> {
        let Some(pin) = &scenario.pricing_snapshot else {
            let identity = snapshot::bundled_identity(&scenario.region).ok_or_else(|| {
                CatalogError::UnknownRegion {
                    region: scenario.region.clone(),
                    valid: Catalog::regions(),
                }
            })?;
            return Ok(Pricing {
                pinned: None,
                identity,
                built: RefCell::default(),
            });
        };
        let prices = crate::price_snapshot::read_price_snapshot(&pin.path).map_err(|err| {
            SnapshotFileError {
                file: pin.written.clone(),
                reason: err.reason,
            }
        })?;
        if prices.region != scenario.region {
            return Err(PrepareError::SnapshotRegion {
                file: pin.written.clone(),
                snapshot_region: prices.region,
                region: scenario.region.clone(),
            });
        }
        let identity = prices.identity(Some(pin.written.clone()));
        Ok(Pricing {
            pinned: Some(prices),
            identity,
            built: RefCell::default(),
        })
    }

    fn catalog(&self, region: &str, settings: &NodeClassSettings) -> Result<Catalog, CatalogError> {
        let mut built = self.built.borrow_mut();
        if let Some((_, _, catalog)) = built.iter().find(|(r, s, _)| r == region && s == settings) {
            return Ok(catalog.clone());
        }
        let catalog = Catalog::load_pinned(region, settings, self.pinned.as_ref())?;
        built.push((region.to_string(), *settings, catalog.clone()));
        Ok(catalog)
    }
}

/// The prices every run of `scenario` uses: its pinned snapshot file
/// (read and checked against the region) or the bundled snapshot.
pub fn pricing_identity(scenario: &Scenario) -> Result<SnapshotIdentity, PrepareError> {
    Ok(Pricing::of(scenario)?.identity)
}

/// Reads every file the scenario references and builds the runs. Only the
/// variant named `only` is built when given (the caller checks the name).
pub fn prepare(scenario: &Scenario, only: Option<&str>) -> Result<Prepared, PrepareError> {
    let pricing = Pricing::of(scenario)?;
    let mut warnings = BTreeSet::new();
    let mut steps = Vec::new();
    let mut sources: Vec<SharedSource> = Vec::new();
    // What each manifest step applies, for the check of scale and delete
    // steps.
    let mut applied: BTreeMap<usize, Vec<ObjectRef>> = BTreeMap::new();
    // The NodeOverlays beside each `nodePools` step's NodePools, by index
    // into `steps`: whether they apply depends on the variant.
    let mut step_overlays: Vec<(usize, Overlays)> = Vec::new();
    let mut has_requests = false;
    for (index, step) in scenario.workloads.iter().enumerate() {
        let action = match &step.action {
            WorkloadAction::Generate { generator, until } => {
                sources.push(Arc::new(GeneratorFactory {
                    spec: generator.clone(),
                    start: step.at,
                    end: *until,
                }));
                continue;
            }
            WorkloadAction::Trace(spec) => {
                sources.push(Arc::new(spec.clone()));
                continue;
            }
            WorkloadAction::Apply { manifests } => {
                let loaded = load_files(manifests)?;
                warnings.extend(loaded.warnings.iter().map(|w| w.to_string()));
                if !loaded.nodepools.is_empty() || !loaded.nodeclasses.is_empty() {
                    warnings.insert(format!(
                        "{}: NodePools and EC2NodeClasses in workload manifests are ignored (list them under a variant's nodePools)",
                        names(manifests)
                    ));
                }
                let objects = loaded
                    .core
                    .workloads
                    .iter()
                    .map(|w| within_limits(w, manifests))
                    .collect::<Result<Vec<_>, _>>()?;
                applied.insert(index, objects);
                if !loaded.core.provisioning_requests.is_empty() {
                    has_requests = true;
                    steps.push(Step {
                        at: step.at,
                        action: StepAction::ProvisioningRequests {
                            requests: loaded
                                .core
                                .provisioning_requests
                                .into_iter()
                                .map(Arc::new)
                                .collect(),
                        },
                    });
                }
                StepAction::Apply {
                    workloads: loaded.core.workloads,
                    pdbs: loaded.core.pdbs,
                }
            }
            WorkloadAction::Scale { target, replicas } => StepAction::Scale {
                target: target_of(target),
                replicas: *replicas,
            },
            WorkloadAction::Delete { target } => StepAction::Delete {
                target: target_of(target),
            },
            WorkloadAction::NodeCondition {
                node,
                condition_type,
                status,
            } => StepAction::NodeCondition {
                node: node.clone(),
                condition_type: condition_type.clone(),
                status: *status,
            },
            WorkloadAction::NodePools { node_pools } => {
                let label = format!("workloads[{index}]");
                let (nodepools, node_count_resource, overlays) =
                    load_pools(scenario, &pricing, &label, node_pools, &mut warnings)?;
                step_overlays.push((steps.len(), overlays));
                StepAction::NodePools {
                    nodepools,
                    node_count_resource,
                }
            }
        };
        steps.push(Step {
            at: step.at,
            action,
        });
    }
    super::targets::check(scenario, &applied, &shown(&scenario.source))
        .map_err(PrepareError::MissingTarget)?;
    let spot = load_spot(scenario, &pricing)?;
    warnings.extend(spot.warnings.iter().cloned());
    let snapshot = match &scenario.initial_state {
        Some(path) => Some(load_snapshot(scenario, &pricing, path)?),
        None => None,
    };
    if let Some(snapshot) = &snapshot {
        warnings.extend(snapshot.warnings.iter().cloned());
    }
    check_node_names(scenario, snapshot.as_ref())?;
    let initial = snapshot.as_ref().map(|s| Arc::new(s.state.clone()));
    let reservations = super::reservations::resolve(
        scenario,
        &pricing.catalog(&scenario.region, &Default::default())?,
    )?;
    let mut runs = Vec::new();
    for variant in &scenario.variants {
        if only.is_some_and(|name| name != variant.name) {
            continue;
        }
        let mut variant_steps = steps.clone();
        let mut karpenter_options = crate::sim::engine::KarpenterOptions::default();
        let mut variant_reservations = Vec::new();
        let mut startup_failures = Vec::new();
        let (nodepools, node_count_resource, cluster_autoscaler) = match &variant.provisioner {
            Provisioner::Karpenter(config) => {
                karpenter_options = config.settings.engine_options();
                let changes = !spot.price_changes.is_empty();
                let (mut pools, slot, overlays) = karpenter_pools(
                    scenario,
                    &pricing,
                    &variant.name,
                    config,
                    snapshot.as_ref(),
                    &mut warnings,
                )?;
                apply_node_overlays(
                    &mut pools,
                    &overlays,
                    &config.settings,
                    changes,
                    &mut warnings,
                )?;
                let mut used = BTreeSet::new();
                if config.settings.reserved_capacity {
                    used.extend(super::reservations::add_to_pools(
                        &mut pools,
                        &overlays.reservation_terms,
                        &reservations,
                    ));
                }
                for (at, overlays) in &step_overlays {
                    if let StepAction::NodePools { nodepools, .. } = &mut variant_steps[*at].action
                    {
                        apply_node_overlays(
                            nodepools,
                            overlays,
                            &config.settings,
                            changes,
                            &mut warnings,
                        )?;
                        if config.settings.reserved_capacity {
                            used.extend(super::reservations::add_to_pools(
                                nodepools,
                                &overlays.reservation_terms,
                                &reservations,
                            ));
                        }
                    }
                }
                if !config.settings.reserved_capacity && !reservations.is_empty() {
                    warnings.insert(format!(
                        "variant {}: {} capacity reservation(s) ignored where the ReservedCapacity feature gate is off",
                        variant.name,
                        reservations.len()
                    ));
                }
                variant_reservations = reservations
                    .iter()
                    .filter(|r| used.contains(r.id))
                    .cloned()
                    .collect();
                check_static_pools(
                    &variant.name,
                    &pools,
                    &variant_steps,
                    &config.settings,
                    &mut warnings,
                )?;
                startup_failures = startup_failures_of(
                    scenario,
                    &config.startup_failures,
                    &pools,
                    &variant_steps,
                )?;
                (pools, slot, None)
            }
            Provisioner::ClusterAutoscaler(config) => {
                (Vec::new(), None, Some(load_ca(scenario, &pricing, config)?))
            }
        };
        if has_requests {
            warnings.extend(requests_warning(&variant.name, cluster_autoscaler.as_ref()));
        }
        runs.push(RunInput {
            variant: variant.name.clone(),
            seed: scenario.seed,
            duration: scenario.duration,
            zones: scenario.zones.clone(),
            launch_latency: scenario.node_launch_latency,
            node_initialization: scenario.node_initialization,
            startup_failures,
            steps: variant_steps,
            sources: sources.clone(),
            nodepools,
            reservations: variant_reservations,
            capacity_shortages: BTreeSet::new(),
            initial: initial.clone(),
            snapshot_at: None,
            scheduler: SchedulerConfig::default(),
            karpenter: karpenter_options,
            node_count_resource,
            interruptions: spot.interruptions.clone(),
            spot_price_changes: spot.price_changes.clone(),
            cluster_autoscaler,
        });
    }
    Ok(Prepared {
        runs,
        warnings: warnings.into_iter().collect(),
        pricing: pricing.identity,
    })
}

/// What a variant does not do with the scenario's ProvisioningRequests:
/// Karpenter does not read them (their pods are ordinary pending pods),
/// and CA reads them only with `enableProvisioningRequests`.
fn requests_warning(variant: &str, ca: Option<&CaSetup>) -> Option<String> {
    match ca {
        None => Some(format!(
            "variant {variant}: Karpenter does not read ProvisioningRequests; the pods that consume them are provisioned like any pending pod"
        )),
        Some(setup) if !setup.config.config().enable_provisioning_requests => Some(format!(
            "variant {variant}: ProvisioningRequests are ignored without enableProvisioningRequests: true (Cluster Autoscaler's --enable-provisioning-requests, default false); the pods that consume them scale up like any pending pod"
        )),
        Some(_) => None,
    }
}

/// NodePools with their catalogs, the slot `limits.nodes` was read into,
/// and the NodeOverlays beside them.
type LoadedPools = (
    Vec<PoolSetup>,
    Option<crate::kube::resources::ResourceKind>,
    Overlays,
);

/// A Karpenter variant's NodePools with their catalogs and the
/// NodeOverlays beside them: from its files, or the snapshot's.
fn karpenter_pools(
    scenario: &Scenario,
    pricing: &Pricing,
    variant: &str,
    config: &KarpenterConfig,
    snapshot: Option<&Snapshot>,
    warnings: &mut BTreeSet<String>,
) -> Result<LoadedPools, PrepareError> {
    let owner = format!("variant {variant}");
    let files = &config.node_pools;
    if !files.is_empty() {
        return load_edited_pools(
            scenario,
            pricing,
            &owner,
            files,
            &config.node_pool_edits,
            warnings,
        );
    }
    if let Some(edit) = config.node_pool_edits.first() {
        return Err(PrepareError::EditWithoutFiles {
            variant: owner,
            field: edit.field.to_string(),
        });
    }
    // The NodePools the snapshot's cluster runs.
    let Some(snapshot) = snapshot else {
        return Err(PrepareError::NoNodePool {
            variant: owner,
            files: "(no nodePools)".to_string(),
        });
    };
    let loaded = Manifests {
        nodepools: snapshot.nodepools.clone(),
        nodepool_sources: snapshot.nodepool_sources.clone(),
        nodeclasses: snapshot.nodeclasses.clone(),
        resource_names: snapshot.resource_names.clone(),
        ..Manifests::default()
    };
    let source = &snapshot.state.source;
    let (pools, slot) = pools_from(scenario, pricing, &owner, &loaded, source, warnings)?;
    Ok((
        pools,
        slot,
        Overlays::of(&snapshot.nodeoverlays, source.clone(), &loaded),
    ))
}

/// Reads the cluster snapshot a scenario begins from, priced from the
/// scenario's catalog; its nodes must be in the scenario's region.
fn load_snapshot(
    scenario: &Scenario,
    pricing: &Pricing,
    path: &Path,
) -> Result<Snapshot, PrepareError> {
    let raw = cluster_snapshot::read(path)?;
    if let Some(region) = raw.region()
        && region != scenario.region
    {
        return Err(PrepareError::SnapshotRegionMismatch {
            file: shown(path),
            snapshot_region: region.to_string(),
            region: scenario.region.clone(),
        });
    }
    let catalog = pricing.catalog(&scenario.region, &Default::default())?;
    Ok(raw.resolve(&catalog)?)
}

/// Checks a Cluster Autoscaler variant against the region's catalog
/// (default EC2NodeClass settings: the AMI family of an ASG's launch
/// template is not modelled). An unknown instance type is reported where it
/// is written.
fn load_ca(
    scenario: &Scenario,
    pricing: &Pricing,
    config: &super::ClusterAutoscalerConfig,
) -> Result<CaSetup, PrepareError> {
    let config_in = config;
    let catalog = pricing.catalog(&scenario.region, &Default::default())?;
    if let Some(unknown) = config
        .instance_types
        .iter()
        .find(|t| catalog.get(&t.name).is_none())
    {
        let group = config
            .config
            .node_groups
            .iter()
            .find(|g| g.instance_types.contains(&unknown.name))
            .map(|g| g.name.clone())
            .unwrap_or_default();
        let err = CaConfigError::UnknownInstanceType {
            group,
            instance_type: unknown.name.clone(),
            region: scenario.region.clone(),
        };
        return Err(PrepareError::ClusterAutoscaler(ScenarioError::Invalid {
            file: shown(&scenario.source),
            position: unknown.position,
            field: unknown.field.clone(),
            problem: Box::new(Problem::ClusterAutoscaler(err)),
        }));
    }
    let catalog = restrict_zones(&catalog, &scenario.zones);
    let config = config.config.clone().validate(&catalog).map_err(|err| {
        PrepareError::ClusterAutoscaler(ScenarioError::Invalid {
            file: shown(&scenario.source),
            position: super::Position::START,
            field: "variants".to_string(),
            problem: Box::new(Problem::ClusterAutoscaler(err)),
        })
    })?;
    Ok(CaSetup {
        config,
        catalog,
        startup_failures: config_in.startup_failures.clone(),
    })
}

/// Reads the scenario's spot files, checked against the region's catalog
/// (with default EC2NodeClass settings: names and zones do not depend on
/// them). Nothing to read when the scenario has no spot keys.
fn load_spot(scenario: &Scenario, pricing: &Pricing) -> Result<SpotInputs, PrepareError> {
    if scenario.spot.interruptions.is_none() && scenario.spot.price_history.is_none() {
        return Ok(SpotInputs::default());
    }
    let catalog = pricing.catalog(&scenario.region, &Default::default())?;
    Ok(load_spot_inputs(
        &scenario.spot,
        &scenario.source,
        scenario.duration,
        &scenario.zones,
        &KnownNames::from_catalog(&catalog),
    )?)
}

/// Reads NodePool files for `owner` (a variant, or the workload item that
/// replaces the NodePools): each pool with its EC2NodeClass's catalog,
/// checked to allow some instance type in the scenario's zones; and the
/// slot `limits.nodes` was read into.
fn load_pools(
    scenario: &Scenario,
    pricing: &Pricing,
    owner: &str,
    files: &[std::path::PathBuf],
    warnings: &mut BTreeSet<String>,
) -> Result<LoadedPools, PrepareError> {
    load_edited_pools(scenario, pricing, owner, files, &[], warnings)
}

/// [`load_pools`] with `edits` applied to every NodePool document first.
fn load_edited_pools(
    scenario: &Scenario,
    pricing: &Pricing,
    owner: &str,
    files: &[std::path::PathBuf],
    edits: &[NodePoolEdit],
    warnings: &mut BTreeSet<String>,
) -> Result<LoadedPools, PrepareError> {
    let loaded = load_edited_files(files, edits)?;
    let (pools, slot) = pools_from(scenario, pricing, owner, &loaded, &names(files), warnings)?;
    Ok((
        pools,
        slot,
        Overlays::of(&loaded.nodeoverlays, names(files), &loaded),
    ))
}

/// What is read beside a set of NodePools and applies per variant: the
/// NodeOverlays (by the `NodeOverlay` gate), where they are written, and
/// each pool's EC2NodeClass capacity reservation selector terms (by the
/// `ReservedCapacity` gate).
#[derive(Debug, Clone, Default)]
struct Overlays {
    list: Vec<NodeOverlay>,
    files: String,
    /// Per pool, in pool order.
    reservation_terms: Vec<Vec<ReservationSelectorTerm>>,
}

impl Overlays {
    fn of(read: &[ReadOverlay], files: String, loaded: &Manifests) -> Overlays {
        let reservation_terms = loaded
            .nodepools
            .iter()
            .map(|pool| {
                loaded
                    .nodeclasses
                    .iter()
                    .find(|c| c.name == pool.node_class_ref.name)
                    .map(|c| c.capacity_reservation_terms.clone())
                    .unwrap_or_default()
            })
            .collect();
        Overlays {
            list: read.iter().map(|r| r.overlay.clone()).collect(),
            files,
            reservation_terms,
        }
    }
}

/// Applies `overlays` to the catalogs of `pools` when the variant's
/// `NodeOverlay` gate is on; with the gate off they are ignored, as
/// upstream ignores them, with one warning.
fn apply_node_overlays(
    pools: &mut [PoolSetup],
    overlays: &Overlays,
    settings: &KarpenterSettings,
    spot_price_changes: bool,
    warnings: &mut BTreeSet<String>,
) -> Result<(), PrepareError> {
    if overlays.list.is_empty() {
        return Ok(());
    }
    if !settings.node_overlay {
        warnings.insert(format!(
            "{}: {} NodeOverlay(s) ignored where the NodeOverlay feature gate is off (the upstream default); set karpenter.settings.featureGates.NodeOverlay: true to apply them",
            overlays.files,
            overlays.list.len()
        ));
        return Ok(());
    }
    if spot_price_changes
        && let Some(overlay) = overlays.list.iter().find(|o| {
            o.price.is_some()
                && o.requirements
                    .get(LABEL_CAPACITY_TYPE)
                    .is_none_or(|r| r.has("spot"))
        })
    {
        // A price-history change sets a spot offering's price outright and
        // would silently drop the overlay's adjustment.
        return Err(PrepareError::Read {
            file: overlays.files.clone(),
            reason: format!(
                "NodeOverlay {:?} changes spot prices, and spot prices also follow spotPriceHistory: combining the two is not modelled yet (limit the overlay to karpenter.sh/capacity-type In [on-demand])",
                overlay.name
            ),
        });
    }
    let views: Vec<(PoolView<'_>, &Catalog)> = pools
        .iter()
        .map(|setup| {
            (
                PoolView {
                    name: &setup.pool.name,
                    labels: &setup.pool.labels,
                },
                &setup.catalog,
            )
        })
        .collect();
    let (overlaid, conflicts) = apply_overlays(&views, &overlays.list);
    for name in conflicts {
        warnings.insert(format!(
            "{}: NodeOverlay {name:?} conflicts with another NodeOverlay of the same weight on some offering or resource and is not applied (upstream sets its ValidationSucceeded condition to False, reason Conflict)",
            overlays.files
        ));
    }
    for (setup, out) in pools.iter_mut().zip(overlaid) {
        setup.catalog = out.catalog;
    }
    Ok(())
}

/// `nodeCondition` steps name a node of the `initialState` snapshot or one
/// a run launches (`<nodepool or node group>-NNNNN`); any other name is a
/// node no run can have. Whether a launched node exists at the step's
/// instant is only known while running (a step naming none counts as a
/// step whose object did not exist).
fn check_node_names(scenario: &Scenario, snapshot: Option<&Snapshot>) -> Result<(), PrepareError> {
    let launched_name = |name: &str| {
        name.rsplit_once('-').is_some_and(|(prefix, number)| {
            !prefix.is_empty() && number.len() == 5 && number.bytes().all(|b| b.is_ascii_digit())
        })
    };
    for step in &scenario.workloads {
        let super::WorkloadAction::NodeCondition { node, .. } = &step.action else {
            continue;
        };
        let in_snapshot =
            snapshot.is_some_and(|s| s.state.nodes.iter().any(|n| n.node.name == *node));
        if !in_snapshot && !launched_name(node) {
            return Err(PrepareError::Read {
                file: format!("{}:{}", shown(&scenario.source), step.position),
                reason: format!(
                    "nodeCondition names node {node:?}, which is neither in the initialState snapshot nor a name the run's NodeClaims take (<nodepool>-NNNNN)"
                ),
            });
        }
    }
    Ok(())
}

/// A Karpenter variant's `startupFailures` for the engine, each NodePool
/// it names checked against the variant's NodePools (those of its files
/// and of every `nodePools` step).
fn startup_failures_of(
    scenario: &Scenario,
    specs: &[super::StartupFailureSpec],
    pools: &[PoolSetup],
    steps: &[Step],
) -> Result<Vec<NodePoolStartupFailure>, PrepareError> {
    let mut known: BTreeSet<&str> = pools.iter().map(|p| p.pool.name.as_str()).collect();
    for step in steps {
        if let StepAction::NodePools { nodepools, .. } = &step.action {
            known.extend(nodepools.iter().map(|p| p.pool.name.as_str()));
        }
    }
    specs
        .iter()
        .map(|spec| {
            if let Some(written) = &spec.node_pool
                && !known.contains(written.name.as_str())
            {
                let problem = super::Problem::UnknownNodePool {
                    name: written.name.clone(),
                    known: known.iter().map(|n| n.to_string()).collect(),
                };
                return Err(PrepareError::StartupFailure(
                    super::ScenarioError::Invalid {
                        file: shown(&scenario.source),
                        position: written.position,
                        field: written.field.clone(),
                        problem: Box::new(problem),
                    },
                ));
            }
            Ok(NodePoolStartupFailure {
                nodepool: spec.node_pool.as_ref().map(|w| w.name.clone()),
                failure: spec.failure,
            })
        })
        .collect()
}

/// Static NodePools (`spec.replicas`) of a Karpenter variant: a NodePool
/// never turns static or dynamic in a later `nodePools` step (the CRD's
/// CEL rule refuses that update); with the `StaticCapacity` gate off
/// (upstream's default) no controller creates their NodeClaims and the
/// dynamic provisioner skips them, as upstream, with one warning.
fn check_static_pools(
    variant: &str,
    pools: &[PoolSetup],
    steps: &[Step],
    settings: &KarpenterSettings,
    warnings: &mut BTreeSet<String>,
) -> Result<(), PrepareError> {
    let mut in_force: BTreeMap<String, bool> = pools
        .iter()
        .map(|p| (p.pool.name.clone(), p.pool.is_static()))
        .collect();
    let mut static_names: BTreeSet<String> = pools
        .iter()
        .filter(|p| p.pool.is_static())
        .map(|p| p.pool.name.clone())
        .collect();
    let mut order: Vec<&Step> = steps.iter().collect();
    order.sort_by_key(|step| step.at);
    for step in order {
        let StepAction::NodePools { nodepools, .. } = &step.action else {
            continue;
        };
        for setup in nodepools {
            let pool = &setup.pool;
            if let Some(&was) = in_force.get(&pool.name)
                && was != pool.is_static()
            {
                return Err(PrepareError::Read {
                    file: format!("variant {variant}, nodePools step at {}", step.at),
                    reason: format!(
                        "NodePool {:?}: Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes",
                        pool.name
                    ),
                });
            }
            if pool.is_static() {
                static_names.insert(pool.name.clone());
            }
        }
        in_force = nodepools
            .iter()
            .map(|p| (p.pool.name.clone(), p.pool.is_static()))
            .collect();
    }
    if !settings.static_capacity && !static_names.is_empty() {
        let names: Vec<&str> = static_names.iter().map(String::as_str).collect();
        warnings.insert(format!(
            "variant {variant}: static NodePool(s) {} (spec.replicas) get no NodeClaims where the StaticCapacity feature gate is off (the upstream default): no static controller runs and the dynamic provisioner skips them; set karpenter.settings.featureGates.StaticCapacity: true to keep their replicas",
            names.join(", ")
        ));
    }
    Ok(())
}

/// Each NodePool of `loaded` (read from `files`) with its EC2NodeClass's
/// catalog; see [`load_pools`].
fn pools_from(
    scenario: &Scenario,
    pricing: &Pricing,
    owner: &str,
    loaded: &Manifests,
    files: &str,
    warnings: &mut BTreeSet<String>,
) -> Result<(Vec<PoolSetup>, Option<crate::kube::resources::ResourceKind>), PrepareError> {
    warnings.extend(loaded.warnings.iter().map(|w| w.to_string()));
    if loaded.nodepools.is_empty() {
        return Err(PrepareError::NoNodePool {
            variant: owner.to_string(),
            files: files.to_string(),
        });
    }
    let mut nodepools = Vec::new();
    for (pool, source) in loaded.nodepools.iter().zip(&loaded.nodepool_sources) {
        let class_name = &pool.node_class_ref.name;
        let class = loaded.nodeclasses.iter().find(|c| &c.name == class_name);
        if class.is_none() {
            warnings.insert(format!(
                "{owner}: NodePool {}: EC2NodeClass {class_name:?} is not in its files; using EC2NodeClass defaults",
                pool.name
            ));
        }
        let settings = class.map(|c| c.settings).unwrap_or_default();
        let catalog = pricing.catalog(&scenario.region, &settings)?;
        // Values nothing in the region has (typos, mostly): said where
        // they are written, once per pool however many variants share it.
        let mut unknown = Vec::new();
        for u in unknown_in_values(pool, &catalog, &scenario.zones) {
            let Some(requirement) = source.requirements.get(u.requirement) else {
                continue;
            };
            let warning = ManifestWarning {
                at: requirement
                    .values
                    .get(u.value)
                    .cloned()
                    .unwrap_or_else(|| source.at.clone()),
                path: format!("{}.values[{}]", requirement.path, u.value),
                message: u.message.clone(),
            };
            warnings.insert(warning.to_string());
            unknown.push(u.message);
        }
        // Upstream defaults nothing here (core nodepool_defaults.go): every
        // capacity type is allowed and the AWS provider launches spot
        // whenever a spot offering is no pricier than on-demand.
        if !template_requirements(pool).has(LABEL_CAPACITY_TYPE) {
            warnings.insert(format!(
                "nodepool {:?} ({}:{}) allows spot and on-demand; spot is chosen when cheaper",
                pool.name, source.at.file, source.at.place.line
            ));
        }
        let usable = restrict_zones(&catalog, &scenario.zones);
        let allowed = filter_instance_types(pool, &usable);
        // A pool that may launch into capacity reservations gets those
        // offerings per variant, once the reservations are added.
        let may_reserve = class.is_some_and(|c| !c.capacity_reservation_terms.is_empty())
            && template_requirements(pool)
                .get(LABEL_CAPACITY_TYPE)
                .is_some_and(|r| r.has(crate::cloud::CapacityType::Reserved.label()));
        if allowed.allowed.is_empty() && !may_reserve {
            let detail = unknown
                .first()
                .map(|message| format!(" ({message})"))
                .or_else(|| {
                    allowed
                        .exclusions
                        .iter()
                        .max_by_key(|e| e.first)
                        .map(|e| format!(" (most types excluded by {})", e.cause))
                })
                .or_else(|| {
                    allowed.min_values_shortfalls.first().map(|s| {
                        format!(
                            " (minValues {} for {} but only {} values)",
                            s.required, s.key, s.available
                        )
                    })
                })
                .unwrap_or_default();
            return Err(PrepareError::NoInstanceTypes {
                at: source.at.to_string(),
                variant: owner.to_string(),
                nodepool: pool.name.clone(),
                zones: scenario.zones.join(", "),
                detail,
            });
        }
        nodepools.push(PoolSetup {
            pool: pool.clone(),
            catalog,
        });
    }
    Ok((nodepools, loaded.resource_names.lookup("nodes")))
}

fn load_files(paths: &[std::path::PathBuf]) -> Result<Manifests, PrepareError> {
    load_edited_files(paths, &[])
}

/// [`load_files`] with `edits` applied to every NodePool document first.
fn load_edited_files(
    paths: &[std::path::PathBuf],
    edits: &[NodePoolEdit],
) -> Result<Manifests, PrepareError> {
    let mut texts = Vec::new();
    for path in paths {
        let bytes = std::fs::read(path).map_err(|e| PrepareError::Read {
            file: shown(path),
            reason: e.to_string(),
        })?;
        let text = crate::yaml::utf8_text(&bytes).map_err(|error| PrepareError::NotUtf8 {
            file: shown(path),
            error,
        })?;
        texts.push((shown(path), text.to_string()));
    }
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    Ok(nodepools::load_with_edits(&sources, edits)?)
}

/// A path as the user would write it: relative to the working directory
/// when it is below it.
fn shown(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

fn names(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|p| shown(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A manifest workload as the object a step may name, checked against
/// the replicas one workload may ask for.
fn within_limits(
    workload: &crate::kube::workload::Workload,
    files: &[std::path::PathBuf],
) -> Result<ObjectRef, PrepareError> {
    use crate::kube::workload::WorkloadKind;
    let (kind, counts): (ObjectKind, Vec<(&'static str, u32)>) = match &workload.kind {
        WorkloadKind::Deployment { replicas } => {
            (ObjectKind::Deployment, vec![("replicas", *replicas)])
        }
        WorkloadKind::ReplicaSet { replicas } => {
            (ObjectKind::ReplicaSet, vec![("replicas", *replicas)])
        }
        WorkloadKind::StatefulSet { replicas } => {
            (ObjectKind::StatefulSet, vec![("replicas", *replicas)])
        }
        WorkloadKind::Job(job) => {
            let mut counts = vec![("parallelism", job.parallelism)];
            counts.extend(job.completions.map(|c| ("completions", c)));
            (ObjectKind::Job, counts)
        }
        WorkloadKind::DaemonSet => (ObjectKind::DaemonSet, Vec::new()),
        WorkloadKind::Pod => (ObjectKind::Pod, Vec::new()),
    };
    let limit = super::limits::MAX_REPLICAS;
    if let Some((field, count)) = counts.into_iter().find(|(_, c)| u64::from(*c) > limit) {
        return Err(PrepareError::TooManyReplicas {
            files: names(files),
            kind: kind.as_str(),
            namespace: workload.namespace.clone(),
            name: workload.name.clone(),
            field,
            count,
            limit,
        });
    }
    Ok(ObjectRef {
        kind,
        namespace: workload.namespace.clone(),
        name: workload.name.clone(),
    })
}

fn target_of(object: &ObjectRef) -> Target {
    let kind = match object.kind {
        ObjectKind::Deployment => TargetKind::Deployment,
        ObjectKind::StatefulSet => TargetKind::StatefulSet,
        ObjectKind::ReplicaSet => TargetKind::ReplicaSet,
        ObjectKind::DaemonSet => TargetKind::DaemonSet,
        ObjectKind::Job => TargetKind::Job,
        ObjectKind::Pod => TargetKind::Pod,
    };
    Target {
        kind,
        namespace: object.namespace.clone(),
        name: object.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::spot::Fraction;

    const WORKLOAD: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, resources: {requests: {cpu: 500m}}}]\n";

    /// Prepares a two-variant scenario whose variants share `pool_a`'s
    /// file and add `pool_b`'s, in a scratch folder.
    fn prepare_pools(pool_a: &str, pool_b: &str) -> (Result<Prepared, PrepareError>, String) {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("web.yaml", WORKLOAD);
        write("a.yaml", pool_a);
        write("b.yaml", pool_b);
        write(
            "s.yaml",
            "name: t\nseed: 1\nduration: 1h\nregion: us-east-1\nzones: [us-east-1a, us-east-1b]\nworkloads:\n  - manifests: web.yaml\nvariants:\n  - name: one\n    karpenter: {nodePools: a.yaml}\n  - name: two\n    karpenter: {nodePools: [a.yaml, b.yaml]}\n",
        );
        let scenario = Scenario::load(&dir.path().join("s.yaml"), &BundledRegions).unwrap();
        let folder = dir.path().display().to_string();
        (prepare(&scenario, None), folder)
    }

    fn pool(name: &str, requirements: &str) -> String {
        format!(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n      requirements:\n{requirements}"
        )
    }

    /// Upstream defaults no capacity type (core nodepool_defaults.go
    /// `SetDefaults` is empty) and the AWS provider launches reserved, then
    /// spot, then on-demand (aws instance.go `getCapacityType`; docs
    /// concepts/nodepools "Capacity Type"), dropping spot pricier than
    /// on-demand (aws#5015 is the report of a user who expected
    /// on-demand): a pool without the requirement is said to allow spot,
    /// once however many variants use it; pools that constrain it are not.
    #[test]
    fn pools_without_a_capacity_type_are_said_to_allow_spot_once() {
        let a = pool(
            "general",
            "      - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n",
        );
        let b = pool(
            "pinned",
            "      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n",
        );
        let (prepared, folder) = prepare_pools(&a, &b);
        let prepared = prepared.unwrap_or_else(|e| panic!("{e}"));
        let spot: Vec<&String> = prepared
            .warnings
            .iter()
            .filter(|w| w.contains("allows spot and on-demand"))
            .collect();
        assert_eq!(
            spot,
            [&format!(
                "nodepool \"general\" ({folder}/a.yaml:4) allows spot and on-demand; spot is chosen when cheaper"
            )]
        );
    }

    /// An `In` value of a well-known label that the region's catalog lacks
    /// is a warning at the value, once; a pool left with no type names the
    /// value and its own place in the error.
    #[test]
    fn values_missing_from_the_catalog_warn_where_written() {
        let a = pool(
            "general",
            "      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n      - key: node.kubernetes.io/instance-type\n        operator: In\n        values: [m5.large, c5.8xlarge]\n",
        );
        let b = pool(
            "gpu",
            "      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}\n      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, m7z]}\n",
        );
        let (prepared, folder) = prepare_pools(&a, &b);
        let warnings = prepared.unwrap_or_else(|e| panic!("{e}")).warnings;
        let unknown: Vec<&String> = warnings
            .iter()
            .filter(|w| w.contains("does not exist") || w.contains("no instance type"))
            .collect();
        assert_eq!(unknown.len(), 2, "{warnings:#?}");
        assert!(
            unknown[0].starts_with(&format!(
                "{folder}/a.yaml:13:28: spec.template.spec.requirements[1].values[1]: c5.8xlarge does not exist in us-east-1 (did you mean c5."
            )),
            "{}",
            unknown[0]
        );
        assert!(
            unknown[1].starts_with(&format!(
                "{folder}/b.yaml:11:77: spec.template.spec.requirements[1].values[1]: no instance type in us-east-1 has karpenter.k8s.aws/instance-family=m7z"
            )),
            "{}",
            unknown[1]
        );

        let only_typos = pool(
            "general",
            "      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.8xlarge]}\n",
        );
        let (prepared, folder) = prepare_pools(&only_typos, &b);
        let err = prepared.expect_err("no type").to_string();
        assert_eq!(
            err,
            format!(
                "{folder}/a.yaml:4:9: variant one: NodePool general allows no instance type in us-east-1a, us-east-1b (c5.8xlarge does not exist in us-east-1 (did you mean c5.2xlarge, c5.4xlarge, c5.9xlarge?))"
            )
        );
    }

    /// Catalogs are built once per region and EC2NodeClass settings: a
    /// second ask gets the first build, other settings get their own, and
    /// each equals a fresh load.
    #[test]
    fn pricing_builds_each_catalog_once() {
        let pricing = Pricing {
            pinned: None,
            identity: snapshot::bundled_identity("us-east-1").unwrap(),
            built: RefCell::default(),
        };
        let windows = NodeClassSettings {
            ami_family: crate::cloud::nodeclass::AmiFamily::Windows2022,
            ..NodeClassSettings::default()
        };
        let linux = pricing
            .catalog("us-east-1", &NodeClassSettings::default())
            .unwrap();
        let other = pricing.catalog("us-east-1", &windows).unwrap();
        let again = pricing
            .catalog("us-east-1", &NodeClassSettings::default())
            .unwrap();
        assert_eq!(pricing.built.borrow().len(), 2);
        assert_eq!(linux, again);
        assert_ne!(linux, other);
        assert_eq!(
            other,
            Catalog::load_pinned("us-east-1", &windows, None).unwrap()
        );
        assert!(pricing.catalog("us-mars-1", &windows).is_err());
    }

    /// The shipped spot example prepares: three variants sharing the same
    /// interruption settings (hazard on, rebalance recommendations, one
    /// storm of fraction 0.7 with a 40 min outage).
    #[test]
    fn spot_storm_prepares_with_its_interruptions_in_every_run() {
        let scenario = Scenario::load(
            Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../scenarios/spot-storm.yaml"
            )),
            &BundledRegions,
        )
        .unwrap();
        let prepared = prepare(&scenario, None).unwrap();
        assert_eq!(prepared.runs.len(), 3);
        for run in &prepared.runs {
            let settings = &run.interruptions;
            assert!(settings.advisor_hazard);
            assert!(settings.rebalance_lead.is_some());
            assert_eq!(settings.storms.len(), 1);
            assert_eq!(
                settings.storms[0].fraction,
                Fraction::from_millionths(700_000).unwrap()
            );
            assert_eq!(
                settings.storms[0].unavailable_for,
                crate::sim::SimDuration::from_mins(40)
            );
            assert!(run.spot_price_changes.is_empty());
        }
    }
}

/// What `karpsim plan` runs: the snapshot's cluster as a run's start, and
/// the proposed NodePools, if any, that replace the snapshot's.
#[derive(Debug, Clone)]
pub struct PlanInput {
    /// The run whose first instant is planned (its variant runs the
    /// snapshot's NodePools, or the proposed ones when the snapshot has
    /// none).
    pub run: RunInput,
    /// Proposed NodePools replacing the snapshot's (nodes drift).
    pub proposed: Option<(Vec<PoolSetup>, Option<crate::kube::resources::ResourceKind>)>,
    /// The region planned in.
    pub region: String,
    /// Nodes whose reported allocatable differs from Karpenter's estimate.
    pub allocatable_differences: Vec<crate::cluster_snapshot::AllocatableDifference>,
    /// Objects skipped, by kind.
    pub skipped: BTreeMap<String, usize>,
    /// Warnings, one line each.
    pub warnings: Vec<String>,
}

/// Reads a snapshot and the NodePool files proposed for it, for `plan`.
/// The region is `region`, else the nodes' `topology.kubernetes.io/region`,
/// else the default.
pub fn prepare_plan(
    snapshot_path: &Path,
    nodepools: &[std::path::PathBuf],
    region: Option<&str>,
    zones: &[String],
) -> Result<PlanInput, PrepareError> {
    let raw = cluster_snapshot::read(snapshot_path)?;
    let region = region
        .map(str::to_string)
        .or_else(|| raw.region().map(str::to_string))
        .unwrap_or_else(|| super::DEFAULT_REGION.to_string());
    let region_zones: Vec<String> = zones_of(&region)
        .map_err(|_| CatalogError::UnknownRegion {
            region: region.clone(),
            valid: Catalog::regions(),
        })?
        .into_iter()
        .map(|z| z.name.to_string())
        .collect();
    if let Some(unknown) = zones.iter().find(|z| !region_zones.contains(z)) {
        return Err(PrepareError::Read {
            file: "--zones".to_string(),
            reason: format!(
                "{unknown:?} is not a zone of {region} (zones: {})",
                region_zones.join(", ")
            ),
        });
    }
    let zones = if zones.is_empty() {
        region_zones
    } else {
        zones.to_vec()
    };
    let scenario = Scenario {
        name: "plan".to_string(),
        source: std::path::absolute(snapshot_path).unwrap_or_else(|_| snapshot_path.to_path_buf()),
        seed: 0,
        duration: crate::time::SimDuration::from_hours(1),
        region: region.clone(),
        zones,
        node_launch_latency: crate::sim::LaunchLatency::lognormal(
            super::DEFAULT_LAUNCH_MEDIAN,
            super::DEFAULT_LAUNCH_P90,
        )
        .map_err(|e| PrepareError::Read {
            file: shown(snapshot_path),
            reason: e.to_string(),
        })?,
        node_initialization: crate::sim::engine::DEFAULT_NODE_INITIALIZATION,
        workloads: Vec::new(),
        variants: Vec::new(),
        spot: Default::default(),
        pricing_snapshot: None,
        initial_state: None,
        capacity_reservations: Vec::new(),
    };
    let pricing = Pricing::of(&scenario)?;
    if let Some(found) = raw.region()
        && found != region
    {
        return Err(PrepareError::SnapshotRegionMismatch {
            file: shown(snapshot_path),
            snapshot_region: found.to_string(),
            region,
        });
    }
    let catalog = pricing.catalog(&region, &Default::default())?;
    let snapshot = raw.resolve(&catalog)?;
    let mut warnings: BTreeSet<String> = snapshot.warnings.iter().cloned().collect();
    let proposed = if nodepools.is_empty() {
        None
    } else {
        let (pools, slot, overlays) =
            load_pools(&scenario, &pricing, "--nodepools", nodepools, &mut warnings)?;
        // `plan` runs upstream's default settings: NodeOverlay is off.
        let defaults = KarpenterSettings::default();
        apply_node_overlays(&mut Vec::new(), &overlays, &defaults, false, &mut warnings)?;
        Some((pools, slot))
    };
    let (pools, slot, proposed) = if snapshot.nodepools.is_empty() {
        match proposed {
            Some((pools, slot)) => (pools, slot, None),
            None => {
                return Err(PrepareError::NoNodePool {
                    variant: "plan".to_string(),
                    files: format!(
                        "{} (add nodepools to the kubectl get, or pass --nodepools)",
                        shown(snapshot_path)
                    ),
                });
            }
        }
    } else {
        let loaded = Manifests {
            nodepools: snapshot.nodepools.clone(),
            nodepool_sources: snapshot.nodepool_sources.clone(),
            nodeclasses: snapshot.nodeclasses.clone(),
            resource_names: snapshot.resource_names.clone(),
            ..Manifests::default()
        };
        let (pools, slot) = pools_from(
            &scenario,
            &pricing,
            "snapshot",
            &loaded,
            &shown(snapshot_path),
            &mut warnings,
        )?;
        (pools, slot, proposed)
    };
    let run = RunInput {
        variant: "plan".to_string(),
        seed: 0,
        duration: scenario.duration,
        zones: scenario.zones.clone(),
        launch_latency: scenario.node_launch_latency,
        node_initialization: scenario.node_initialization,
        startup_failures: Vec::new(),
        steps: Vec::new(),
        sources: Vec::new(),
        nodepools: pools,
        reservations: Vec::new(),
        capacity_shortages: BTreeSet::new(),
        initial: Some(Arc::new(snapshot.state.clone())),
        snapshot_at: None,
        scheduler: SchedulerConfig::default(),
        karpenter: crate::sim::engine::KarpenterOptions::default(),
        node_count_resource: slot,
        interruptions: Default::default(),
        spot_price_changes: Vec::new(),
        cluster_autoscaler: None,
    };
    Ok(PlanInput {
        run,
        proposed,
        region,
        allocatable_differences: snapshot.allocatable_differences,
        skipped: snapshot.skipped,
        warnings: warnings.into_iter().collect(),
    })
}
