//! Reading core kinds as the API server accepts them: unknown fields,
//! names, duplicates, selectors, labels and resource limits.

use super::*;
use crate::manifest::split_documents;

fn read(text: &str) -> Result<(CoreManifests, Warnings), ManifestError> {
    let mut names = ResourceNames::default();
    let mut warnings = Warnings::default();
    let mut reader = CoreReader::new();
    for doc in split_documents("m.yaml", text)? {
        reader.add(doc, &mut names, &mut warnings)?;
    }
    let core = reader.finish(&mut names, &mut warnings)?;
    Ok((core, warnings))
}

fn error(text: &str) -> String {
    match read(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn deployment(name: &str, extra_container_field: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: web:1
{extra_container_field}"
    )
}

/// kubectl's strict field validation (`--validate=strict`, server-side
/// field validation, apiserver `fieldmanager` strict decoding): an unknown
/// field is an error at the key, naming the object and the path of the
/// mapping holding it, with the nearest known field.
#[test]
fn a_typo_in_a_container_is_an_error_at_the_key() {
    let text = deployment(
        "frontend",
        "        resource:\n          requests: {cpu: '1'}\n",
    );
    assert_eq!(
        error(&text),
        "m.yaml:17:9: unknown field \"resource\" in Deployment shop/frontend \
         spec.template.spec.containers[0] (did you mean \"resources\"?)"
    );
    let replicas = text
        .replace("  replicas: 2", "  replicaz: 2")
        .replace("        resource:\n          requests: {cpu: '1'}\n", "");
    assert_eq!(
        error(&replicas),
        "m.yaml:7:3: unknown field \"replicaz\" in Deployment shop/frontend spec \
         (did you mean \"replicas\"?)"
    );
    let far = deployment("frontend", "        flavour: large\n");
    assert_eq!(
        error(&far),
        "m.yaml:17:9: unknown field \"flavour\" in Deployment shop/frontend \
         spec.template.spec.containers[0]"
    );
}

/// Every kind read through k8s-openapi is read strictly; cluster-scoped
/// kinds are named without a namespace, top-level fields without a path.
#[test]
fn every_core_kind_refuses_unknown_fields() {
    let container = "containers: [{name: c, image: i, resourcez: {}}]";
    let cases = [
        (
            format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{{container}}}\n"),
            "unknown field \"resourcez\" in Pod default/p spec.containers[0] (did you mean \"resources\"?)",
        ),
        (
            format!("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: r}}\nspec:\n  selector: {{matchLabels: {{a: b}}}}\n  template:\n    metadata: {{labels: {{a: b}}}}\n    spec: {{{container}}}\n"),
            "unknown field \"resourcez\" in ReplicaSet default/r spec.template.spec.containers[0] (did you mean \"resources\"?)",
        ),
        (
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  serviceNme: x\n".to_string(),
            "unknown field \"serviceNme\" in StatefulSet default/s spec (did you mean \"serviceName\"?)",
        ),
        (
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d, lables: {a: b}}\n".to_string(),
            "unknown field \"lables\" in DaemonSet default/d metadata (did you mean \"labels\"?)",
        ),
        (
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  paralelism: 2\n".to_string(),
            "unknown field \"paralelism\" in Job default/j spec (did you mean \"parallelism\"?)",
        ),
        (
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      completion: 1\n".to_string(),
            "unknown field \"completion\" in CronJob default/c spec.jobTemplate.spec (did you mean \"completions\"?)",
        ),
        (
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b, namespace: shop}\nspec: {minAvailabe: 1}\n".to_string(),
            "unknown field \"minAvailabe\" in PodDisruptionBudget shop/b spec (did you mean \"minAvailable\"?)",
        ),
        (
            "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\noverheads: {}\n".to_string(),
            "unknown field \"overheads\" in RuntimeClass kata (did you mean \"overhead\"?)",
        ),
        (
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvaleu: 1000\n".to_string(),
            "unknown field \"valeu\" in PriorityClass high (did you mean \"value\"?)",
        ),
    ];
    for (text, expected) in cases {
        let message = error(&text);
        let (_, rest) = message.split_once(": ").expect("positioned");
        assert_eq!(rest, expected, "{text}");
    }
}

/// `kubectl get -o yaml` output reads: server-set metadata (uid,
/// resourceVersion, managedFields, ...) are known fields, and `status` is
/// read leniently (a newer server may write fields this version lacks).
#[test]
fn kubectl_output_with_status_and_managed_fields_reads() {
    let text = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 2f1c7a1e-0000-4000-8000-000000000000
  resourceVersion: \"12345\"
  generation: 3
  creationTimestamp: \"2026-01-05T00:00:00Z\"
  annotations:
    deployment.kubernetes.io/revision: \"3\"
  managedFields:
  - apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
    manager: kubectl
    operation: Update
    time: \"2026-01-05T00:00:00Z\"
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}
  template:
    metadata:
      creationTimestamp: null
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: web:1
        resources:
          requests: {cpu: 500m}
        terminationMessagePath: /dev/termination-log
      dnsPolicy: ClusterFirst
      restartPolicy: Always
