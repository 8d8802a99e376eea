//! Reads `trace:` workload items into [`TraceSpec`]s:
//! `{trace: FILE, format: generic|alibaba|audit-log|simkube|kubereplay,
//! start, end, timeScale, sample, excludeNamespaces}` (see
//! [`crate::scenario::trace`] for what each option does).

use super::super::error::ScenarioError;
use super::super::limits::TIME_SCALE;
use super::super::names::check_dns_label;
use super::super::trace::{DEFAULT_EXCLUDED_NAMESPACES, TraceFormat, TraceSpec};
use super::super::yaml::{Node, Value};
use super::Mapping;
use super::Reader;
use super::generators::WorkloadProblem;
use crate::sim::SimTime;

/// The item keys that only a `trace` item may have.
pub(super) const TRACE_OPTIONS: &[&str] = &[
    "format",
    "start",
    "end",
    "timeScale",
    "sample",
    "excludeNamespaces",
];

impl Reader<'_> {
    /// Rejects trace options on an item that is not a trace.
    pub(super) fn no_trace_options(
        &self,
        map: &Mapping<'_>,
        action: &str,
    ) -> Result<(), ScenarioError> {
        match map.present(TRACE_OPTIONS).first() {
            Some((key, key_node, _)) => Err(self.invalid(
                key_node.position,
                &map.field(key),
                super::super::error::Problem::Conflict {
                    first: action.to_string(),
                    second: key.to_string(),
                },
            )),
            None => Ok(()),
        }
    }

    /// A trace item placed at `at`; `number` is its index among traces.
    pub(super) fn trace_item(
        &self,
        map: &Mapping<'_>,
        at: SimTime,
        number: usize,
    ) -> Result<TraceSpec, ScenarioError> {
        let file_node = self.required(map, "trace")?;
        let file = self.file(file_node, &map.field("trace"))?;
        let format_node = self.required(map, "format")?;
        let format = match TraceFormat::parse(self.string(format_node, &map.field("format"))?) {
            Some(format) => format,
            None => {
                return Err(self.wrong_type(
                    format_node,
                    &map.field("format"),
                    "generic, alibaba, audit-log, simkube or kubereplay",
                ));
            }
        };
        let exclude_namespaces = match map.get("excludeNamespaces") {
            None => DEFAULT_EXCLUDED_NAMESPACES.map(str::to_string).to_vec(),
            Some(node) => {
                let field = map.field("excludeNamespaces");
                if matches!(format, TraceFormat::Generic | TraceFormat::Alibaba) {
                    return Err(self.invalid(
                        node.position,
                        &field,
                        super::super::error::Problem::Conflict {
                            first: format!("format: {}", format.as_str()),
                            second: "excludeNamespaces".to_string(),
                        },
                    ));
                }
                let Value::Seq(items) = &node.value else {
                    return Err(self.wrong_type(node, &field, "a list of namespaces"));
                };
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let item_field = format!("{field}[{i}]");
                        let name = self.string(item, &item_field)?;
                        check_dns_label(name).map_err(|reason| {
                            let problem = WorkloadProblem::Range {
                                what: reason,
                                text: name.to_string(),
                            };
                            self.invalid(item.position, &item_field, problem.into())
                        })?;
                        Ok(name.to_string())
                    })
                    .collect::<Result<Vec<_>, ScenarioError>>()?
            }
        };
        let start = match map.get("start") {
            Some(node) => self.trace_seconds(node, &map.field("start"))?,
            None => 0.0,
        };
        let end = match map.get("end") {
            Some(node) => {
                let end = self.trace_seconds(node, &map.field("end"))?;
                if end <= start {
                    let problem = WorkloadProblem::Range {
                        what: "end must be after start",
                        text: self.written(node),
                    };
                    return Err(self.invalid(node.position, &map.field("end"), problem.into()));
                }
                Some(end)
            }
            None => None,
        };
        let time_scale = match map.get("timeScale") {
            Some(node) => self.bounded(
                node,
                &map.field("timeScale"),
                "must be from 0.000001 to 1000000 (see Limits in scenarios/README.md)",
                |v| (TIME_SCALE.0..=TIME_SCALE.1).contains(&v),
            )?,
            None => 1.0,
        };
        let sample = match map.get("sample") {
            Some(node) => self.bounded(
                node,
                &map.field("sample"),
                "must be greater than 0 and at most 1",
                |v| v > 0.0 && v <= 1.0,
            )?,
            None => 1.0,
        };
        Ok(TraceSpec {
            file,
            format,
            start,
            end,
            time_scale,
            sample,
            at,
            stream: format!("trace/{number}"),
            skip_bad_rows: false,
            exclude_namespaces,
        })
    }

    /// Trace time: seconds as a number, or a duration.
    fn trace_seconds(&self, node: &Node, field: &str) -> Result<f64, ScenarioError> {
        match node.value {
            Value::Int(_) | Value::Float(_) => {
                self.bounded(node, field, "must be a number of seconds ≥ 0", |v| {
                    v >= 0.0
                })
            }
            _ => Ok(self.duration(node, field)?.as_millis() as f64 / 1000.0),
        }
    }

    fn bounded(
        &self,
        node: &Node,
        field: &str,
        what: &'static str,
        ok: impl Fn(f64) -> bool,
    ) -> Result<f64, ScenarioError> {
        let value = match node.value {
            Value::Int(v) => v as f64,
            Value::Float(v) => v,
            _ => return Err(self.wrong_type(node, field, "a number")),
        };
        if !value.is_finite() || !ok(value) {
            let problem = WorkloadProblem::Range {
                what,
                text: self.raw(node),
            };
            return Err(self.invalid(node.position, field, problem.into()));
        }
        Ok(value)
    }
}
