//! The Alibaba GPU-cluster pod list (`openb_pod_list_*.csv` of
//! alibaba/clusterdata `cluster-trace-gpu-v2023`): one row per pod,
//!
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`
//!
//! Each row becomes a bare pod in namespace `default`, created at
//! `creation_time` (seconds) and running for `deletion_time −
//! creation_time` once bound (karpsim starts a pod's run time when it is
//! bound, so time spent pending is added to its life):
//!
//! - requests: `cpu_milli` millicores and `memory_mib` MiB;
//! - GPUs: `num_gpu` whole `nvidia.com/gpu`. A GPU-sharing pod
//!   (`num_gpu` = 1 with `gpu_milli` < 1000, or `num_gpu` = 0 with
//!   `gpu_milli` > 0) is rounded up to one whole GPU: Kubernetes device
//!   plugins hand out whole devices, and fractional sharing is outside
//!   what Karpenter provisions for. GPU pods also get the toleration
//!   `nvidia.com/gpu:NoSchedule` (operator Exists), as the
//!   ExtendedResourceToleration admission plugin adds to pods requesting an
//!   extended resource, so tainted GPU NodePools accept them;
//! - `qos`, `pod_phase`, `gpu_spec` and `scheduled_time` are informational:
//!   `qos` and `gpu_milli` are kept as the pod annotations
//!   `karpsim.dev/trace-qos` and `karpsim.dev/trace-gpu-milli`.
//!
//! Only the columns used must be present, in any order.

use super::{RowFormat, RowProblem, TraceAction, TraceEvent};
use crate::kube::pod::PodSpec;
use crate::kube::resources::{MIB, ResourceKind, Resources};
use crate::kube::taints::{TaintEffect, Toleration};
use crate::sim::engine::{Target, TargetKind};

/// Annotation keeping a trace pod's `qos`.
pub const QOS_ANNOTATION: &str = "karpsim.dev/trace-qos";
/// Annotation keeping a trace pod's `gpu_milli`.
pub const GPU_MILLI_ANNOTATION: &str = "karpsim.dev/trace-gpu-milli";

/// The columns read, in this order in [`AlibabaFormat::columns`].
const COLUMNS: [&str; 7] = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "creation_time",
    "deletion_time",
];
const QOS: &str = "qos";

/// Column positions of an Alibaba pod list.
#[derive(Debug, Clone, Default)]
pub struct AlibabaFormat {
    columns: [usize; COLUMNS.len()],
    qos: Option<usize>,
}

impl RowFormat for AlibabaFormat {
    fn header(&mut self, header: &csv::StringRecord) -> Result<(), String> {
        for (slot, name) in COLUMNS.iter().enumerate() {
            self.columns[slot] =
                header
                    .iter()
                    .position(|h| h.trim() == *name)
                    .ok_or_else(|| {
                        format!(
                            "missing column {name:?} (an Alibaba pod list needs {})",
                            COLUMNS.join(", ")
                        )
                    })?;
        }
        self.qos = header.iter().position(|h| h.trim() == QOS);
        Ok(())
    }

    fn row(&self, record: &csv::StringRecord) -> Result<TraceEvent, RowProblem> {
        let field = |slot: usize| -> Result<&str, RowProblem> {
            record
                .get(self.columns[slot])
                .map(str::trim)
                .ok_or_else(|| RowProblem::new(COLUMNS[slot], "missing (the row is too short)"))
        };
        let number = |slot: usize| -> Result<i64, RowProblem> {
            let text = field(slot)?;
            let value: i64 = text.parse().map_err(|_| {
                RowProblem::new(
                    COLUMNS[slot],
                    format!("expected a whole number, found {text:?}"),
                )
            })?;
            if value < 0 {
                return Err(RowProblem::new(
                    COLUMNS[slot],
                    format!("must not be negative, found {value}"),
                ));
            }
            Ok(value)
        };
        let name = field(0)?;
        if let Err(reason) = crate::scenario::names::check_dns_subdomain(name) {
            return Err(RowProblem::new(
                "name",
                format!("invalid pod name {name:?}: {reason}"),
            ));
        }
        let cpu = number(1)?;
        let memory = number(2)?;
        let num_gpu = number(3)?;
        let gpu_milli = number(4)?;
        let created = number(5)?;
        let deleted = number(6)?;
        if deleted < created {
            return Err(RowProblem::new(
                "deletion_time",
                format!("{deleted} is before creation_time {created} (negative run time)"),
            ));
        }
        let gpus = whole_gpus(num_gpu, gpu_milli);
        let mut requests =
            Resources::cpu_mem(cpu, memory.saturating_mul(MIB)).with(ResourceKind::Pods, 1);
        let mut pod = PodSpec::default();
        if gpus > 0 {
            requests.set(ResourceKind::NvidiaGpu, gpus);
            pod.tolerations.push(Toleration::exists(
                ResourceKind::NvidiaGpu
                    .well_known_name()
                    .unwrap_or_default(),
                Some(TaintEffect::NoSchedule),
            ));
            pod.annotations
                .insert(GPU_MILLI_ANNOTATION.to_string(), gpu_milli.to_string());
        }
        if let Some(qos) = self.qos.and_then(|i| record.get(i)).map(str::trim)
            && !qos.is_empty()
        {
            pod.annotations
                .insert(QOS_ANNOTATION.to_string(), qos.to_string());
        }
        pod.requests = requests;
        Ok(TraceEvent {
            time: created as f64,
            action: TraceAction::Create {
                target: Target {
                    kind: TargetKind::Pod,
                    namespace: pod.namespace.clone(),
                    name: name.to_string(),
                },
                replicas: 1,
                pod: Box::new(pod),
                duration: Some((deleted - created) as f64),
            },
        })
    }
}

/// Whole GPUs for a row: `num_gpu`, or one for a pod sharing a fraction of
/// a GPU.
pub fn whole_gpus(num_gpu: i64, gpu_milli: i64) -> i64 {
    if num_gpu == 0 && gpu_milli > 0 {
        1
    } else {
        num_gpu
    }
}