status:
  availableReplicas: 2
  conditions:
  - type: Available
    status: \"True\"
  someFieldOfANewerServer: 1
";
    let (core, _) = read(text).expect("kubectl output reads");
    assert_eq!(core.workloads[0].name, "web");
}

/// Repeated keys are refused by the YAML reader, at the second key, as
/// kubectl's strict decoding refuses duplicate fields.
#[test]
fn duplicate_keys_are_errors() {
    let text = deployment("web", "        image: web:2\n");
    assert_eq!(
        error(&text),
        "m.yaml:17:9: malformed YAML: duplicate key \"image\" (first at line 16)"
    );
}

/// apimachinery `ValidateObjectMeta`: a name (or generateName) is
/// required. A generateName gets the API server's shape of name, numbered
/// so that runs repeat.
#[test]
fn names_are_required_and_generate_name_gives_one() {
    let unnamed =
        "apiVersion: v1\nkind: Pod\nmetadata: {namespace: shop}\nspec: {containers: [{name: c}]}\n";
    assert_eq!(
        error(unnamed),
        "m.yaml:3:11: metadata: missing metadata.name: a Pod needs a name (or a generateName)"
    );
    let no_metadata = "apiVersion: apps/v1\nkind: Deployment\nspec: {}\n";
    assert!(error(no_metadata).contains("missing metadata.name"));
    let generated = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: batch-}\nspec: {containers: [{name: c}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {generateName: batch-}\nspec: {containers: [{name: c}]}\n";
    let (core, _) = read(generated).expect("reads");
    let names: Vec<&str> = core.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["batch-bbbbb", "batch-bbbbc"]);
    let bad_prefix = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: Batch_}\nspec: {containers: [{name: c}]}\n";
    assert!(error(bad_prefix).contains("metadata.generateName: invalid generateName \"Batch_\""));
}

/// Two objects of one kind with one name in one namespace are refused
/// (the API server answers the second create with AlreadyExists); other
/// namespaces and other kinds may reuse the name.
#[test]
fn duplicate_names_are_errors() {
    let first = deployment("web", "");
    let twice = format!("{first}---\n{first}");
    assert_eq!(
        error(&twice),
        "m.yaml:21:9: metadata.name: duplicate Deployment shop/web: already defined at m.yaml:4:9"
    );
    let other_namespace = first.replace("namespace: shop", "namespace: blog");
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: [{name: c}]}\n";
    let fine = format!("{first}---\n{other_namespace}---\n{pod}");
    assert_eq!(read(&fine).expect("reads").0.workloads.len(), 3);
}

/// apimachinery `NameIsDNSSubdomain` for most kinds, `NameIsDNSLabel` for
/// StatefulSets (apps validation `ValidateStatefulSetName`) and
/// namespaces (`ValidateNamespaceName`).
#[test]
fn invalid_names_and_namespaces_are_errors() {
    let underscore = error(&deployment("Web_App", ""));
    assert!(
        underscore.starts_with("m.yaml:4:9: metadata.name: invalid Deployment name \"Web_App\": a lowercase RFC 1123 subdomain"),
        "{underscore}"
    );
    let long = error(&deployment(&"a".repeat(300), ""));
    assert!(
        long.ends_with("must be no more than 253 characters (got 300)"),
        "{long}"
    );
    assert!(read(&deployment("web.v1", "")).is_ok());
    let stateful = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db.v1}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c}]}\n";
    assert!(
        error(stateful).contains("invalid StatefulSet name \"db.v1\": a lowercase RFC 1123 label")
    );
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {}}}\nspec:\n  template:\n    spec: {{containers: [{{name: c}}]}}\n",
        "j".repeat(64)
    );
    assert!(error(&job).contains("must be no more than 63 characters (got 64; a Job's name is its pods' job-name label value)"));
    let namespace = deployment("web", "").replace("namespace: shop", "namespace: Shop.Prod");
    assert!(
        error(&namespace)
            .starts_with("m.yaml:5:14: metadata.namespace: invalid namespace \"Shop.Prod\"")
    );
}

