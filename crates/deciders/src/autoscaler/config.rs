//! The Cluster Autoscaler variant configuration (`clusterAutoscaler:` in a
//! scenario): node groups (one per ASG) and the CA flags karpsim models,
//! with CA's own defaults (`config/flags/flags.go` at kubernetes/autoscaler
//! f7bb0c3623), and its validation against the instance-type catalog.

use std::collections::BTreeMap;

use crate::cloud::Catalog;
use crate::kube::taints::Taint;
use crate::time::SimDuration;

/// How an ASG buys capacity (`MixedInstancesPolicy.InstancesDistribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacitySplit {
    /// Every instance on-demand.
    OnDemand,
    /// Every instance spot.
    Spot,
    /// `onDemandBaseCapacity` on-demand instances first, then
    /// `onDemandPercentageAboveBaseCapacity` percent of the rest on-demand.
    Mixed {
        /// `OnDemandBaseCapacity`.
        on_demand_base_capacity: u32,
        /// `OnDemandPercentageAboveBaseCapacity`, 0–100.
        on_demand_percentage_above_base: u32,
    },
}

/// `SpotAllocationStrategy` of the ASG (how it picks a spot pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpotAllocationStrategy {
    /// `lowest-price`: the cheapest pool.
    LowestPrice,
    /// `capacity-optimized`: the pool with the most spare capacity.
    CapacityOptimized,
    /// `price-capacity-optimized` (AWS's recommendation): low interruption
    /// risk first, then price.
    #[default]
    PriceCapacityOptimized,
}

/// `OnDemandAllocationStrategy` of the ASG's mixed instances policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDemandAllocationStrategy {
    /// `prioritized` (the default): the overrides in their written order.
    #[default]
    Prioritized,
    /// `lowest-price`: the cheapest override.
    LowestPrice,
}

/// One node group: an Auto Scaling group as CA sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroupSpec {
    /// Group (ASG) name; the id the priority expander's regexes match.
    pub name: String,
    /// Launch-template overrides, in order; CA plans with the first one.
    pub instance_types: Vec<String>,
    /// On-demand / spot split.
    pub capacity: CapacitySplit,
    /// Spot pool choice inside the ASG.
    pub spot_allocation_strategy: SpotAllocationStrategy,
    /// On-demand type choice inside the ASG.
    pub on_demand_allocation_strategy: OnDemandAllocationStrategy,
    /// Availability zones of the ASG's subnets, in order (the cloud
    /// template takes the first).
    pub zones: Vec<String>,
    /// `MinSize`.
    pub min_size: u32,
    /// `MaxSize`.
    pub max_size: u32,
    /// Node labels (kubelet `--node-labels`, mirrored in the
    /// `k8s.io/cluster-autoscaler/node-template/label/*` tags).
    pub labels: BTreeMap<String, String>,
    /// Node taints (mirrored in the `node-template/taint/*` tags).
    pub taints: Vec<Taint>,
    /// Overrides of the flags for this group.
    pub autoscaling_options: GroupAutoscalingOptions,
}

/// Per-group overrides of CA's flags (`NodeGroupAutoscalingOptions`, CA ≥
/// 1.21; on AWS the ASG tags
/// `k8s.io/cluster-autoscaler/node-template/autoscaling-options/<name>`).
/// Unset fields take the flag's value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupAutoscalingOptions {
    /// `scaledownutilizationthreshold`.
    pub scale_down_utilization_threshold: Option<f64>,
    /// `scaledowngpuutilizationthreshold`.
    pub scale_down_gpu_utilization_threshold: Option<f64>,
    /// `scaledownunneededtime`.
    pub scale_down_unneeded_time: Option<SimDuration>,
    /// `scaledownunreadytime`.
    pub scale_down_unready_time: Option<SimDuration>,
    /// `ignoredaemonsetsutilization`.
    pub ignore_daemonsets_utilization: Option<bool>,
    /// `maxnodeprovisiontime`.
    pub max_node_provision_time: Option<SimDuration>,
}

