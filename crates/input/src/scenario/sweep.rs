//! Sweep files: one scenario run under many configurations and seeds.
//!
//! ```yaml
//! sweep: consolidate-after           # name (report folder, Job names)
//! scenario: ../consolidation-day.yaml   # relative to the sweep file
//! seeds: {from: 1, to: 20}           # or a list: [1, 5, 9]
//! nodePools:                         # optional: one configuration per file
//!   - ../nodepools/shop-consolidating.yaml
//! vary:                              # optional: a product of settings
//!   - field: spec.disruption.consolidateAfter
//!     values: [30s, 5m, 1h]
//!   - field: spec.disruption.budgets[0].nodes
//!     values: ["10%", "1"]
//! ```
//!
//! Without `nodePools`, the scenario's own variants are the base
//! configurations. Each `vary` entry sets one field of every NodePool of a
//! configuration, in upstream's spelling (see
//! [`crate::nodepools::edit`]); a value Karpenter would refuse makes the
//! runs of that configuration fail (each reported), not the sweep.
//!
//! # Enumeration
//!
//! Configurations: for each base configuration in file order, every
//! combination of the `vary` values, the first `vary` entry changing
//! slowest and the last fastest, values in the order written. They are
//! numbered from 1 (`c01`, `c02`, …, as many digits as the largest
//! number needs, at least two). Runs: for each configuration in that
//! order, one run per seed in the order of `seeds`; run `i` (from 0) is
//! configuration `i / seeds`, seed `i % seeds`, and its id is
//! `<configuration id>-s<seed>` (`c03-s7`). Shard `I` of `N` (from 0)
//! takes the runs whose index is `I` modulo `N`, so every shard gets a
//! share of every configuration.

use std::path::{Path, PathBuf};

use super::error::{Position, ScenarioError};
use super::limits::MAX_SWEEP_RUNS;
use super::nodepool_sets::variant_names;
use super::{KarpenterConfig, Provisioner, Scenario, Variant};
use crate::nodepools::edit::{FieldPath, NodePoolEdit};
use crate::yaml::Node;

/// A validated sweep file.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepFile {
    /// `sweep`: the sweep's name (a report name).
    pub name: String,
    /// Absolute path of the sweep file.
    pub source: PathBuf,
    /// The scenario file (absolute).
    pub scenario: PathBuf,
    /// The seeds, in order, without repeats.
    pub seeds: Vec<u64>,
    /// `nodePools`: one base configuration per file (absolute path and the
    /// path as written); empty for the scenario's own variants.
    pub node_pools: Vec<WrittenPath>,
    /// `vary`, in file order.
    pub vary: Vec<Vary>,
}

/// A path as resolved and as written in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenPath {
    /// Absolute.
    pub path: PathBuf,
    /// As written (relative to the sweep file).
    pub written: String,
}

/// One `vary` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Vary {
    /// The NodePool field.
    pub field: FieldPath,
    /// The values, in order, without repeats.
    pub values: Vec<VaryValue>,
}

/// One value of a `vary` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct VaryValue {
    /// The value as written (a string's content, other values' text).
    pub text: String,
    /// The value as a YAML tree.
    pub node: Node,
    /// Where it is written in the sweep file.
    pub position: Position,
}

/// One field set to one value in a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The field, as written in `vary`.
    pub field: String,
    /// The value, as written.
    pub value: String,
}

/// One configuration of a sweep: a base configuration with one value of
/// each `vary` field.
#[derive(Debug, Clone, PartialEq)]
pub struct Configuration {
    /// `c01`, `c02`, … (see the module docs).
    pub id: String,
    /// The base configuration's name (the NodePool file's stem or the
    /// scenario variant's name).
    pub base: String,
    /// The NodePool file as written in the sweep, for a `nodePools` base.
    pub node_pools: Option<String>,
    /// The settings, in `vary` order.
    pub settings: Vec<Setting>,
    /// The base and the settings on one line:
    /// `shop-consolidating consolidateAfter=30s nodes=10%`.
    pub label: String,
    /// The variant to prepare: the base's, with the settings as NodePool
    /// edits; named after the base.
    pub variant: Variant,
}

