//! The objects `scale` and `delete` steps name, checked once the
//! manifests are read: walking the steps in order (equal times in file
//! order, as they apply), each step's object must exist at that moment,
//! applied by an earlier step and not deleted since. A step whose object
//! is missing would only leave a `NotFound` row in events.csv and change
//! the result, so it is an error naming the step and what does exist.
//!
//! Objects only a run can know are left to the engine, which counts the
//! steps that miss (`steps_missing_target`): anything once a trace has
//! started, and the generated names of pods and Jobs (`web-00001`,
//! `batch-17`, a CronJob's `nightly-29000000`).

use std::collections::BTreeMap;

use super::error::{Problem, ScenarioError};
use super::generate::GeneratorSpec;
use super::{ObjectKind, ObjectRef, Scenario, WorkloadAction};
use crate::sim::SimTime;

/// An object by kind, namespace and name.
type Key = (ObjectKind, String, String);

/// Checks every `scale` and `delete` step of `scenario`; `applied[i]` is
/// what workload step `i` applies (its manifests' objects), `file` the
/// scenario file as shown in messages.
pub(super) fn check(
    scenario: &Scenario,
    applied: &BTreeMap<usize, Vec<ObjectRef>>,
    file: &str,
) -> Result<(), ScenarioError> {
    // Live objects, with the step that applied them.
    let mut live: BTreeMap<Key, usize> = BTreeMap::new();
    // Deleted objects, with the step that deleted them.
    let mut deleted: BTreeMap<Key, usize> = BTreeMap::new();
    // (kind, namespace, prefix): generated names, unknowable here.
    let mut generated: Vec<(ObjectKind, String, String)> = Vec::new();
    let mut trace_from: Option<usize> = None;
    for (index, step) in scenario.workloads.iter().enumerate() {
        let (verb, target) = match &step.action {
            WorkloadAction::Apply { .. } => {
                for object in applied.get(&index).into_iter().flatten() {
                    let key = key(object);
                    deleted.remove(&key);
                    live.insert(key, index);
                    if object.kind != ObjectKind::Pod {
                        generated.push((ObjectKind::Pod, object.namespace.clone(), prefix(object)));
                    }
                }
                continue;
            }
            WorkloadAction::Generate { generator, .. } => {
                let (namespace, name) = generator_name(generator);
                let prefix = format!("{name}-");
                generated.push((ObjectKind::Pod, namespace.clone(), prefix.clone()));
                match generator {
                    GeneratorSpec::Deployment(_) => {
                        live.insert((ObjectKind::Deployment, namespace, name), index);
                    }
                    GeneratorSpec::Pods(pods) if pods.job.is_none() => {}
                    _ => generated.push((ObjectKind::Job, namespace, prefix)),
                }
                continue;
            }
            WorkloadAction::Trace(_) => {
                trace_from.get_or_insert(index);
                continue;
            }
            WorkloadAction::NodePools { .. } | WorkloadAction::NodeCondition { .. } => continue,
            WorkloadAction::Scale { target, .. } => ("scale", target),
            WorkloadAction::Delete { target } => ("delete", target),
        };
        let key = key(target);
        if live.contains_key(&key) {
            if verb == "delete" {
                live.remove(&key);
                deleted.insert(key, index);
            }
            continue;
        }
        let unknowable = trace_from.is_some()
            || generated.iter().any(|(kind, namespace, prefix)| {
                *kind == target.kind
                    && *namespace == target.namespace
                    && target.name.starts_with(prefix.as_str())
            });
        if unknowable {
            continue;
        }
        let hint = hint(scenario, applied, &live, &deleted, index, target);
        let object = format!(
            "{} {:?} in namespace {:?}",
            target.kind.as_str(),
            target.name,
            target.namespace
        );
        return Err(ScenarioError::Invalid {
            file: file.to_string(),
            position: step.position,
            field: format!(
                "workloads[{index}].{verb}.{}",
                target.kind.as_str().to_lowercase()
            ),
            problem: Box::new(Problem::MissingTarget {
                verb,
                object,
                at: step.at.to_string(),
                hint,
            }),
        });
    }
    Ok(())
}

fn key(object: &ObjectRef) -> Key {
    (object.kind, object.namespace.clone(), object.name.clone())
}

/// The prefix of the names of an object's pods (`web-` for `web-00001`,
/// `cache-` for a StatefulSet's `cache-0`, a DaemonSet's `agent-<node>`).
fn prefix(object: &ObjectRef) -> String {
    format!("{}-", object.name)
}

