//! The schema checks of a sweep file (see [`crate::scenario::sweep`]),
//! with the scenario reader's rules: every key checked, errors naming
//! file, line, column and field.

use std::path::Path;

use super::super::error::{Position, Problem, ScenarioError, SweepProblem};
use super::super::limits::MAX_SWEEP_RUNS;
use super::super::names::check_report_name;
use super::super::sweep::{SweepFile, Vary, VaryValue, WrittenPath};
use super::{Keys, Node, Reader, Value, index, yaml};
use crate::nodepools::edit::FieldPath;

const SWEEP_KEYS: Keys = Keys {
    valid: &["sweep", "scenario", "seeds", "nodePools", "vary"],
    reserved: &[],
};

const SEED_RANGE_KEYS: Keys = Keys {
    valid: &["from", "to"],
    reserved: &[],
};

const VARY_KEYS: Keys = Keys {
    valid: &["field", "values"],
    reserved: &[],
};

/// Reads `text`, the content of the sweep file at `path`.
pub(in crate::scenario) fn read_sweep(text: &str, path: &Path) -> Result<SweepFile, ScenarioError> {
    let file = path.display().to_string();
    let source = std::path::absolute(path).map_err(|err| ScenarioError::ReadSweep {
        file: file.clone(),
        reason: format!("cannot resolve the path: {err}"),
    })?;
    let base_dir = source.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = yaml::parse_document(text).map_err(|err| ScenarioError::Yaml {
        file: file.clone(),
        position: err.position,
        message: err.message,
    })?;
    let reader = Reader {
        file,
        text,
        base_dir,
        variants_required: true,
        initial_state_given: std::cell::Cell::new(false),
    };
    match root {
        Some(root) => reader.sweep(&root, source),
        None => Err(reader.invalid(Position::START, "", SweepProblem::Empty.into())),
    }
}

impl Reader<'_> {
    fn sweep(&self, root: &Node, source: std::path::PathBuf) -> Result<SweepFile, ScenarioError> {
        let top = self.mapping(root, "", &SWEEP_KEYS)?;
        let name = self
            .name(self.required(&top, "sweep")?, "sweep", check_report_name)?
            .to_string();
        let scenario = self.file(self.required(&top, "scenario")?, "scenario")?;
        let seeds = self.seeds(self.required(&top, "seeds")?)?;
        let node_pools = match top.get("nodePools") {
            Some(node) => {
                let paths = self.files(node, "nodePools")?;
                let written: Vec<String> = match &node.value {
                    Value::Seq(items) => items.iter().map(|item| self.written(item)).collect(),
                    _ => vec![self.written(node)],
                };
                paths
                    .into_iter()
                    .zip(written)
                    .map(|(path, written)| WrittenPath { path, written })
                    .collect()
            }
            None => Vec::new(),
        };
        let vary = match top.get("vary") {
            Some(node) => self.vary(node)?,
            None => Vec::new(),
        };
        Ok(SweepFile {
            name,
            source,
            scenario,
            seeds,
            node_pools,
            vary,
        })
    }

    /// `{from, to}` (both included) or a non-empty list without repeats.
    fn seeds(&self, node: &Node) -> Result<Vec<u64>, ScenarioError> {
        const FIELD: &str = "seeds";
        let too_many = |count: u64| {
            let problem = Problem::OverLimit {
                found: format!("{count} seeds"),
                limit: format!("{MAX_SWEEP_RUNS} runs per sweep"),
            };
            self.invalid(node.position, FIELD, problem)
        };
        match &node.value {
            Value::Map(_) => {
                let map = self.mapping(node, FIELD, &SEED_RANGE_KEYS)?;
                let from_node = self.required(&map, "from")?;
                let to_node = self.required(&map, "to")?;
                let from = self.unsigned(from_node, &map.field("from"), u64::MAX)?;
                let to = self.unsigned(to_node, &map.field("to"), u64::MAX)?;
                if to < from {
                    let problem = SweepProblem::SeedRange { from, to };
                    return Err(self.invalid(to_node.position, &map.field("to"), problem.into()));
                }
                let count = (to - from).saturating_add(1);
                if count > MAX_SWEEP_RUNS {
                    return Err(too_many(count));
                }
                Ok((from..=to).collect())
            }
            Value::Seq(items) if items.is_empty() => {
                Err(self.invalid(node.position, FIELD, Problem::EmptyList))
            }
            Value::Seq(items) => {
                if items.len() as u64 > MAX_SWEEP_RUNS {
                    return Err(too_many(items.len() as u64));
                }
                let mut seeds = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let field = index(FIELD, i);
                    let seed = self.unsigned(item, &field, u64::MAX)?;
                    if seeds.contains(&seed) {
                        let problem = Problem::Repeated {
                            name: seed.to_string(),
                        };
                        return Err(self.invalid(item.position, &field, problem));
                    }
                    seeds.push(seed);
                }
                Ok(seeds)
            }
            _ => Err(self.wrong_type(node, FIELD, "{from: N, to: M} or a list of seeds")),
        }
    }

    fn vary(&self, node: &Node) -> Result<Vec<Vary>, ScenarioError> {
        const FIELD: &str = "vary";
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, FIELD, "a list of {field, values} entries"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, FIELD, Problem::EmptyList));
        }
        let mut out: Vec<Vary> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let entry_field = index(FIELD, i);
            let map = self.mapping(item, &entry_field, &VARY_KEYS)?;
            let field_node = self.required(&map, "field")?;
            let field_field = map.field("field");
            let text = self.string(field_node, &field_field)?;
            let path = FieldPath::parse(text).map_err(|err| {
                self.invalid(
                    field_node.position,
                    &field_field,
                    SweepProblem::from(err).into(),
                )
            })?;
            if !text.starts_with("spec.") {
                let problem = SweepProblem::NotUnderSpec {
                    field: text.to_string(),
                };
                return Err(self.invalid(field_node.position, &field_field, problem.into()));
            }
            if let Some(first) = out.iter().position(|v| v.field.as_str() == text) {
                let problem = SweepProblem::RepeatedField {
                    field: text.to_string(),
                    first_field: index(FIELD, first),
                };
                return Err(self.invalid(field_node.position, &field_field, problem.into()));
            }
            let values_node = self.required(&map, "values")?;
            let values_field = map.field("values");
            let Value::Seq(values) = &values_node.value else {
                return Err(self.wrong_type(values_node, &values_field, "a list of values"));
            };
            if values.is_empty() {
                return Err(self.invalid(values_node.position, &values_field, Problem::EmptyList));
            }
            let mut read: Vec<VaryValue> = Vec::with_capacity(values.len());
            for (j, value) in values.iter().enumerate() {
                let value_field = index(&values_field, j);
                if value.value == Value::Null {
                    return Err(self.wrong_type(value, &value_field, "a value"));
                }
                let text = self.written(value);
                if read.iter().any(|v| v.text == text) {
                    return Err(self.invalid(
                        value.position,
                        &value_field,
                        Problem::Repeated { name: text },
                    ));
                }
                read.push(VaryValue {
                    text,
                    node: value.clone(),
                    position: value.position,
                });
            }
            out.push(Vary {
                field: path,
                values: read,
            });
        }
        Ok(out)
    }
}
