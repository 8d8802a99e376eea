//! `karpsim sweep job`: the Kubernetes objects that run a sweep on a
//! cluster. A `batch/v1` Indexed Job with one completion per shard, each
//! pod running `karpsim sweep SWEEP --shard auto --shards N` into its own
//! folder `results/<sweep>/shard-<index>` of a shared volume, and a Job
//! that merges those folders into `results/<sweep>/merged` and prints its
//! `sweep.json` and nothing else (so `kubectl logs` fetches it); without
//! `--pvc`, also the
//! PersistentVolumeClaim they share. Built with k8s-openapi's types and
//! printed as YAML documents.

use std::collections::BTreeMap;
use std::path::{Component, PathBuf};

use anyhow::Result;
use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    PodSpec, PodTemplateSpec, ResourceRequirements, Volume, VolumeMount,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::sweep::load_sweep;

/// The image's working folder, holding `scenarios/`: sweep paths are
/// relative to it.
pub const WORKING_DIR: &str = "/karpsim";
/// Where the shared volume is mounted, below the working folder.
pub const RESULTS_DIR: &str = "results";
/// The exit status of a failed command (bad input is not worth a retry).
const ERROR_EXIT: i32 = 1;

#[derive(clap::Args)]
pub struct JobArgs {
    /// Sweep file, as a path relative to the image's working folder
    /// (/karpsim, where the image's scenarios/ are); it is read here too,
    /// from the current folder, to check it and count its runs.
    pub sweep: PathBuf,
    /// The container image (karpsim at /usr/local/bin, the sweep's files
    /// under /karpsim; see the Dockerfile).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// How many shards (Job completions) to split the runs into.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub shards: u32,
    /// How many shard pods may run at once [default: all of them].
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub parallelism: Option<u32>,
    /// An existing PersistentVolumeClaim (ReadWriteMany, or every pod on
    /// one node) for the shards' folders [default: one is printed too,
    /// named <sweep>-results].
    #[arg(long, value_name = "NAME")]
    pub pvc: Option<String>,
}

pub fn job_command(args: &JobArgs) -> Result<()> {
    let loaded = load_sweep(&args.sweep)?;
    let relative = args
        .sweep
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !relative {
        anyhow::bail!(
            "{}: give the sweep file's path relative to the image's working folder {WORKING_DIR} (such as scenarios/sweeps/NAME.yaml), from the folder that mirrors it",
            args.sweep.display()
        );
    }
    let runs = loaded.plan.run_count();
    if args.shards as usize > runs {
        anyhow::bail!(
            "--shards {}: the sweep has {runs} runs; give at most one shard per run",
            args.shards
        );
    }
    let sweep_path = args
        .sweep
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/");
    let spec = JobSet {
        sweep_name: loaded.file.name.clone(),
        sweep_path,
        image: args.image.clone(),
        shards: args.shards,
        parallelism: args.parallelism.unwrap_or(args.shards).min(args.shards),
        pvc: args.pvc.clone(),
    };
    print!("{}", spec.to_yaml()?);
    Ok(())
}

/// What the printed objects are made from.
pub struct JobSet {
    /// The sweep's name.
    pub sweep_name: String,
    /// The sweep file, relative to [`WORKING_DIR`], with `/`.
    pub sweep_path: String,
    /// The image.
    pub image: String,
    /// Completions of the Indexed Job.
    pub shards: u32,
    /// Pods at once.
    pub parallelism: u32,
    /// The claim to use; `None` prints one.
    pub pvc: Option<String>,
}

/// `name` as the start of a Kubernetes object name: lowercase letters,
/// digits and `-`, at most 40 characters (room for the Job's suffixes).
fn object_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    out.truncate(40);
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "sweep".to_string()
    } else {
        out
    }
}

impl JobSet {
    fn base(&self) -> String {
        object_name(&self.sweep_name)
    }

    /// The claim the Jobs mount.
    pub fn claim_name(&self) -> String {
        self.pvc
            .clone()
            .unwrap_or_else(|| format!("{}-results", self.base()))
    }

