use std::fs;
use std::path::Path;

use super::sections::{reason_class, savings_per_hour};
use super::*;

const NODECLAIMS_HEADER: &str = "name,nodepool,instance_type,capacity_type,zone,price_usd_per_hour,launched_at_s,ready_at_s,deleted_at_s,reason_deleted,cost_usd,reason_launched\n";

fn summary(variant: &str) -> String {
    format!(
        r#"{{"scenario":"demo <&>","variant":"{variant}","duration_s":7200.0,"total_cost_usd":2.5,
        "node_hours":3.0,"peak_nodes":2,"nodeclaims_launched":2,"cpu_allocation":0.5,
        "memory_allocation":0.4,"unschedulable_reasons":[{{"reason":"0/2 nodes are available: 2 Insufficient cpu.","pods":3,"example":"default/big-1"}}]}}"#
    )
}

/// A Karpenter variant `karp` and a Cluster Autoscaler variant `ca`, with
/// a comparison chart and one variant chart carrying an XML prolog.
fn sample_report(root: &Path) {
    let karp = root.join("karp");
    let ca = root.join("ca");
    fs::create_dir_all(&karp).unwrap();
    fs::create_dir_all(&ca).unwrap();
    fs::write(karp.join("summary.json"), summary("karp")).unwrap();
    fs::write(ca.join("summary.json"), summary("ca")).unwrap();
    let mut claims = NODECLAIMS_HEADER.to_string();
    for i in 0..25 {
        claims.push_str(&format!(
            "np-{i:05},np,m5.large,spot,us-east-1a,0.{:06},1.000,30.000,,,0.100000,provisioning\n",
            10_000 + i
        ));
    }
    fs::write(karp.join("nodeclaims.csv"), claims).unwrap();
    fs::write(
        karp.join("events.csv"),
        "time_s,type,reason,object,message\n\
         5.000,Warning,FailedScheduling,pod/default/a,no nodes available to schedule pods\n\
         6.000,Warning,FailedScheduling,pod/default/b,no nodes available to schedule pods\n\
         60.000,Normal,DisruptionTerminating,node/np-00001,\"Disrupting Node: delete 2 empty nodes (m5.large, m5.large): saves $0.2/h\"\n\
         60.000,Normal,DisruptionTerminating,node/np-00002,\"Disrupting Node: delete 2 empty nodes (m5.large, m5.large): saves $0.2/h\"\n\
         90.000,Warning,SpotInterrupted,nodeclaim/np-00003,Spot interruption warning <b>\n",
    )
    .unwrap();
    fs::write(
        karp.join("disruption.csv"),
        "node,time_s,reason\n\
         np-00004,10.000,\"pdb \"\"shop/api\"\" prevents pod evictions\"\n\
         np-00005,10.000,Can't replace with a cheaper node\n\
         np-00006,12.000,Can't replace with a cheaper node\n",
    )
    .unwrap();
    fs::write(
        ca.join("nodes.csv"),
        format!("{NODECLAIMS_HEADER}g-00001,g,m5.xlarge,on-demand,us-east-1a,0.192000,10.000,40.000,100.000,cluster-autoscaler scale-down (empty),0.004800,scale-up\n"),
    )
    .unwrap();
    fs::write(
        ca.join("events.csv"),
        "time_s,type,reason,object,message\n\
         95.000,Normal,ScaleDown,node/g-00001,marked the node as toBeDeleted/unschedulable (empty); removing node\n",
    )
    .unwrap();
    fs::write(
        ca.join("scaledown.csv"),
        "time_s,node,reason\n40.000,g-00001,NotUnneededLongEnough\n",
    )
    .unwrap();
    fs::write(
        root.join("cost.svg"),
        "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\"><rect id=\"cost-chart\" width=\"10\" height=\"10\"/></svg>\n",
    )
    .unwrap();
    fs::write(
        karp.join("pending.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\"><circle id=\"pending-chart\" r=\"4\"/></svg>",
    )
    .unwrap();
    fs::write(
        karp.join("nodes-by-type.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\"><circle id=\"types-chart\" r=\"4\"/></svg>",
    )
    .unwrap();
}

fn rendered() -> String {
    let dir = tempfile::tempdir().unwrap();
    sample_report(dir.path());
    render_report(dir.path()).unwrap()
}

#[test]
fn page_is_one_self_contained_document() {
    let html = rendered();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<html").count(), 1);
    assert!(!html.contains("<?xml"), "prolog stripped");
    for external in [
        "src=\"http",
        "href=\"http",
        "<script",
        "<link",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(external), "{external}");
    }
    assert!(html.contains("<svg xmlns"));
}

#[test]
fn header_names_the_pricing_once_when_shared() {
    let dir = tempfile::tempdir().unwrap();
    sample_report(dir.path());
    for variant in ["karp", "ca"] {
        let path = dir.path().join(variant).join("summary.json");
        let mut json: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        json["pricing"] =
            serde_json::json!({"region": "us-east-1", "date": "2025-06-01", "source": "s"});
        fs::write(&path, json.to_string()).unwrap();
    }
    let html = render_report(dir.path()).unwrap();
    assert_eq!(
        html.matches("Prices: bundled (us-east-1, 2025-06-01; s)")
            .count(),
        1
    );
}

#[test]
fn text_is_escaped() {
    let html = rendered();
    assert!(html.contains("demo &lt;&amp;&gt;"));
    assert!(!html.contains("demo <&>"));
    assert!(html.contains("warning &lt;b&gt;"));
}

#[test]
fn charts_come_comparison_first_then_each_variant_in_known_order() {
    let html = rendered();
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("{needle}"));
    assert!(at("cost-chart") < at("id=\"variant-ca\""));
    assert!(at("id=\"variant-karp\"") < at("types-chart"));
    assert!(
        at("types-chart") < at("pending-chart"),
        "nodes-by-type before pending"
    );
    assert!(html.contains("<figcaption>Pending pods</figcaption>"));
}