/// apps/v1 validation (`ValidateDeploymentSpec` and its kin): a selector
/// is required, may not be empty and must match the template's labels.
#[test]
fn controller_selectors_are_required_and_must_match() {
    let missing = deployment("web", "").replace("  selector:\n    matchLabels: {app: web}\n", "");
    assert_eq!(
        error(&missing),
        "m.yaml:7:3: spec: missing spec.selector: apps/v1 Deployment requires a selector matching spec.template.metadata.labels"
    );
    let empty =
        deployment("web", "").replace("    matchLabels: {app: web}\n", "    matchLabels: {}\n");
    assert!(error(&empty).ends_with("spec.selector: empty selector is invalid for deployment"));
    let mismatch =
        deployment("web", "").replace("matchLabels: {app: web}", "matchLabels: {app: api}");
    assert_eq!(
        error(&mismatch),
        "m.yaml:12:15: spec.template.metadata.labels: `selector` does not match template `labels`"
    );
    let daemonset = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  template:\n    spec: {containers: [{name: c}]}\n";
    assert!(error(daemonset).contains("missing spec.selector: apps/v1 DaemonSet"));
}

/// batch validation `validateGeneratedSelector` and strategy
/// `generateSelector`: without `manualSelector` the selector is generated,
/// so a selector of other labels is refused (upstream test case
/// "`selector` not auto-generated"); a generated one, as kubectl shows it,
/// reads; with `manualSelector: true` it is required and must match.
#[test]
fn job_selectors_follow_the_api_server() {
    let job = |selector: &str, manual: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec:\n{manual}{selector}  template:\n    metadata:\n      labels: {{app: j, batch.kubernetes.io/controller-uid: u1, batch.kubernetes.io/job-name: j}}\n    spec: {{restartPolicy: Never, containers: [{{name: c}}]}}\n"
        )
    };
    assert!(read(&job("", "")).is_ok());
    let chosen = "  selector: {matchLabels: {app: j}}\n";
    assert!(error(&job(chosen, "")).contains("spec.selector: `selector` not auto-generated"));
    assert!(read(&job(chosen, "  manualSelector: true\n")).is_ok());
    let generated = "  selector: {matchLabels: {batch.kubernetes.io/controller-uid: u1}}\n";
    assert!(read(&job(generated, "")).is_ok());
    assert!(
        error(&job("", "  manualSelector: true\n"))
            .contains("missing spec.selector: required when spec.manualSelector is true")
    );
    let other = "  selector: {matchLabels: {app: k}}\n";
    assert!(
        error(&job(other, "  manualSelector: true\n"))
            .contains("`selector` does not match template `labels`")
    );
}

/// apimachinery `ValidateLabels` / `ValidateLabelSelector` and core
/// `ValidatePodSpec` (nodeSelector): keys are qualified names, values at
/// most 63 characters of the label alphabet.
#[test]
fn invalid_labels_are_errors() {
    let bad_key = deployment("web", "").replace(
        "  namespace: shop\n",
        "  namespace: shop\n  labels: {\"bad key!\": x}\n",
    );
    let message = error(&bad_key);
    assert!(
        message.starts_with(
            "m.yaml:6:24: metadata.labels.bad key!: key \"bad key!\" is not a qualified name"
        ),
        "{message}"
    );
    let long_value = deployment("web", "").replace(
        "      labels: {app: web}",
        &format!("      labels: {{app: web, tier: {}}}", "v".repeat(64)),
    );
    assert!(error(&long_value).contains("spec.template.metadata.labels.tier: invalid label value"));
    let selector_value =
        deployment("web", "").replace("matchLabels: {app: web}", "matchLabels: {app: web/x}");
    assert!(
        error(&selector_value)
            .contains("spec.selector.matchLabels.app: invalid label value \"web/x\"")
    );
    let node_selector = deployment("web", "").replace(
        "      containers:\n",
        "      nodeSelector: {zone: \"us east\"}\n      containers:\n",
    );
    assert!(
        error(&node_selector)
            .contains("spec.template.spec.nodeSelector.zone: invalid label value \"us east\"")
    );
}

/// core validation `ValidateResourceRequirements`: a request above its
/// limit is refused per container and resource; a resource that cannot
/// be overcommitted (an extended resource) must request its limit.
#[test]
fn requests_above_limits_are_errors() {
    let over = deployment(
        "web",
        "        resources:\n          requests: {cpu: '2', memory: 1Gi}\n          limits: {cpu: 1500m, memory: 2Gi}\n",
    );
    assert_eq!(
        error(&over),
        "m.yaml:18:27: spec.template.spec.containers[0].resources.requests.cpu: request \"2\" must be less than or equal to cpu limit of \"1500m\""
    );
    let fine = deployment(
        "web",
        "        resources:\n          requests: {cpu: 1500m}\n          limits: {cpu: '1.5'}\n",
    );
    assert!(read(&fine).is_ok());
    let gpu = deployment(
        "web",
        "        resources:\n          requests: {nvidia.com/gpu: 1}\n",
    );
    assert!(
        error(&gpu).contains("requests.nvidia.com/gpu: a limit must be set for nvidia.com/gpu")
    );
    let gpu_unequal = deployment(
        "web",
        "        resources:\n          requests: {nvidia.com/gpu: 1}\n          limits: {nvidia.com/gpu: 2}\n",
    );
    assert!(error(&gpu_unequal).contains("must be equal to nvidia.com/gpu limit of \"2\""));
}