/// The options in force for one group: its overrides over the flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupOptions {
    /// Utilization at or below which a node without GPUs is unneeded.
    pub scale_down_utilization_threshold: f64,
    /// The same for a node with GPUs, measured on GPUs alone.
    pub scale_down_gpu_utilization_threshold: f64,
    /// How long a ready node must be unneeded.
    pub scale_down_unneeded_time: SimDuration,
    /// How long a node that is not ready must be unneeded.
    pub scale_down_unready_time: SimDuration,
    /// Leave DaemonSet pods out of utilization.
    pub ignore_daemonsets_utilization: bool,
    /// How long a scale-up may take to register.
    pub max_node_provision_time: SimDuration,
}

/// One expander of the `--expander` chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExpanderKind {
    /// `random`: a seeded pick among the survivors.
    Random,
    /// `most-pods`: the options that schedule the most pods.
    MostPods,
    /// `least-waste` (CA's default): least unused CPU + memory share.
    LeastWaste,
    /// `least-nodes`: the fewest new nodes.
    LeastNodes,
    /// `priority`: the highest tier of `priorities` whose regex matches.
    Priority,
    /// `price`: needs cloud pricing, which the AWS provider does not offer.
    Price,
}

impl ExpanderKind {
    /// Parses a CA expander name.
    pub fn parse(name: &str) -> Option<ExpanderKind> {
        Some(match name.trim() {
            "random" => ExpanderKind::Random,
            "most-pods" => ExpanderKind::MostPods,
            "least-waste" => ExpanderKind::LeastWaste,
            "least-nodes" => ExpanderKind::LeastNodes,
            "priority" => ExpanderKind::Priority,
            "price" => ExpanderKind::Price,
            _ => return None,
        })
    }

    /// The flag spelling.
    pub fn name(self) -> &'static str {
        match self {
            ExpanderKind::Random => "random",
            ExpanderKind::MostPods => "most-pods",
            ExpanderKind::LeastWaste => "least-waste",
            ExpanderKind::LeastNodes => "least-nodes",
            ExpanderKind::Priority => "priority",
            ExpanderKind::Price => "price",
        }
    }
}

/// How spot interruptions reach the cluster (the engine acts on it; the
/// decision model only carries it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TerminationHandler {
    /// Nothing drains an interrupted node; pods die with the instance.
    #[default]
    None,
    /// aws-node-termination-handler: cordon and drain on the 2-minute notice.
    NodeTerminationHandler,
    /// ASG Capacity Rebalance: the ASG launches a replacement on the
    /// rebalance recommendation.
    CapacityRebalance,
}