    fn labels(&self, component: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".to_string(), "karpsim".to_string()),
            ("app.kubernetes.io/part-of".to_string(), self.base()),
            (
                "app.kubernetes.io/component".to_string(),
                component.to_string(),
            ),
        ])
    }

    fn metadata(&self, name: String, component: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            labels: Some(self.labels(component)),
            ..Default::default()
        }
    }

    /// The folder of shard `index`, relative to the working folder.
    pub fn shard_dir(&self, index: &str) -> String {
        format!("{RESULTS_DIR}/{}/shard-{index}", self.sweep_name)
    }

    /// The arguments of a shard pod (`$(JOB_COMPLETION_INDEX)` is
    /// expanded by the kubelet from the variable the Job controller sets).
    pub fn shard_args(&self) -> Vec<String> {
        [
            "sweep",
            &self.sweep_path,
            "--shard",
            "auto",
            "--shards",
            &self.shards.to_string(),
            "--jobs",
            "1",
            "--out",
            &self.shard_dir("$(JOB_COMPLETION_INDEX)"),
            "--allow-failed-runs",
            "--quiet",
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// The arguments of the merge pod: its log is the merged `sweep.json`
    /// alone (failed runs are counted there, not printed).
    pub fn merge_args(&self) -> Vec<String> {
        let mut args = vec!["sweep".to_string(), "merge".to_string()];
        args.extend((0..self.shards).map(|i| self.shard_dir(&i.to_string())));
        args.extend([
            "--out".to_string(),
            format!("{RESULTS_DIR}/{}/merged", self.sweep_name),
            "-o".to_string(),
            "json".to_string(),
            "--allow-failed-runs".to_string(),
            "--quiet".to_string(),
        ]);
        args
    }

    fn pod(&self, component: &str, args: Vec<String>) -> PodTemplateSpec {
        let quantity = |q: &str| Quantity(q.to_string());
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(self.labels(component)),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                restart_policy: Some("Never".to_string()),
                containers: vec![Container {
                    name: "karpsim".to_string(),
                    image: Some(self.image.clone()),
                    command: Some(vec!["karpsim".to_string()]),
                    args: Some(args),
                    working_dir: Some(WORKING_DIR.to_string()),
                    resources: Some(ResourceRequirements {
                        requests: Some(BTreeMap::from([
                            ("cpu".to_string(), quantity("1")),
                            ("memory".to_string(), quantity("512Mi")),
                        ])),
                        ..Default::default()
                    }),
                    volume_mounts: Some(vec![VolumeMount {
                        name: "results".to_string(),
                        mount_path: format!("{WORKING_DIR}/{RESULTS_DIR}"),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }],
                volumes: Some(vec![Volume {
                    name: "results".to_string(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: self.claim_name(),
                        read_only: None,
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    /// A failed command (exit 1: bad input, which a retry repeats) fails
    /// the Job at once; a pod evicted or preempted is retried without
    /// counting against the backoff limit.
    fn failure_policy() -> PodFailurePolicy {
        PodFailurePolicy {
            rules: vec![
                PodFailurePolicyRule {
                    action: "FailJob".to_string(),
                    on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                        container_name: Some("karpsim".to_string()),
                        operator: "In".to_string(),
                        values: vec![ERROR_EXIT],
                    }),
                    on_pod_conditions: None,
                },
                PodFailurePolicyRule {
                    action: "Ignore".to_string(),
                    on_exit_codes: None,
                    on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                        type_: "DisruptionTarget".to_string(),
                        status: Some("True".to_string()),
                    }]),
                },
            ],
        }
    }

    /// The Indexed Job of the shards.
    pub fn shards_job(&self) -> Job {
        let shards = i32::try_from(self.shards).unwrap_or(i32::MAX);
        let parallelism = i32::try_from(self.parallelism).unwrap_or(i32::MAX);
        Job {
            metadata: self.metadata(format!("{}-shards", self.base()), "shards"),
            spec: Some(JobSpec {
                completion_mode: Some("Indexed".to_string()),
                completions: Some(shards),
                parallelism: Some(parallelism),
                backoff_limit: Some(3),
                pod_failure_policy: Some(Self::failure_policy()),
                template: self.pod("shards", self.shard_args()),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// The Job that merges the shards.
    pub fn merge_job(&self) -> Job {
        Job {
            metadata: self.metadata(format!("{}-merge", self.base()), "merge"),
            spec: Some(JobSpec {
                completions: Some(1),
                parallelism: Some(1),
                backoff_limit: Some(1),
                pod_failure_policy: Some(Self::failure_policy()),
                template: self.pod("merge", self.merge_args()),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// The claim, when none is given.
    pub fn claim(&self) -> Option<PersistentVolumeClaim> {
        self.pvc.is_none().then(|| PersistentVolumeClaim {
            metadata: self.metadata(self.claim_name(), "results"),
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteMany".to_string()]),
                resources: Some(VolumeResourceRequirements {
                    requests: Some(BTreeMap::from([(
                        "storage".to_string(),
                        Quantity("1Gi".to_string()),
                    )])),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        })
    }

    /// Every object as YAML documents, after a comment on how to apply
    /// them.
    pub fn to_yaml(&self) -> Result<String> {
        let base = self.base();
        let mut out = format!(
            "# karpsim sweep {}: {} shards, then their merge.\n\
             #   kubectl apply -f FILE -l app.kubernetes.io/component!=merge\n\
             #   kubectl wait --for=condition=complete --timeout=24h job/{base}-shards\n\
             #   kubectl apply -f FILE -l app.kubernetes.io/component=merge\n\
             #   kubectl wait --for=condition=complete --timeout=1h job/{base}-merge\n\
             #   kubectl logs job/{base}-merge > sweep.json\n",
            self.sweep_name, self.shards
        );
        let mut documents = Vec::new();
        if let Some(claim) = self.claim() {
            documents.push(yaml(&claim)?);
        }
        documents.push(yaml(&self.shards_job())?);
        documents.push(yaml(&self.merge_job())?);
        out.push_str(&documents.join("---\n"));
        Ok(out)
    }
}

/// One object as a YAML document.
fn yaml<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_saphyr::to_string(value).map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))
}