/// One run of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepRun {
    /// Its place in the enumeration, from 0.
    pub index: usize,
    /// Index into [`SweepPlan::configurations`].
    pub configuration: usize,
    /// The seed.
    pub seed: u64,
}

/// Every configuration and run of a sweep, in enumeration order.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    /// The configurations.
    pub configurations: Vec<Configuration>,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
}

/// Why a sweep cannot be enumerated over its scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SweepError {
    /// `vary` over a Cluster Autoscaler variant, which has no NodePools.
    #[error(
        "{file}: vary sets NodePool fields, but variant {variant} of the scenario runs the Cluster Autoscaler (give nodePools files, or a scenario whose variants are Karpenter's)"
    )]
    VaryWithoutNodePools {
        /// The sweep file.
        file: String,
        /// The variant.
        variant: String,
    },
    /// More runs than one sweep holds.
    #[error(
        "{file}: {configurations} configurations × {seeds} seeds = {runs} runs is over the limit of {limit} runs per sweep (see Limits in scenarios/README.md)"
    )]
    TooManyRuns {
        /// The sweep file.
        file: String,
        /// Configurations.
        configurations: u64,
        /// Seeds.
        seeds: u64,
        /// Their product.
        runs: u64,
        /// [`MAX_SWEEP_RUNS`].
        limit: u64,
    },
}

impl SweepFile {
    /// Reads and validates the sweep file at `path` (errors name it as
    /// given). The scenario file must exist; it is read by the caller.
    pub fn load(path: &Path) -> Result<SweepFile, ScenarioError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|err| ScenarioError::ReadSweep {
            file: file.clone(),
            reason: err.to_string(),
        })?;
        let text = crate::yaml::utf8_text(&bytes).map_err(|err| ScenarioError::Yaml {
            file: file.clone(),
            position: err.position,
            message: err.to_string(),
        })?;
        super::read::read_sweep(text, path)
    }

    /// Parses `text` as the content of the sweep file at `path`.
    pub fn parse(text: &str, path: &Path) -> Result<SweepFile, ScenarioError> {
        super::read::read_sweep(text, path)
    }

    /// The configurations and runs over `scenario` (the sweep's scenario,
    /// read with its variants unless `nodePools` replaces them).
    pub fn plan(&self, scenario: &Scenario) -> Result<SweepPlan, SweepError> {
        let file = self.source.display().to_string();
        let bases: Vec<(Variant, Option<String>)> = if self.node_pools.is_empty() {
            scenario
                .variants
                .iter()
                .map(|v| (v.clone(), None))
                .collect()
        } else {
            let written: Vec<PathBuf> = self
                .node_pools
                .iter()
                .map(|p| PathBuf::from(&p.written))
                .collect();
            variant_names(&written)
                .into_iter()
                .zip(&self.node_pools)
                .map(|(name, file)| {
                    let variant = Variant {
                        name,
                        provisioner: Provisioner::Karpenter(KarpenterConfig {
                            node_pools: vec![file.path.clone()],
                            settings: Default::default(),
                            startup_failures: Vec::new(),
                            node_pool_edits: Vec::new(),
                        }),
                    };
                    (variant, Some(file.written.clone()))
                })
                .collect()
        };
        if !self.vary.is_empty()
            && let Some((variant, _)) = bases
                .iter()
                .find(|(v, _)| matches!(v.provisioner, Provisioner::ClusterAutoscaler(_)))
        {
            return Err(SweepError::VaryWithoutNodePools {
                file,
                variant: variant.name.clone(),
            });
        }
        let combinations: u64 = self.vary.iter().map(|v| v.values.len() as u64).product();
        let configurations = bases.len() as u64 * combinations;
        let seeds = self.seeds.len() as u64;
        let runs = configurations.saturating_mul(seeds);
        if runs > MAX_SWEEP_RUNS {
            return Err(SweepError::TooManyRuns {
                file,
                configurations,
                seeds,
                runs,
                limit: MAX_SWEEP_RUNS,
            });
        }
        let width = configurations.to_string().len().max(2);
        let short_names = self.short_names();
        let mut out = Vec::new();
        for (base, node_pools) in &bases {
            for combination in 0..combinations {
                // Odometer order: the last entry changes fastest.
                let mut picks = vec![0usize; self.vary.len()];
                let mut rest = combination;
                for (slot, vary) in self.vary.iter().enumerate().rev() {
                    let count = vary.values.len() as u64;
                    picks[slot] = (rest % count) as usize;
                    rest /= count;
                }
                let chosen: Vec<(&Vary, &VaryValue)> = self
                    .vary
                    .iter()
                    .zip(&picks)
                    .map(|(vary, pick)| (vary, &vary.values[*pick]))
                    .collect();
                let mut variant = base.clone();
                if let Provisioner::Karpenter(config) = &mut variant.provisioner {
                    config.node_pool_edits = chosen
                        .iter()
                        .map(|(vary, value)| NodePoolEdit {
                            field: vary.field.clone(),
                            value: value.node.clone(),
                        })
                        .collect();
                }
                let settings: Vec<Setting> = chosen
                    .iter()
                    .map(|(vary, value)| Setting {
                        field: vary.field.to_string(),
                        value: value.text.clone(),
                    })
                    .collect();
                let mut label = base.name.clone();
                for ((_, value), short) in chosen.iter().zip(&short_names) {
                    label.push_str(&format!(" {short}={}", value.text));
                }
                out.push(Configuration {
                    id: format!("c{:0width$}", out.len() + 1),
                    base: base.name.clone(),
                    node_pools: node_pools.clone(),
                    settings,
                    label,
                    variant,
                });
            }
        }
        Ok(SweepPlan {
            configurations: out,
            seeds: self.seeds.clone(),
        })
    }

    /// The name of each `vary` field in labels: its last key (with the
    /// indices after it), or the whole path below `spec.` when two fields
    /// share that.
    fn short_names(&self) -> Vec<String> {
        let leaves: Vec<String> = self.vary.iter().map(|v| v.field.leaf()).collect();
        self.vary
            .iter()
            .zip(&leaves)
            .map(|(vary, leaf)| {
                if leaves.iter().filter(|other| *other == leaf).count() > 1 {
                    let text = vary.field.as_str();
                    text.strip_prefix("spec.").unwrap_or(text).to_string()
                } else {
                    leaf.clone()
                }
            })
            .collect()
    }
}