/// The CA configuration of one variant. [`Default`] is CA's defaults with
/// no node groups. One field per CA flag it models, so the struct is as
/// wide as the flag list.
#[derive(Debug, Clone, PartialEq)]
pub struct CaConfig {
    /// Node groups, in declaration order (the order CA lists them).
    pub node_groups: Vec<NodeGroupSpec>,
    /// `--expander`, a filter chain (default `least-waste`).
    pub expander: Vec<ExpanderKind>,
    /// Priority expander tiers: priority → group-name regexes.
    pub priorities: BTreeMap<i32, Vec<String>>,
    /// `--scale-down-enabled` (true).
    pub scale_down_enabled: bool,
    /// `--scale-down-utilization-threshold` (0.5).
    pub scale_down_utilization_threshold: f64,
    /// `--scale-down-unneeded-time` (10m).
    pub scale_down_unneeded_time: SimDuration,
    /// `--scale-down-delay-after-add` (10m).
    pub scale_down_delay_after_add: SimDuration,
    /// `--scale-down-delay-after-delete` (0).
    pub scale_down_delay_after_delete: SimDuration,
    /// `--scale-down-delay-after-failure` (3m).
    pub scale_down_delay_after_failure: SimDuration,
    /// `--max-node-provision-time` (15m).
    pub max_node_provision_time: SimDuration,
    /// `--balance-similar-node-groups` (false).
    pub balance_similar_node_groups: bool,
    /// How spot interruptions are handled.
    pub termination_handler: TerminationHandler,
    /// `--max-nodes-total` (0 = unlimited).
    pub max_nodes_total: u32,
    /// `--max-nodes-per-scaleup` (1000).
    pub max_nodes_per_scale_up: u32,
    /// `--max-scale-down-parallelism` (10): deletions in flight.
    pub max_scale_down_parallelism: u32,
    /// `--max-drain-parallelism` (1): non-empty drains in flight.
    pub max_drain_parallelism: u32,
    /// `--skip-nodes-with-system-pods` (true).
    pub skip_nodes_with_system_pods: bool,
    /// `--skip-nodes-with-local-storage` (true).
    pub skip_nodes_with_local_storage: bool,
    /// `--skip-nodes-with-custom-controller-pods` (true).
    pub skip_nodes_with_custom_controller_pods: bool,
    /// `--blocking-system-pod-distruption-timeout` (1h).
    pub blocking_system_pod_disruption_timeout: SimDuration,
    /// `--ignore-daemonsets-utilization` (false: DaemonSet pods count).
    pub ignore_daemonsets_utilization: bool,
    /// `--expendable-pods-priority-cutoff` (−10).
    pub expendable_pods_priority_cutoff: i32,
    /// `--initial-node-group-backoff-duration` (5m).
    pub initial_node_group_backoff: SimDuration,
    /// `--max-node-group-backoff-duration` (30m).
    pub max_node_group_backoff: SimDuration,
    /// `--node-group-backoff-reset-timeout` (3h).
    pub node_group_backoff_reset_timeout: SimDuration,
    /// `--new-pod-scale-up-delay` (0).
    pub new_pod_scale_up_delay: SimDuration,
    /// `--scale-down-gpu-utilization-threshold` (0.5): the threshold for
    /// nodes with GPUs, whose utilization is their GPUs'.
    pub scale_down_gpu_utilization_threshold: f64,
    /// `--scale-down-unready-time` (20m): the unneeded time of a node that
    /// is not ready.
    pub scale_down_unready_time: SimDuration,
    /// `--enforce-node-group-min-size` (false): groups below their minimum
    /// size are scaled up to it.
    pub enforce_node_group_min_size: bool,
    /// `--enable-provisioning-requests` (false): ProvisioningRequests are
    /// processed and the pods consuming them left out of regular scale-ups.
    pub enable_provisioning_requests: bool,
    /// `--provisioning-request-initial-backoff-time` (1m): the first wait
    /// before a request not provisioned is tried again.
    pub provisioning_request_initial_backoff: SimDuration,
    /// `--provisioning-request-max-backoff-time` (10m): the longest wait.
    pub provisioning_request_max_backoff: SimDuration,
    /// `--ok-total-unready-count` (3): unready nodes always tolerated.
    pub ok_total_unready_count: u32,
    /// `--max-total-unready-percentage` (45): above this share of unready
    /// nodes (and the count above), CA halts.
    pub max_total_unready_percentage: f64,
}

impl Default for CaConfig {
    fn default() -> Self {
        CaConfig {
            node_groups: Vec::new(),
            expander: vec![ExpanderKind::LeastWaste],
            priorities: BTreeMap::new(),
            scale_down_enabled: true,
            scale_down_utilization_threshold: 0.5,
            scale_down_unneeded_time: SimDuration::from_mins(10),
            scale_down_delay_after_add: SimDuration::from_mins(10),
            scale_down_delay_after_delete: SimDuration::ZERO,
            scale_down_delay_after_failure: SimDuration::from_mins(3),
            max_node_provision_time: SimDuration::from_mins(15),
            balance_similar_node_groups: false,
            termination_handler: TerminationHandler::None,
            max_nodes_total: 0,
            max_nodes_per_scale_up: 1000,
            max_scale_down_parallelism: 10,
            max_drain_parallelism: 1,
            skip_nodes_with_system_pods: true,
            skip_nodes_with_local_storage: true,
            skip_nodes_with_custom_controller_pods: true,
            blocking_system_pod_disruption_timeout: SimDuration::from_hours(1),
            ignore_daemonsets_utilization: false,
            expendable_pods_priority_cutoff: -10,
            initial_node_group_backoff: SimDuration::from_mins(5),
            max_node_group_backoff: SimDuration::from_mins(30),
            node_group_backoff_reset_timeout: SimDuration::from_hours(3),
            new_pod_scale_up_delay: SimDuration::ZERO,
            scale_down_gpu_utilization_threshold: 0.5,
            scale_down_unready_time: SimDuration::from_mins(20),
            enforce_node_group_min_size: false,
            enable_provisioning_requests: false,
            provisioning_request_initial_backoff: SimDuration::from_mins(1),
            provisioning_request_max_backoff: SimDuration::from_mins(10),
            ok_total_unready_count: 3,
            max_total_unready_percentage: 45.0,
        }
    }
}

