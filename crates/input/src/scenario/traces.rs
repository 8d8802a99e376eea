//! Reads `trace:` workload items into [`TraceSpec`]s:
//! `{trace: FILE, format: generic|alibaba, start, end, timeScale, sample}`
//! (see [`crate::scenario::trace`] for what each option does).

use super::super::error::ScenarioError;
use super::super::limits::TIME_SCALE;
use super::super::trace::{TraceFormat, TraceSpec};
use super::super::yaml::{Node, Value};
use super::Mapping;
use super::Reader;
use super::generators::WorkloadProblem;
use crate::sim::SimTime;

/// The item keys that only a `trace` item may have.
pub(super) const TRACE_OPTIONS: &[&str] = &["format", "start", "end", "timeScale", "sample"];

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
        let format = match self.string(format_node, &map.field("format"))? {
            "generic" => TraceFormat::Generic,
            "alibaba" => TraceFormat::Alibaba,
            _ => {
                return Err(self.wrong_type(
                    format_node,
                    &map.field("format"),
                    "generic or alibaba",
                ));
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
