//! Reads a variant's `clusterAutoscaler:` block into a [`CaConfig`]: node
//! groups (one per ASG) and CA's flags in camelCase, defaults being CA's.
//! Checks that need no instance-type catalog happen here, each with the
//! position of the node at fault; instance-type names are kept with their
//! positions ([`WrittenName`]) and checked against the catalog by
//! [`prepare`](super::super::prepare).

use std::collections::BTreeMap;

use super::interruptions::WrittenName;
use super::{Keys, Reader, index};
use crate::autoscaler::{
    CaConfig, CaConfigError, CapacitySplit, ExpanderKind, NodeGroupSpec,
    OnDemandAllocationStrategy, SpotAllocationStrategy, TerminationHandler,
    config::{GroupAutoscalingOptions, PriorityTiers},
};
use crate::kube::taints::{Taint, TaintEffect};
use crate::scenario::error::{Problem, ScenarioError};
use crate::scenario::yaml::{Node, Value};
use crate::sim::engine::{StartupFailure, StartupFailureKind};
use crate::time::{SimDuration, SimTime};

/// A Cluster Autoscaler variant as read from the scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterAutoscalerConfig {
    /// The configuration (not yet checked against the catalog).
    pub config: CaConfig,
    /// Every instance type named by a node group, with where it is written.
    pub instance_types: Vec<WrittenName>,
    /// Groups whose launches hang (`startupFailure`), by group name.
    pub startup_failures: BTreeMap<String, StartupFailure>,
}

const CA_KEYS: Keys = Keys {
    valid: &[
        "nodeGroups",
        "expander",
        "priorities",
        "scaleDownEnabled",
        "scaleDownUtilizationThreshold",
        "scaleDownUnneededTime",
        "scaleDownDelayAfterAdd",
        "scaleDownDelayAfterDelete",
        "scaleDownDelayAfterFailure",
        "maxNodeProvisionTime",
        "balanceSimilarNodeGroups",
        "terminationHandler",
        "maxNodesTotal",
        "maxNodesPerScaleUp",
        "maxScaleDownParallelism",
        "maxDrainParallelism",
        "skipNodesWithSystemPods",
        "skipNodesWithLocalStorage",
        "skipNodesWithCustomControllerPods",
        "ignoreDaemonsetsUtilization",
        "newPodScaleUpDelay",
        "enforceNodeGroupMinSize",
        "scaleDownGpuUtilizationThreshold",
        "scaleDownUnreadyTime",
        "expendablePodsPriorityCutoff",
        "enableProvisioningRequests",
        "provisioningRequestInitialBackoffTime",
        "provisioningRequestMaxBackoffTime",
        "okTotalUnreadyCount",
        "maxTotalUnreadyPercentage",
    ],
    reserved: &[],
};

const GROUP_KEYS: Keys = Keys {
    valid: &[
        "name",
        "instanceTypes",
        "capacityType",
        "onDemandBaseCapacity",
        "onDemandPercentageAboveBaseCapacity",
        "spotAllocationStrategy",
        "onDemandAllocationStrategy",
        "zones",
        "minSize",
        "maxSize",
        "labels",
        "taints",
        "autoscalingOptions",
        "startupFailure",
    ],
    reserved: &[],
};

const STARTUP_FAILURE_KEYS: Keys = Keys {
    valid: &["from", "until", "node"],
    reserved: &[],
};
const STARTUP_FAILURE_NODES: &[&str] = &["Unregistered", "NotReady"];

const OPTION_KEYS: Keys = Keys {
    valid: &[
        "scaleDownUtilizationThreshold",
        "scaleDownGpuUtilizationThreshold",
        "scaleDownUnneededTime",
        "scaleDownUnreadyTime",
        "ignoreDaemonSetsUtilization",
        "maxNodeProvisionTime",
    ],
    reserved: &[],
};

const TAINT_KEYS: Keys = Keys {
    valid: &["key", "value", "effect"],
    reserved: &[],
};

const EXPANDERS: &[&str] = &[
    "random",
    "most-pods",
    "least-waste",
    "least-nodes",
    "priority",
    "price",
];
const CAPACITY_TYPES: &[&str] = &["on-demand", "spot", "mixed"];
const ON_DEMAND_ALLOCATION_STRATEGIES: &[&str] = &["prioritized", "lowest-price"];