#[test]
fn tables_aggregate_the_reasons() {
    let html = rendered();
    assert!(html.contains("Why not consolidated") && html.contains("Why not removed"));
    // Two nodes for the same reason form one row counting both.
    assert!(
        html.contains(
            "<td class=\"long\">Can&#39;t replace with a cheaper node</td><td class=\"num\">2</td>"
        ),
        "{html}"
    );
    assert!(html.contains("NotUnneededLongEnough"));
    // Two pods, one message: one row, two events, two pods.
    assert!(html.contains(
        "<td class=\"long\">no nodes available to schedule pods</td><td class=\"num\">2</td><td class=\"num\">2</td>"
    ));
    assert!(html.contains("0/2 nodes are available: 2 Insufficient cpu."));
}

#[test]
fn decisions_show_one_row_per_command_with_its_savings() {
    let html = rendered();
    assert!(
        html.contains("<td class=\"long\">np-00001, np-00002</td>"),
        "{html}"
    );
    assert!(html.contains("$0.2000"));
    assert!(html.contains("SpotInterrupted"));
    // The CA scale-down saves the node's price.
    assert!(html.contains("$0.1920"));
}

#[test]
fn long_tables_are_capped() {
    let html = rendered();
    assert!(html.contains("5 more not shown"), "25 launches, 20 shown");
    // Most expensive first: np-00024 has the highest price.
    assert!(html.find("np-00024").unwrap() < html.find("np-00020").unwrap());
}

#[test]
fn output_is_deterministic_and_written_atomically() {
    let dir = tempfile::tempdir().unwrap();
    sample_report(dir.path());
    let first = render_report(dir.path()).unwrap();
    let path = write_report_html(dir.path()).unwrap();
    assert_eq!(path, dir.path().join(REPORT_HTML));
    assert_eq!(fs::read_to_string(&path).unwrap(), first);
    assert_eq!(render_report(dir.path()).unwrap(), first);
    let leftovers = fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with('.'))
        })
        .count();
    assert_eq!(leftovers, 0);
}