/// Why a CA configuration cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaConfigError {
    /// `price` selected: CA exits at start-up on AWS.
    #[error(
        "expander \"price\" is not available on AWS: the AWS cloud provider implements no pricing \
         (Cluster Autoscaler exits at start-up); use \"priority\" to prefer spot groups, or \
         \"least-waste\""
    )]
    PriceExpanderOnAws,
    /// `random` is a strategy, not a filter: it must end the chain.
    #[error("expander \"random\" must be the last in the chain {chain:?}")]
    RandomNotLast {
        /// The chain as given.
        chain: String,
    },
    /// An empty expander chain.
    #[error("expander chain is empty")]
    NoExpander,
    /// Two groups share a name.
    #[error("node group {0:?} is declared twice")]
    DuplicateGroup(String),
    /// A group has no instance type.
    #[error("node group {0:?} lists no instance types")]
    NoInstanceTypes(String),
    /// A group has no zone.
    #[error("node group {0:?} lists no zones")]
    NoZones(String),
    /// An instance type is not in the region's catalog.
    #[error("node group {group:?}: instance type {instance_type:?} is not sold in {region}")]
    UnknownInstanceType {
        /// Group name.
        group: String,
        /// The type asked for.
        instance_type: String,
        /// Catalog region.
        region: String,
    },
    /// A zone is not in the region.
    #[error("node group {group:?}: zone {zone:?} is not in {region}")]
    UnknownZone {
        /// Group name.
        group: String,
        /// The zone asked for.
        zone: String,
        /// Catalog region.
        region: String,
    },
    /// `minSize > maxSize`.
    #[error("node group {group:?}: minSize {min} is above maxSize {max}")]
    MinAboveMax {
        /// Group name.
        group: String,
        /// minSize.
        min: u32,
        /// maxSize.
        max: u32,
    },
    /// A percentage outside 0–100.
    #[error("node group {group:?}: onDemandPercentageAboveBaseCapacity {value} is not 0-100")]
    BadPercentage {
        /// Group name.
        group: String,
        /// The value.
        value: u32,
    },
    /// A priority regex does not compile.
    #[error("priorities[{priority}]: invalid regex {pattern:?}: {reason}")]
    BadPriorityRegex {
        /// The tier.
        priority: i32,
        /// The pattern.
        pattern: String,
        /// The compiler's message.
        reason: String,
    },
    /// The utilization threshold is outside 0–1.
    #[error("scaleDownUtilizationThreshold {0} is not between 0 and 1")]
    BadThreshold(String),
}

/// Compiled priority tiers (highest first).
#[derive(Debug, Clone)]
pub struct PriorityTiers(Vec<(i32, Vec<regex_lite::Regex>)>);

impl PriorityTiers {
    /// Compiles `priorities`.
    pub fn compile(priorities: &BTreeMap<i32, Vec<String>>) -> Result<Self, CaConfigError> {
        let mut tiers = Vec::new();
        for (&priority, patterns) in priorities.iter().rev() {
            let mut compiled = Vec::new();
            for pattern in patterns {
                let re = regex_lite::Regex::new(pattern).map_err(|e| {
                    CaConfigError::BadPriorityRegex {
                        priority,
                        pattern: pattern.clone(),
                        reason: e.to_string(),
                    }
                })?;
                compiled.push(re);
            }
            tiers.push((priority, compiled));
        }
        Ok(PriorityTiers(tiers))
    }

    /// The highest priority whose regexes match `group` (unanchored, as
    /// Go's `FindStringIndex`), if any.
    pub fn priority_of(&self, group: &str) -> Option<i32> {
        self.0
            .iter()
            .find(|(_, res)| res.iter().any(|re| re.is_match(group)))
            .map(|(p, _)| *p)
    }
}

/// A configuration that passed [`CaConfig::validate`]: the only form the
/// decision functions accept.
#[derive(Debug, Clone)]
pub struct ValidCaConfig {
    config: CaConfig,
    tiers: PriorityTiers,
}

impl ValidCaConfig {
    /// The configuration.
    pub fn config(&self) -> &CaConfig {
        &self.config
    }

    /// The compiled priority tiers.
    pub fn tiers(&self) -> &PriorityTiers {
        &self.tiers
    }