impl SweepPlan {
    /// How many runs the sweep has.
    pub fn run_count(&self) -> usize {
        self.configurations.len() * self.seeds.len()
    }

    /// Run `index` of the enumeration (see the module docs).
    pub fn run(&self, index: usize) -> SweepRun {
        let seeds = self.seeds.len().max(1);
        SweepRun {
            index,
            configuration: index / seeds,
            seed: self.seeds[index % seeds],
        }
    }

    /// Every run, in order.
    pub fn runs(&self) -> impl Iterator<Item = SweepRun> + '_ {
        (0..self.run_count()).map(|index| self.run(index))
    }

    /// The id of `run`: `<configuration id>-s<seed>`.
    pub fn run_id(&self, run: SweepRun) -> String {
        format!(
            "{}-s{}",
            self.configurations[run.configuration].id, run.seed
        )
    }
}

/// Shard `index` of `count` (from 0): the runs whose index is `index`
/// modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// From 0 to `count - 1`.
    pub index: usize,
    /// At least 1.
    pub count: usize,
}

/// Why a shard cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N`.
    #[error("invalid shard {text:?}: write I/N, shard I (from 0) of N, such as 0/4")]
    Syntax {
        /// As given.
        text: String,
    },
    /// `N` is 0 or `I` is not below `N`.
    #[error("invalid shard {index}/{count}: the index goes from 0 to {}", count.saturating_sub(1))]
    OutOfRange {
        /// `I`.
        index: usize,
        /// `N`.
        count: usize,
    },
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`, checked.
    pub fn new(index: usize, count: usize) -> Result<Shard, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// Parses `I/N`.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax {
            text: text.to_string(),
        };
        let (index, count) = text.split_once('/').ok_or_else(syntax)?;
        let number = |part: &str| -> Result<usize, ShardError> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(syntax());
            }
            part.parse().map_err(|_| syntax())
        };
        Shard::new(number(index)?, number(count)?)
    }

    /// Whether run `index` belongs to this shard.
    pub fn contains(self, index: usize) -> bool {
        index % self.count == self.index
    }
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