fn generator_name(generator: &GeneratorSpec) -> (String, String) {
    let (shape, name) = match generator {
        GeneratorSpec::Pods(g) => (&g.shape, &g.name),
        GeneratorSpec::Deployment(g) => (&g.shape, &g.name),
        GeneratorSpec::CronJob(g) => (&g.shape, &g.name),
    };
    (shape.namespace.clone(), name.clone())
}

/// What the user may have meant: the object applied later or deleted
/// earlier, the same name in other namespaces or of another kind, a close
/// name, or the objects of that kind there are.
fn hint(
    scenario: &Scenario,
    applied: &BTreeMap<usize, Vec<ObjectRef>>,
    live: &BTreeMap<Key, usize>,
    deleted: &BTreeMap<Key, usize>,
    index: usize,
    target: &ObjectRef,
) -> String {
    let when = |step: usize| {
        let at: SimTime = scenario.workloads[step].at;
        format!("{at} (workloads[{step}])")
    };
    let key = key(target);
    if let Some(step) = deleted.get(&key) {
        return format!("; it was deleted before, at {}", when(*step));
    }
    let later = applied
        .range(index + 1..)
        .find(|(_, objects)| objects.contains(target));
    if let Some((step, _)) = later {
        return format!("; it is applied later, at {}", when(*step));
    }
    let namespaces: Vec<String> = live
        .keys()
        .filter(|(kind, namespace, name)| {
            *kind == target.kind && *name == target.name && *namespace != target.namespace
        })
        .map(|(_, namespace, _)| format!("{namespace:?}"))
        .collect();
    if !namespaces.is_empty() {
        return format!(
            "; {} {:?} exists in namespace {} (set namespace)",
            target.kind.as_str(),
            target.name,
            namespaces.join(", ")
        );
    }
    let kinds: Vec<&str> = live
        .keys()
        .filter(|(kind, namespace, name)| {
            *kind != target.kind && *name == target.name && *namespace == target.namespace
        })
        .map(|(kind, _, _)| kind.as_str())
        .collect();
    if !kinds.is_empty() {
        return format!(
            "; a {} {:?} exists there",
            kinds.join(" and a "),
            target.name
        );
    }
    let same_kind: Vec<&str> = live
        .keys()
        .filter(|(kind, namespace, _)| *kind == target.kind && *namespace == target.namespace)
        .map(|(_, _, name)| name.as_str())
        .collect();
    let close: Vec<&str> = same_kind
        .iter()
        .copied()
        .filter(|name| super::names::edit_distance(name, &target.name) <= 2)
        .collect();
    if !close.is_empty() {
        return format!("; did you mean {:?}?", close.join("\", \""));
    }
    const SHOWN: usize = 5;
    match same_kind.as_slice() {
        [] => format!(
            "; no {} exists in namespace {:?} then",
            target.kind.as_str(),
            target.namespace
        ),
        names => {
            let mut shown: Vec<String> =
                names.iter().take(SHOWN).map(|n| format!("{n:?}")).collect();
            if names.len() > SHOWN {
                shown.push("...".to_string());
            }
            format!(
                "; {}s there then: {}",
                target.kind.as_str(),
                shown.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scenario::{BundledRegions, PrepareError, Scenario, prepare};

    const INLINE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/scenarios/inline.yaml"
    );

    /// The error for a scenario of `workloads` once its files are read, or
    /// `None` when it prepares.
    fn check(workloads: &str) -> Option<String> {
        let text = format!(
            "duration: 1d\nworkloads:\n{workloads}variants:\n  - name: k\n    karpenter:\n      nodePools: nodepools/default.yaml\n"
        );
        let scenario = Scenario::parse(&text, Path::new(INLINE), &BundledRegions).unwrap();
        match prepare(&scenario, None) {
            Ok(_) => None,
            Err(PrepareError::MissingTarget(err)) => Some(
                err.to_string()
                    .split_once("inline.yaml:")
                    .unwrap_or_else(|| panic!("no file position in {err}"))
                    .1
                    .to_string(),
            ),
            Err(other) => panic!("unexpected error: {other}"),
        }
    }

    const BASE: &str = "  - manifests: workloads/base.yaml\n";

    /// A step whose object does not exist when it comes is an error at
    /// the step, naming what does exist (before, it only left a NotFound
    /// row in events.csv and changed the result).
    #[test]
    fn missing_objects_are_errors_naming_what_exists() {
        let cases = [
            (
                format!(
                    "{BASE}  - at: 1h\n    scale: {{deployment: web, namespace: shop, replicas: 3}}\n"
                ),
                "5:25: workloads[1].scale.deployment: cannot scale: no Deployment \"web\" in \
                 namespace \"shop\" at 1h0m0s; Deployment \"web\" exists in namespace \
                 \"default\" (set namespace)",
            ),
            (
                format!(
                    "{BASE}  - at: 1h\n    scale: {{statefulset: cahce, namespace: data, replicas: 0}}\n"
                ),
                "5:26: workloads[1].scale.statefulset: cannot scale: no StatefulSet \"cahce\" in \
                 namespace \"data\" at 1h0m0s; did you mean \"cache\"?",
            ),
            (
                format!("{BASE}  - at: 1h\n    delete: {{statefulset: web}}\n"),
                "5:27: workloads[1].delete.statefulset: cannot delete: no StatefulSet \"web\" in \
                 namespace \"default\" at 1h0m0s; a Deployment \"web\" exists there",
            ),
            (
                format!("{BASE}  - at: 1h\n    delete: {{deployment: api}}\n"),
                "5:26: workloads[1].delete.deployment: cannot delete: no Deployment \"api\" in \
                 namespace \"default\" at 1h0m0s; Deployments there then: \"web\"",
            ),
            (
                format!(
                    "{BASE}  - at: 1h\n    delete: {{job: nightly-report, namespace: batch}}\n"
                ),
                "5:19: workloads[1].delete.job: cannot delete: no Job \"nightly-report\" in \
                 namespace \"batch\" at 1h0m0s; no Job exists in namespace \"batch\" then",
            ),
            // Order matters: applied later ...
            (
                format!(
                    "{BASE}  - at: 1h\n    scale: {{deployment: burst, replicas: 3}}\n  - at: 2h\n    manifests: workloads/burst.yaml\n"
                ),
                "5:25: workloads[1].scale.deployment: cannot scale: no Deployment \"burst\" in \
                 namespace \"default\" at 1h0m0s; it is applied later, at 2h0m0s (workloads[2])",
            ),
            // ... or at the same time but listed after ...
            (
                "  - scale: {deployment: web, replicas: 3}\n  - manifests: workloads/base.yaml\n"
                    .to_string(),
                "3:25: workloads[0].scale.deployment: cannot scale: no Deployment \"web\" in \
                 namespace \"default\" at 0s; it is applied later, at 0s (workloads[1])",
            ),
            // ... or deleted earlier.
            (
                format!(
                    "{BASE}  - at: 1h\n    delete: {{deployment: web}}\n  - at: 2h\n    scale: {{deployment: web, replicas: 3}}\n"
                ),
                "7:25: workloads[2].scale.deployment: cannot scale: no Deployment \"web\" in \
                 namespace \"default\" at 2h0m0s; it was deleted before, at 1h0m0s \
                 (workloads[1])",
            ),
        ];
        for (workloads, expected) in cases {
            assert_eq!(check(&workloads).as_deref(), Some(expected), "{workloads}");
        }
    }

    /// Objects that exist, were applied again after a delete, or that only
    /// the run can know (generated names, anything once a trace started)
    /// pass; the engine counts the misses among the latter.
    #[test]
    fn existing_and_unknowable_objects_pass() {
        let trace = "../../../scenarios/traces/alibaba_openb_pod_list_default.csv";
        for workloads in [
            format!("{BASE}  - at: 1h\n    scale: {{statefulset: cache, namespace: data, replicas: 2}}\n  - at: 2h\n    delete: {{deployment: web}}\n  - at: 3h\n    manifests: workloads/base.yaml\n  - at: 4h\n    scale: {{deployment: web, replicas: 1}}\n"),
            // A pod of the Deployment and of the StatefulSet.
            format!("{BASE}  - at: 1h\n    delete: {{pod: web-00003}}\n  - at: 1h\n    delete: {{pod: cache-0, namespace: data}}\n"),
            // A generator's Deployment, pods and Jobs.
            "  - generate: {deployment: {name: api, replicas: {steps: [{at: 0, replicas: 2}]}}}\n  - at: 1h\n    scale: {deployment: api, replicas: 4}\n  - at: 1h\n    generate: {cronJob: {name: etl, schedule: \"@hourly\"}}\n  - at: 2h\n    delete: {job: etl-29000000}\n".to_string(),
            format!("  - trace: {trace}\n    format: alibaba\n  - at: 1h\n    delete: {{pod: openb-pod-0000}}\n"),
        ] {
            assert_eq!(check(&workloads), None, "{workloads}");
        }
    }
}