    /// A group's spec by name.
    pub fn group(&self, name: &str) -> Option<&NodeGroupSpec> {
        self.config.node_groups.iter().find(|g| g.name == name)
    }
}

impl CaConfig {
    /// The options in force for `group` (the flags where it has no
    /// override, or is not a group of this config).
    pub fn options_for(&self, group: &str) -> GroupOptions {
        let o = self
            .node_groups
            .iter()
            .find(|g| g.name == group)
            .map(|g| g.autoscaling_options)
            .unwrap_or_default();
        GroupOptions {
            scale_down_utilization_threshold: o
                .scale_down_utilization_threshold
                .unwrap_or(self.scale_down_utilization_threshold),
            scale_down_gpu_utilization_threshold: o
                .scale_down_gpu_utilization_threshold
                .unwrap_or(self.scale_down_gpu_utilization_threshold),
            scale_down_unneeded_time: o
                .scale_down_unneeded_time
                .unwrap_or(self.scale_down_unneeded_time),
            scale_down_unready_time: o
                .scale_down_unready_time
                .unwrap_or(self.scale_down_unready_time),
            ignore_daemonsets_utilization: o
                .ignore_daemonsets_utilization
                .unwrap_or(self.ignore_daemonsets_utilization),
            max_node_provision_time: o
                .max_node_provision_time
                .unwrap_or(self.max_node_provision_time),
        }
    }

    /// Checks the configuration against the region's catalog. `price` is
    /// refused here, as CA refuses it at start-up on AWS.
    pub fn validate(self, catalog: &Catalog) -> Result<ValidCaConfig, CaConfigError> {
        match self
            .expander
            .iter()
            .position(|e| *e == ExpanderKind::Random)
        {
            _ if self.expander.is_empty() => return Err(CaConfigError::NoExpander),
            Some(i) if i + 1 != self.expander.len() => {
                let names: Vec<_> = self.expander.iter().map(|e| e.name()).collect();
                return Err(CaConfigError::RandomNotLast {
                    chain: names.join(","),
                });
            }
            _ => {}
        }
        if self.expander.contains(&ExpanderKind::Price) {
            return Err(CaConfigError::PriceExpanderOnAws);
        }
        let thresholds = self
            .node_groups
            .iter()
            .flat_map(|g| {
                let o = g.autoscaling_options;
                [
                    o.scale_down_utilization_threshold,
                    o.scale_down_gpu_utilization_threshold,
                ]
            })
            .flatten();
        for t in [
            self.scale_down_utilization_threshold,
            self.scale_down_gpu_utilization_threshold,
        ]
        .into_iter()
        .chain(thresholds)
        {
            if !(0.0..=1.0).contains(&t) {
                return Err(CaConfigError::BadThreshold(t.to_string()));
            }
        }
        let region = catalog.region().to_string();
        let mut seen = std::collections::BTreeSet::new();
        for g in &self.node_groups {
            if !seen.insert(g.name.as_str()) {
                return Err(CaConfigError::DuplicateGroup(g.name.clone()));
            }
            if g.instance_types.is_empty() {
                return Err(CaConfigError::NoInstanceTypes(g.name.clone()));
            }
            if g.zones.is_empty() {
                return Err(CaConfigError::NoZones(g.name.clone()));
            }
            for it in &g.instance_types {
                if catalog.get(it).is_none() {
                    return Err(CaConfigError::UnknownInstanceType {
                        group: g.name.clone(),
                        instance_type: it.clone(),
                        region: region.clone(),
                    });
                }
            }
            for z in &g.zones {
                if !catalog.zones().iter().any(|c| c.name == z) {
                    return Err(CaConfigError::UnknownZone {
                        group: g.name.clone(),
                        zone: z.clone(),
                        region: region.clone(),
                    });
                }
            }
            if g.min_size > g.max_size {
                return Err(CaConfigError::MinAboveMax {
                    group: g.name.clone(),
                    min: g.min_size,
                    max: g.max_size,
                });
            }
            if let CapacitySplit::Mixed {
                on_demand_percentage_above_base: p,
                ..
            } = g.capacity
                && p > 100
            {
                return Err(CaConfigError::BadPercentage {
                    group: g.name.clone(),
                    value: p,
                });
            }
        }
        let tiers = PriorityTiers::compile(&self.priorities)?;
        Ok(ValidCaConfig {
            config: self,
            tiers,
        })
    }
}