/// core validation: a pod needs at least one container.
#[test]
fn pods_need_a_container() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n";
    assert!(error(text).contains("spec.containers: at least one container is required"));
}

/// A Job without a run time is stated once, naming the default.
#[test]
fn a_job_without_duration_is_warned_about_once() {
    let job = |name: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n  activeDeadlineSeconds: 600\n  template:\n    spec: {{containers: [{{name: c}}]}}\n"
        )
    };
    let text = format!("{}---\n{}", job("a"), job("b"));
    let (_, warnings) = read(&text).expect("reads");
    let about: Vec<_> = warnings
        .list()
        .iter()
        .filter(|w| w.message.contains("karpsim.dev/duration"))
        .collect();
    assert_eq!(about.len(), 1, "{about:?}");
    assert!(
        about[0]
            .message
            .starts_with("Job default/a has no karpsim.dev/duration annotation")
    );
}

/// Nothing a manifest says may panic: odd shapes become errors.
#[test]
fn odd_inputs_are_errors_not_panics() {
    for text in [
        "apiVersion: v1\nkind: Pod\nmetadata: []\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: [x]}\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {cpu: x}}}]}\n",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {selector: {matchExpressions: [{key: \"\", operator: In, values: [a]}]}}\n",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: \"-\"}\nspec: {}\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {\"\": \"\"}}\nspec: {containers: [{name: c}]}\n",
    ] {
        assert!(read(text).is_err(), "{text}");
    }
}

const PROVREQ: &str = "apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata:
  name: train
  namespace: ml
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  podSets:
  - podTemplateRef:
      name: trainer
    count: 4
---
apiVersion: v1
kind: PodTemplate
metadata:
  name: trainer
  namespace: ml
template:
  spec:
    containers:
    - name: t
      image: t:1
      resources:
        requests: {cpu: '2', memory: 4Gi}
";

/// The ProvisioningRequest CRD (`autoscaling.x-k8s.io/v1` types.go): pod
/// sets resolve their `podTemplateRef` in the same namespace, even when
/// the PodTemplate comes later in the file.
#[test]
fn a_provisioning_request_resolves_its_pod_templates() {
    let (core, _) = read(PROVREQ).unwrap();
    let [req] = core.provisioning_requests.as_slice() else {
        panic!("one request expected");
    };
    assert_eq!((req.namespace.as_str(), req.name.as_str()), ("ml", "train"));
    assert_eq!(
        req.class,
        crate::kube::provisioning_request::ProvisioningClass::BestEffortAtomicScaleUp
    );
    assert_eq!(req.pod_count(), 4);
    assert_eq!(req.pod_sets[0].template.requests.cpu_millis(), 2000);
    assert!(core.workloads.is_empty(), "a PodTemplate creates no pods");
}

/// A reference to a PodTemplate that is not there is an error naming the
/// file, line and field; so are unknown classes, parameters and fields.
#[test]
fn provisioning_request_mistakes_are_errors_at_their_field() {
    let missing = PROVREQ.replace("name: trainer\n    count", "name: traner\n    count");
    assert_eq!(
        error(&missing),
        "m.yaml:10:13: spec.podSets[0].podTemplateRef.name: no PodTemplate \"traner\" in namespace \"ml\" among these manifests (a ProvisioningRequest's PodTemplates are applied with it)"
    );
    let class = PROVREQ.replace("best-effort-atomic-scale-up", "queued");
    assert!(
        error(&class).starts_with("m.yaml:7:26: spec.provisioningClassName: provisioning class \"queued.autoscaling.x-k8s.io\" is not one Cluster Autoscaler implements"),
        "{}",
        error(&class)
    );
    let param = PROVREQ.replace(
        "  podSets:",
        "  parameters: {ValidUntilSeconds: '60'}\n  podSets:",
    );
    assert!(error(&param).contains(
        "spec.parameters.ValidUntilSeconds: parameter \"ValidUntilSeconds\" is not modelled"
    ));
    let zero = PROVREQ.replace("count: 4", "count: 0");
    assert!(
        error(&zero).contains("spec.podSets[0].count: count must be from 1 to 100000, found 0")
    );
    let typo = PROVREQ.replace("    count: 4", "    count: 4\n    cont: 1");
    assert!(
        error(&typo).contains("unknown field \"cont\""),
        "{}",
        error(&typo)
    );
}
