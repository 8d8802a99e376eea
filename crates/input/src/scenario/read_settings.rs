//! A Karpenter variant's `settings:` block: the operator settings of core
//! pkg/operator/options/options.go under their upstream names, with their
//! defaults. Feature gates karpsim does not simulate are accepted at their
//! upstream default and refused at any other value, so a scenario never
//! silently runs something other than what it says.

use super::super::KarpenterSettings;
use super::super::error::Problem;
use super::{Keys, Node, Reader, ScenarioError, Value};
use crate::karpenter::provisioning::{MinValuesPolicy, PreferencePolicy};

const SETTINGS_KEYS: Keys = Keys {
    valid: &[
        "featureGates",
        "batchIdleDuration",
        "batchMaxDuration",
        "minValuesPolicy",
        "preferencePolicy",
    ],
    reserved: &[],
};

/// Upstream's `FEATURE_GATES` names (default
/// `NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false`).
const GATE_KEYS: Keys = Keys {
    valid: &[
        "SpotToSpotConsolidation",
        "NodeOverlay",
        "NodeRepair",
        "ReservedCapacity",
        "StaticCapacity",
        "CapacityBuffer",
    ],
    reserved: &[],
};

/// Gates accepted only at their upstream default: `(name, default)`.
const UNMODELLED_GATES: &[(&str, bool)] = &[("CapacityBuffer", false)];

impl Reader<'_> {
    pub(super) fn karpenter_settings(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<KarpenterSettings, ScenarioError> {
        let map = self.mapping(node, field, &SETTINGS_KEYS)?;
        let mut settings = KarpenterSettings::default();
        if let Some(gates) = map.get("featureGates") {
            let gates_field = map.field("featureGates");
            let gates = self.mapping(gates, &gates_field, &GATE_KEYS)?;
            for (key, _, value) in &gates.entries {
                let field = gates.field(key);
                let on = self.gate(value, &field)?;
                match *key {
                    "SpotToSpotConsolidation" => settings.spot_to_spot_consolidation = on,
                    "NodeOverlay" => settings.node_overlay = on,
                    "ReservedCapacity" => settings.reserved_capacity = on,
                    "StaticCapacity" => settings.static_capacity = on,
                    "NodeRepair" => settings.node_repair = on,
                    other => {
                        let (setting, default) = UNMODELLED_GATES
                            .iter()
                            .find(|(name, _)| *name == other)
                            .copied()
                            .expect("GATE_KEYS lists only modelled and unmodelled gates");
                        if on != default {
                            let problem = Problem::NotModelledYet {
                                setting,
                                value: on.to_string(),
                                default: if default { "true" } else { "false" },
                            };
                            return Err(self.invalid(value.position, &field, problem));
                        }
                    }
                }
            }
        }
        if let Some(value) = map.get("batchIdleDuration") {
            settings.batch_idle_duration =
                self.settings_duration(value, &map.field("batchIdleDuration"))?;
        }
        if let Some(value) = map.get("batchMaxDuration") {
            settings.batch_max_duration =
                self.settings_duration(value, &map.field("batchMaxDuration"))?;
        }
        if let Some(value) = map.get("minValuesPolicy") {
            let field = map.field("minValuesPolicy");
            settings.scheduling.min_values =
                match self.one_of(value, &field, &["Strict", "BestEffort"])? {
                    "Strict" => MinValuesPolicy::Strict,
                    _ => MinValuesPolicy::BestEffort,
                };
        }
        if let Some(value) = map.get("preferencePolicy") {
            let field = map.field("preferencePolicy");
            settings.scheduling.preference =
                match self.one_of(value, &field, &["Respect", "Ignore"])? {
                    "Respect" => PreferencePolicy::Respect,
                    _ => PreferencePolicy::Ignore,
                };
        }
        Ok(settings)
    }

    fn gate(&self, node: &Node, field: &str) -> Result<bool, ScenarioError> {
        match node.value {
            Value::Bool(on) => Ok(on),
            _ => Err(self.wrong_type(node, field, "true or false")),
        }
    }

    fn settings_duration(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<crate::sim::SimDuration, ScenarioError> {
        let duration = self.duration(node, field)?;
        if duration == crate::sim::SimDuration::ZERO {
            return Err(self.invalid(node.position, field, Problem::NotPositive));
        }
        Ok(duration)
    }
}