#[test]
fn order_puts_the_named_variant_first() {
    let dir = tempfile::tempdir().unwrap();
    sample_report(dir.path());
    let html = render_report_ordered(dir.path(), &["karp".to_string()]).unwrap();
    assert!(html.find("id=\"variant-karp\"").unwrap() < html.find("id=\"variant-ca\"").unwrap());
    assert!(html.contains("Δ vs karp"));
}

#[test]
fn parses_savings_from_disruption_messages() {
    assert_eq!(
        savings_per_hour("Disrupting Node: delete 1 empty node (g4dn.xlarge): saves $0.526/h"),
        Some(0.526)
    );
    assert_eq!(
        savings_per_hour("replace a with 1 of [b, c]: underutilized, saves up to $0.8104/h"),
        Some(0.8104)
    );
    assert_eq!(savings_per_hour("no saving here"), None);
}

#[test]
fn reason_classes_mask_object_names_only() {
    assert_eq!(
        reason_class("BlockedByPod pod/default/openb-pod-7661 (NotReplicated)"),
        "BlockedByPod … (NotReplicated)"
    );
    assert_eq!(
        reason_class("Not all pods would schedule, default/web-1 => would schedule against x"),
        "Not all pods would schedule, …"
    );
    assert_eq!(
        reason_class("0/3 nodes are available: 3 Insufficient cpu."),
        "0/3 nodes are available: 3 Insufficient cpu."
    );
}

#[test]
fn a_folder_without_variants_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(render_report(dir.path()), Err(HtmlError::Read(_))));
}

#[test]
fn a_digest_kept_while_writing_gives_the_page_a_read_gives() {
    use crate::run::EventsCsv;
    use crate::sim::engine::{EventRecord, EventSink, EventType};
    use crate::sim::time::{SimDuration, SimTime};
    let dir = tempfile::tempdir().unwrap();
    sample_report(dir.path());
    let event = |s: u64, kind, reason: &str, object: &str, message: &str| EventRecord {
        time: SimTime::ZERO + SimDuration::from_secs(s),
        kind,
        reason: reason.to_string(),
        object: object.to_string(),
        message: message.to_string(),
    };
    let full = "0/2 nodes are available: 2 Insufficient cpu.";
    let mut sink = EventsCsv::new(Vec::new()).unwrap();
    for record in [
        event(
            5,
            EventType::Warning,
            "FailedScheduling",
            "pod/default/a",
            full,
        ),
        event(6, EventType::Normal, "Scheduled", "pod/default/c", "bound"),
        event(
            7,
            EventType::Warning,
            "FailedScheduling",
            "pod/default/b",
            full,
        ),
        event(
            8,
            EventType::Warning,
            "FailedScheduling",
            "pod/default/a",
            full,
        ),
        event(
            9,
            EventType::Warning,
            "NotTriggerScaleUp",
            "pod/default/a",
            "no group, \"quoted\"",
        ),
        event(
            60,
            EventType::Normal,
            "DisruptionTerminating",
            "node/np-00001",
            "Disrupting Node: delete 1 empty node (m5.large): saves $0.1/h",
        ),
        event(
            90,
            EventType::Warning,
            "SpotInterrupted",
            "nodeclaim/np-00003",
            "warning <b>",
        ),
    ] {
        sink.record(record);
    }
    let digest = sink.take_digest().expect("a few rows stay under the limit");
    fs::write(
        dir.path().join("karp").join("events.csv"),
        sink.finish().unwrap(),
    )
    .unwrap();
    let read = render_report(dir.path()).unwrap();
    let digested =
        render_report_digested(dir.path(), &[], vec![("karp".to_string(), digest)]).unwrap();
    assert_eq!(read, digested);
    // The tally and the rows shown one by one are on the page.
    assert!(read.contains("Insufficient cpu."), "{read}");
    assert!(read.contains("np-00001"), "{read}");
    assert!(read.contains("warning &lt;b&gt;"), "{read}");
}