const ALLOCATION_STRATEGIES: &[&str] = &[
    "lowest-price",
    "capacity-optimized",
    "price-capacity-optimized",
];
const TERMINATION_HANDLERS: &[&str] = &["none", "node-termination-handler", "capacity-rebalance"];
const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// ASG sizes are int32 in the AWS API.
const MAX_SIZE: u64 = i32::MAX as u64;

impl Reader<'_> {
    fn ca_problem(&self, node: &Node, field: &str, err: CaConfigError) -> ScenarioError {
        self.invalid(node.position, field, Problem::ClusterAutoscaler(err))
    }

    /// A string that must be one of `valid`.
    pub(super) fn one_of(
        &self,
        node: &Node,
        field: &str,
        valid: &'static [&'static str],
    ) -> Result<&'static str, ScenarioError> {
        let text = self.string(node, field)?;
        valid.iter().copied().find(|v| *v == text).ok_or_else(|| {
            let problem = Problem::NotOneOf {
                found: text.to_string(),
                valid,
            };
            self.invalid(node.position, field, problem)
        })
    }

    fn flag(&self, node: &Node, field: &str) -> Result<bool, ScenarioError> {
        match node.value {
            Value::Bool(value) => Ok(value),
            _ => Err(self.wrong_type(node, field, "true or false")),
        }
    }

    /// Reads `clusterAutoscaler:`; `region_zones` are the zones a group
    /// may name.
    pub(super) fn cluster_autoscaler(
        &self,
        node: &Node,
        field: &str,
        region: &str,
        region_zones: &[String],
    ) -> Result<ClusterAutoscalerConfig, ScenarioError> {
        let map = self.mapping(node, field, &CA_KEYS)?;
        let mut config = CaConfig::default();
        let mut instance_types = Vec::new();
        let mut startup_failures = BTreeMap::new();
        let groups_node = self.required(&map, "nodeGroups")?;
        let groups_field = map.field("nodeGroups");
        let Value::Seq(items) = &groups_node.value else {
            return Err(self.wrong_type(groups_node, &groups_field, "a list of node groups"));
        };
        if items.is_empty() {
            return Err(self.invalid(groups_node.position, &groups_field, Problem::EmptyList));
        }
        for (i, item) in items.iter().enumerate() {
            let group_field = index(&groups_field, i);
            let group = self.node_group(
                item,
                &group_field,
                region,
                region_zones,
                &mut instance_types,
            )?;
            if config.node_groups.iter().any(|g| g.name == group.name) {
                let err = CaConfigError::DuplicateGroup(group.name);
                return Err(self.ca_problem(item, &group_field, err));
            }
            if let Some(n) = item.get("startupFailure") {
                let failure = self.startup_failure(n, &format!("{group_field}.startupFailure"))?;
                startup_failures.insert(group.name.clone(), failure);
            }
            config.node_groups.push(group);
        }
        if let Some(node) = map.get("expander") {
            let f = map.field("expander");
            // A comma-separated chain, as the flag.
            let text = self.string(node, &f)?;
            let mut chain = Vec::new();
            for name in text.split(',') {
                let kind = ExpanderKind::parse(name).ok_or_else(|| {
                    let problem = Problem::NotOneOf {
                        found: name.trim().to_string(),
                        valid: EXPANDERS,
                    };
                    self.invalid(node.position, &f, problem)
                })?;
                chain.push(kind);
            }
            if chain.contains(&ExpanderKind::Price) {
                return Err(self.ca_problem(node, &f, CaConfigError::PriceExpanderOnAws));
            }
            if let Some(i) = chain.iter().position(|e| *e == ExpanderKind::Random)
                && i + 1 != chain.len()
            {
                let err = CaConfigError::RandomNotLast {
                    chain: text.to_string(),
                };
                return Err(self.ca_problem(node, &f, err));
            }
            config.expander = chain;
        }
        if let Some(node) = map.get("priorities") {
            config.priorities = self.priorities(node, &map.field("priorities"))?;
        }
        let durations: [(&str, &mut crate::time::SimDuration); 9] = [
            (
                "scaleDownUnneededTime",
                &mut config.scale_down_unneeded_time,
            ),
            (
                "scaleDownDelayAfterAdd",
                &mut config.scale_down_delay_after_add,
            ),
            (
                "scaleDownDelayAfterDelete",
                &mut config.scale_down_delay_after_delete,
            ),
            (
                "scaleDownDelayAfterFailure",
                &mut config.scale_down_delay_after_failure,
            ),
            ("maxNodeProvisionTime", &mut config.max_node_provision_time),
            ("newPodScaleUpDelay", &mut config.new_pod_scale_up_delay),
            ("scaleDownUnreadyTime", &mut config.scale_down_unready_time),
            (
                "provisioningRequestInitialBackoffTime",
                &mut config.provisioning_request_initial_backoff,
            ),
            (
                "provisioningRequestMaxBackoffTime",
                &mut config.provisioning_request_max_backoff,
            ),
        ];
        for (key, slot) in durations {
            if let Some(node) = map.get(key) {
                *slot = self.duration(node, &map.field(key))?;
            }
        }
        let flags: [(&str, &mut bool); 8] = [
            ("scaleDownEnabled", &mut config.scale_down_enabled),
            (
                "balanceSimilarNodeGroups",
                &mut config.balance_similar_node_groups,
            ),
            (
                "skipNodesWithSystemPods",
                &mut config.skip_nodes_with_system_pods,
            ),
            (
                "skipNodesWithLocalStorage",
                &mut config.skip_nodes_with_local_storage,
            ),
            (
                "skipNodesWithCustomControllerPods",
                &mut config.skip_nodes_with_custom_controller_pods,
            ),
            (
                "ignoreDaemonsetsUtilization",
                &mut config.ignore_daemonsets_utilization,
            ),
            (
                "enforceNodeGroupMinSize",
                &mut config.enforce_node_group_min_size,
            ),
            (
                "enableProvisioningRequests",
                &mut config.enable_provisioning_requests,
            ),
        ];
        for (key, slot) in flags {
            if let Some(node) = map.get(key) {
                *slot = self.flag(node, &map.field(key))?;
            }
        }
        let counts: [(&str, &mut u32); 5] = [
            ("okTotalUnreadyCount", &mut config.ok_total_unready_count),
            ("maxNodesTotal", &mut config.max_nodes_total),
            ("maxNodesPerScaleUp", &mut config.max_nodes_per_scale_up),
            (
                "maxScaleDownParallelism",
                &mut config.max_scale_down_parallelism,
            ),
            ("maxDrainParallelism", &mut config.max_drain_parallelism),
        ];
        for (key, slot) in counts {
            if let Some(node) = map.get(key) {
                *slot = self.unsigned(node, &map.field(key), MAX_SIZE)? as u32;
            }
        }
        if let Some(node) = map.get("scaleDownUtilizationThreshold") {
            config.scale_down_utilization_threshold =
                self.threshold(node, &map.field("scaleDownUtilizationThreshold"))?;
        }
        if let Some(node) = map.get("expendablePodsPriorityCutoff") {
            let f = map.field("expendablePodsPriorityCutoff");
            config.expendable_pods_priority_cutoff = match node.value {
                Value::Int(v) => i32::try_from(v)
                    .map_err(|_| self.wrong_type(node, &f, "a pod priority (a 32-bit integer)"))?,
                _ => return Err(self.wrong_type(node, &f, "a pod priority (a 32-bit integer)")),
            };
        }
        if let Some(node) = map.get("scaleDownGpuUtilizationThreshold") {
            config.scale_down_gpu_utilization_threshold =
                self.threshold(node, &map.field("scaleDownGpuUtilizationThreshold"))?;
        }
        if let Some(node) = map.get("maxTotalUnreadyPercentage") {
            let f = map.field("maxTotalUnreadyPercentage");
            config.max_total_unready_percentage = self.unsigned(node, &f, 100)? as f64;
        }
        if let Some(node) = map.get("terminationHandler") {
            config.termination_handler =
                match self.one_of(node, &map.field("terminationHandler"), TERMINATION_HANDLERS)? {
                    "node-termination-handler" => TerminationHandler::NodeTerminationHandler,
                    "capacity-rebalance" => TerminationHandler::CapacityRebalance,
                    _ => TerminationHandler::None,
                };
        }
        Ok(ClusterAutoscalerConfig {
            config,
            instance_types,
            startup_failures,
        })
    }

    /// A group's `startupFailure`: the instances it launches from `from`
    /// (default the start) until `until` (default the end) never become
    /// Ready nodes.
    fn startup_failure(&self, node: &Node, field: &str) -> Result<StartupFailure, ScenarioError> {
        let map = self.mapping(node, field, &STARTUP_FAILURE_KEYS)?;
        self.startup_failure_window(&map)
    }

    /// `from`, `until` and `node` of a startup failure (a node group's, or
    /// an entry of a Karpenter variant's `startupFailures`).
    pub(in crate::scenario) fn startup_failure_window(
        &self,
        map: &super::Mapping<'_>,
    ) -> Result<StartupFailure, ScenarioError> {
        let from = match map.get("from") {
            Some(n) => self.duration(n, &map.field("from"))?,
            None => SimDuration::ZERO,
        };
        let until = match map.get("until") {
            Some(n) => {
                let until = self.duration(n, &map.field("until"))?;
                if until <= from {
                    let problem = Problem::EmptyWindow {
                        from: map.get("from").map_or("0".to_string(), |f| self.raw(f)),
                        until: self.raw(n),
                    };
                    return Err(self.invalid(n.position, &map.field("until"), problem));
                }
                Some(SimTime::ZERO + until)
            }
            None => None,
        };
        let kind_node = self.required(map, "node")?;
        let kind = match self.one_of(kind_node, &map.field("node"), STARTUP_FAILURE_NODES)? {
            "NotReady" => StartupFailureKind::NotReady,
            _ => StartupFailureKind::Unregistered,
        };
        Ok(StartupFailure {
            from: SimTime::ZERO + from,
            until,
            kind,
        })
    }

    fn node_group(
        &self,
        node: &Node,
        field: &str,
        region: &str,
        region_zones: &[String],
        instance_types: &mut Vec<WrittenName>,
    ) -> Result<NodeGroupSpec, ScenarioError> {
        let map = self.mapping(node, field, &GROUP_KEYS)?;
        let name = self.string(self.required(&map, "name")?, &map.field("name"))?;
        let types_node = self.required(&map, "instanceTypes")?;
        let types = self.distinct_names(types_node, &map.field("instanceTypes"))?;
        for (type_name, type_field, position) in &types {
            instance_types.push(WrittenName {
                name: type_name.clone(),
                field: type_field.clone(),
                position: *position,
            });
        }
        let zones = match map.get("zones") {
            Some(zones_node) => {
                let zones = self.distinct_names(zones_node, &map.field("zones"))?;
                for (zone, zone_field, position) in &zones {
                    if !region_zones.contains(zone) {
                        let err = CaConfigError::UnknownZone {
                            group: name.to_string(),
                            zone: zone.clone(),
                            region: region.to_string(),
                        };
                        let problem = Problem::ClusterAutoscaler(err);
                        return Err(self.invalid(*position, zone_field, problem));
                    }
                }
                zones.into_iter().map(|(z, _, _)| z).collect()
            }
            None => region_zones.to_vec(),
        };
        let size = |key: &str, default: u64| -> Result<u32, ScenarioError> {
            match map.get(key) {
                Some(n) => Ok(self.unsigned(n, &map.field(key), MAX_SIZE)? as u32),
                None => Ok(default as u32),
            }
        };
        let min_size = size("minSize", 0)?;
        let max_node = self.required(&map, "maxSize")?;
        let max_size = self.unsigned(max_node, &map.field("maxSize"), MAX_SIZE)? as u32;
        if min_size > max_size {
            let err = CaConfigError::MinAboveMax {
                group: name.to_string(),
                min: min_size,
                max: max_size,
            };
            return Err(self.ca_problem(max_node, &map.field("maxSize"), err));
        }
        let capacity_type = match map.get("capacityType") {
            Some(n) => self.one_of(n, &map.field("capacityType"), CAPACITY_TYPES)?,
            None => "on-demand",
        };
        let mixed_keys = [
            "onDemandBaseCapacity",
            "onDemandPercentageAboveBaseCapacity",
        ];
        if capacity_type != "mixed"
            && let Some((key, key_node, _)) = map.present(&mixed_keys).first()
        {
            let problem = Problem::Conflict {
                first: key.to_string(),
                second: format!("capacityType: {capacity_type}"),
            };
            return Err(self.invalid(key_node.position, field, problem));
        }
        let capacity = match capacity_type {
            "spot" => CapacitySplit::Spot,
            "mixed" => {
                let pct_key = "onDemandPercentageAboveBaseCapacity";
                let pct = match map.get(pct_key) {
                    Some(n) => self.unsigned(n, &map.field(pct_key), 100)? as u32,
                    None => 100,
                };
                CapacitySplit::Mixed {
                    on_demand_base_capacity: size("onDemandBaseCapacity", 0)?,
                    on_demand_percentage_above_base: pct,
                }
            }
            _ => CapacitySplit::OnDemand,
        };
        let spot_allocation_strategy = match map.get("spotAllocationStrategy") {
            Some(n) => match self.one_of(
                n,
                &map.field("spotAllocationStrategy"),
                ALLOCATION_STRATEGIES,
            )? {
                "lowest-price" => SpotAllocationStrategy::LowestPrice,
                "capacity-optimized" => SpotAllocationStrategy::CapacityOptimized,
                _ => SpotAllocationStrategy::PriceCapacityOptimized,
            },
            None => SpotAllocationStrategy::default(),
        };
        let on_demand_allocation_strategy = match map.get("onDemandAllocationStrategy") {
            Some(n) => match self.one_of(
                n,
                &map.field("onDemandAllocationStrategy"),
                ON_DEMAND_ALLOCATION_STRATEGIES,
            )? {
                "lowest-price" => OnDemandAllocationStrategy::LowestPrice,
                _ => OnDemandAllocationStrategy::Prioritized,
            },
            None => OnDemandAllocationStrategy::default(),
        };
        let mut labels = BTreeMap::new();
        if let Some(n) = map.get("labels") {
            let f = map.field("labels");
            let Value::Map(pairs) = &n.value else {
                return Err(self.wrong_type(n, &f, "a mapping of label keys to values"));
            };
            for (key, value) in pairs {
                let key = self.string(key, &f)?;
                let label_field = format!("{f}.{key}");
                if matches!(value.value, Value::Seq(_) | Value::Map(_)) {
                    return Err(self.wrong_type(value, &label_field, "a string"));
                }
                labels.insert(key.to_string(), self.written(value));
            }
        }
        let mut taints = Vec::new();
        if let Some(n) = map.get("taints") {
            let f = map.field("taints");
            let Value::Seq(items) = &n.value else {
                return Err(self.wrong_type(n, &f, "a list of taints"));
            };
            for (i, item) in items.iter().enumerate() {
                let taint_field = index(&f, i);
                let t = self.mapping(item, &taint_field, &TAINT_KEYS)?;
                let key = self.string(self.required(&t, "key")?, &t.field("key"))?;
                let value = match t.get("value") {
                    Some(v) => self.written(v),
                    None => String::new(),
                };
                let effect_node = self.required(&t, "effect")?;
                let effect = self.one_of(effect_node, &t.field("effect"), EFFECTS)?;
                let effect = TaintEffect::parse(effect).unwrap_or(TaintEffect::NoSchedule);
                taints.push(Taint::new(key, value, effect));
            }
        }
        let autoscaling_options = match map.get("autoscalingOptions") {
            Some(n) => self.group_options(n, &map.field("autoscalingOptions"))?,
            None => GroupAutoscalingOptions::default(),
        };
        Ok(NodeGroupSpec {
            name: name.to_string(),
            instance_types: types.into_iter().map(|(t, _, _)| t).collect(),
            capacity,
            spot_allocation_strategy,
            on_demand_allocation_strategy,
            zones,
            min_size,
            max_size,
            labels,
            taints,
            autoscaling_options,
        })
    }

    /// A group's `autoscalingOptions` (the ASG's
    /// `node-template/autoscaling-options/*` tags).
    fn group_options(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<GroupAutoscalingOptions, ScenarioError> {
        let map = self.mapping(node, field, &OPTION_KEYS)?;
        let mut options = GroupAutoscalingOptions::default();
        for (key, slot) in [
            (
                "scaleDownUtilizationThreshold",
                &mut options.scale_down_utilization_threshold,
            ),
            (
                "scaleDownGpuUtilizationThreshold",
                &mut options.scale_down_gpu_utilization_threshold,
            ),
        ] {
            if let Some(n) = map.get(key) {
                *slot = Some(self.threshold(n, &map.field(key))?);
            }
        }
        for (key, slot) in [
            (
                "scaleDownUnneededTime",
                &mut options.scale_down_unneeded_time,
            ),
            ("scaleDownUnreadyTime", &mut options.scale_down_unready_time),
            ("maxNodeProvisionTime", &mut options.max_node_provision_time),
        ] {
            if let Some(n) = map.get(key) {
                *slot = Some(self.duration(n, &map.field(key))?);
            }
        }
        if let Some(n) = map.get("ignoreDaemonSetsUtilization") {
            options.ignore_daemonsets_utilization =
                Some(self.flag(n, &map.field("ignoreDaemonSetsUtilization"))?);
        }
        Ok(options)
    }

    /// A utilization threshold: a number from 0 to 1.
    fn threshold(&self, node: &Node, field: &str) -> Result<f64, ScenarioError> {
        let value = match node.value {
            Value::Int(v) => v as f64,
            Value::Float(v) => v,
            _ => return Err(self.wrong_type(node, field, "a number from 0 to 1")),
        };
        if !(0.0..=1.0).contains(&value) {
            let err = CaConfigError::BadThreshold(self.raw(node));
            return Err(self.ca_problem(node, field, err));
        }
        Ok(value)
    }

    /// A non-empty list of distinct strings, each with field and position.
    fn distinct_names(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<Vec<(String, String, crate::scenario::Position)>, ScenarioError> {
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, field, "a list of names"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, field, Problem::EmptyList));
        }
        let mut out: Vec<(String, String, crate::scenario::Position)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_field = index(field, i);
            let name = self.string(item, &item_field)?;
            if out.iter().any(|(seen, _, _)| seen == name) {
                let problem = Problem::Repeated {
                    name: name.to_string(),
                };
                return Err(self.invalid(item.position, &item_field, problem));
            }
            out.push((name.to_string(), item_field, item.position));
        }
        Ok(out)
    }

    /// `priorities: {10: [".*spot.*"], 1: [".*"]}`; regexes are compiled
    /// here so a bad one points at its tier.
    fn priorities(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<BTreeMap<i32, Vec<String>>, ScenarioError> {
        let Value::Map(pairs) = &node.value else {
            return Err(self.wrong_type(node, field, "a mapping of priorities to regex lists"));
        };
        let mut out = BTreeMap::new();
        for (key, value) in pairs {
            let priority = match key.value {
                Value::Int(v) => i32::try_from(v).ok(),
                Value::Str(ref s) => s.trim().parse::<i32>().ok(),
                _ => None,
            };
            let Some(priority) = priority else {
                return Err(self.wrong_type(key, field, "a whole-number priority"));
            };
            let tier_field = format!("{field}.{priority}");
            let patterns: Vec<String> = match &value.value {
                Value::Str(s) => vec![s.clone()],
                Value::Seq(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        self.string(item, &index(&tier_field, i))
                            .map(str::to_string)
                    })
                    .collect::<Result<_, _>>()?,
                _ => return Err(self.wrong_type(value, &tier_field, "a list of regexes")),
            };
            let single: BTreeMap<i32, Vec<String>> = [(priority, patterns.clone())].into();
            PriorityTiers::compile(&single).map_err(|e| self.ca_problem(value, &tier_field, e))?;
            out.entry(priority)
                .or_insert_with(Vec::new)
                .extend(patterns);
        }
        Ok(out)
    }
}
