//! `karpsim pricing`: refresh against a loopback Price List endpoint that
//! serves pages built from the real price item, `show`, a run pinning the
//! refreshed snapshot, spot import, and the one-line errors. The child
//! process gets a cleared environment: fake keys (or none), instance
//! metadata disabled and config files pointing nowhere, so nothing can
//! reach AWS.

use std::fs;

use serde_json::Value;

use crate::util::{karpsim_in, repo, single_error_line, stderr, stdout};

const POOL: &str = "\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, m5.large]}
";

const WORKLOAD: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 1200m, memory: 1Gi}}}]
";

fn scenario(pin: &str) -> String {
    format!(
        "name: pinned\nduration: 1h\nzones: [us-east-1a]\n{pin}workloads:\n  - manifests: web.yaml\n\
         variants:\n  - name: v\n    karpenter: {{nodePools: pool.yaml}}\n"
    )
}

/// The refresh tests need the AWS client (cargo feature `aws`).
#[cfg(feature = "aws")]
mod refresh {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::path::Path;
    use std::process::Output;
    use std::sync::{Arc, Mutex};

    use assert_cmd::Command;
    use serde_json::json;

    use super::*;

    const M5_LARGE_ITEM: &str =
        include_str!("../fixtures/pricing/getproducts_priceitem_m5.large_us-east-1.json");

    /// A copy of the real item with another type and On-Demand price.
    fn item(instance_type: &str, usd: &str) -> String {
        let mut item: Value = serde_json::from_str(M5_LARGE_ITEM).unwrap();
        item["product"]["attributes"]["instanceType"] = Value::from(instance_type);
        for term in item["terms"]["OnDemand"]
            .as_object_mut()
            .unwrap()
            .values_mut()
        {
            for dim in term["priceDimensions"]
                .as_object_mut()
                .unwrap()
                .values_mut()
            {
                dim["pricePerUnit"]["USD"] = Value::from(usd);
            }
        }
        item.to_string()
    }

    /// A `GetProducts` response body.
    fn page(items: &[String], next: Option<&str>) -> String {
        let mut body = json!({"FormatVersion": "aws_v1", "PriceList": items});
        if let Some(token) = next {
            body["NextToken"] = Value::from(token);
        }
        body.to_string()
    }

    /// A loopback HTTP endpoint answering each request with the next of
    /// `responses` (the last one repeats), recording the request bodies.
    struct Endpoint {
        url: String,
        requests: Arc<Mutex<Vec<String>>>,
    }

    fn serve(responses: Vec<(u16, String)>) -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                let index = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(String::from_utf8_lossy(&body).into_owned());
                    seen.len() - 1
                };
                let (status, body) = &responses[index.min(responses.len() - 1)];
                let reason = if *status == 200 { "OK" } else { "Bad Request" };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} {reason}\r\ncontent-type: application/x-amz-json-1.1\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Endpoint { url, requests }
    }

    /// Runs `karpsim` in `dir` with only the environment a test gives: the
    /// endpoint, instance metadata off, config files missing, and `keys` when
    /// true.
    fn karpsim_aws(dir: &Path, args: &[&str], endpoint: &str, keys: bool) -> Output {
        let mut command = Command::cargo_bin("karpsim").unwrap();
        command
            .current_dir(dir)
            .env_clear()
            .env("HOME", dir)
            .env("AWS_ENDPOINT_URL_PRICING", endpoint)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_CONFIG_FILE", dir.join("missing-config"))
            .env(
                "AWS_SHARED_CREDENTIALS_FILE",
                dir.join("missing-credentials"),
            )
            .env("AWS_MAX_ATTEMPTS", "2")
            .args(args);
        if keys {
            command
                .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
                .env("AWS_SECRET_ACCESS_KEY", "not-a-secret");
        }
        command.output().unwrap()
    }

    /// The instance types and prices of a run's nodeclaims.csv.
    fn launched(report: &Path) -> Vec<(String, String)> {
        let mut reader = csv::Reader::from_path(report.join("v/nodeclaims.csv")).unwrap();
        let headers = reader.headers().unwrap().clone();
        let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
        let (t, p) = (column("instance_type"), column("price_usd_per_hour"));
        reader
            .records()
            .map(|r| {
                let r = r.unwrap();
                (r[t].to_string(), r[p].to_string())
            })
            .collect()
    }

    /// Refresh through the loopback endpoint (two shared-tenancy pages, one
    /// bare-metal page), then `show` it, then a run pinning it: the report
    /// names the snapshot, and the refreshed prices decide. With the bundled
    /// prices c5.large (0.085) is cheaper than m5.large (0.096); the refresh
    /// makes c5.large 0.0999, so the pinned run launches m5.large at 0.096.
    #[test]
    fn refresh_show_and_run_with_the_refreshed_snapshot() {
        let endpoint = serve(vec![
            (
                200,
                page(
                    &[M5_LARGE_ITEM.to_string(), item("m5.xlarge", "0.2222")],
                    Some("next-page"),
                ),
            ),
            (200, page(&[item("c5.large", "0.0999000000")], None)),
            (200, page(&[item("m5.metal", "4.6080000000")], None)),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let out = karpsim_aws(
            dir.path(),
            &[
                "pricing",
                "refresh",
                "--region",
                "us-east-1",
                "--out",
                "snap/us-east-1.json",
            ],
            &endpoint.url,
            true,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("4 On-Demand prices"),
            "{}",
            stdout(&out)
        );
        let requests = endpoint.requests.lock().unwrap().clone();
        assert_eq!(
            requests.len(),
            3,
            "two shared pages and one bare-metal page"
        );
        let first: Value = serde_json::from_str(&requests[0]).unwrap();
        let second: Value = serde_json::from_str(&requests[1]).unwrap();
        assert_eq!(second["NextToken"], "next-page");
        let filters = first["Filters"].as_array().unwrap();
        for (field, value) in [
            ("regionCode", "us-east-1"),
            ("operatingSystem", "Linux"),
            ("tenancy", "Shared"),
            ("preInstalledSw", "NA"),
            ("capacitystatus", "Used"),
        ] {
            assert!(
                filters
                    .iter()
                    .any(|f| f["Field"] == field && f["Value"] == value),
                "{field}={value} in {filters:?}"
            );
        }

        let snapshot_path = dir.path().join("snap/us-east-1.json");
        let snapshot: Value =
            serde_json::from_str(&fs::read_to_string(&snapshot_path).unwrap()).unwrap();
        assert_eq!(snapshot["onDemand"]["m5.large"], "0.096");
        assert_eq!(snapshot["onDemand"]["c5.large"], "0.0999");
        assert_eq!(snapshot["onDemand"].as_object().unwrap().len(), 4);
        let date = snapshot["date"].as_str().unwrap().to_string();

        let show = karpsim_in(
            dir.path(),
            &["pricing", "show", "--snapshot", "snap/us-east-1.json"],
        );
        assert!(show.status.success(), "{}", stderr(&show));
        let text = stdout(&show);
        assert!(
            text.contains("snapshot:        snap/us-east-1.json"),
            "{text}"
        );
        assert!(text.contains(&format!("date:            {date}")), "{text}");
        assert!(text.contains("AWS Price List API GetProducts"), "{text}");
        assert!(
            text.contains("4 in the catalog (4 On-Demand prices"),
            "{text}"
        );

        fs::write(dir.path().join("web.yaml"), WORKLOAD).unwrap();
        fs::write(dir.path().join("pool.yaml"), POOL).unwrap();
        fs::write(
            dir.path().join("pinned.yaml"),
            scenario("pricingSnapshot: snap/us-east-1.json\n"),
        )
        .unwrap();
        fs::write(dir.path().join("bundled.yaml"), scenario("")).unwrap();
        for (file, report) in [("pinned.yaml", "pinned"), ("bundled.yaml", "bundled")] {
            let run = karpsim_in(dir.path(), &["run", file, "--out", report]);
            assert!(run.status.success(), "{}", stderr(&run));
            let shown = if file == "pinned.yaml" {
                format!("pricing: snap/us-east-1.json (us-east-1, {date}): AWS Price List API")
            } else {
                "pricing: bundled snapshot (us-east-1, 2026-07-20): Karpenter's".to_string()
            };
            assert!(stdout(&run).contains(&shown), "{}", stdout(&run));
        }
        let summary: Value = serde_json::from_str(
            &fs::read_to_string(dir.path().join("pinned/v/summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["pricing"]["region"], "us-east-1");
        assert_eq!(summary["pricing"]["date"], date.as_str());
        assert_eq!(summary["pricing"]["file"], "snap/us-east-1.json");
        assert!(
            summary["pricing"]["source"]
                .as_str()
                .unwrap()
                .contains("GetProducts"),
            "{summary}"
        );
        let pinned = launched(&dir.path().join("pinned"));
        assert!(!pinned.is_empty());
        assert!(
            pinned
                .iter()
                .all(|(t, p)| t == "m5.large" && p == "0.096000"),
            "{pinned:?}"
        );
        let bundled = launched(&dir.path().join("bundled"));
        assert!(
            bundled
                .iter()
                .all(|(t, p)| t == "c5.large" && p == "0.085000"),
            "{bundled:?}"
        );
        let bundled_summary: Value = serde_json::from_str(
            &fs::read_to_string(dir.path().join("bundled/v/summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(bundled_summary["pricing"]["date"], "2026-07-20");
        assert!(bundled_summary["pricing"].get("file").is_none());
    }

    /// No keys anywhere in the chain: one line naming the missing
    /// credentials, and no request is sent.
    #[test]
    fn refresh_without_credentials_is_one_line() {
        let endpoint = serve(vec![(200, page(&[], None))]);
        let dir = tempfile::tempdir().unwrap();
        let out = karpsim_aws(
            dir.path(),
            &[
                "pricing",
                "refresh",
                "--region",
                "us-east-1",
                "--out",
                "s.json",
            ],
            &endpoint.url,
            false,
        );
        let line = single_error_line(&out);
        assert!(line.contains("no AWS credentials found"), "{line}");
        assert!(endpoint.requests.lock().unwrap().is_empty());
        assert!(!dir.path().join("s.json").exists());
    }

    /// A throttling endpoint: retried once (AWS_MAX_ATTEMPTS=2), then one line.
    #[test]
    fn refresh_throttled_is_one_line() {
        let throttled = json!({"__type": "ThrottlingException", "message": "Rate exceeded"});
        let endpoint = serve(vec![(400, throttled.to_string())]);
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let out = karpsim_aws(
            dir.path(),
            &[
                "pricing",
                "refresh",
                "--region",
                "us-east-1",
                "--out",
                "s.json",
            ],
            &endpoint.url,
            true,
        );
        let line = single_error_line(&out);
        assert!(
            line.contains("throttled the request (ThrottlingException: Rate exceeded)"),
            "{line}"
        );
        assert_eq!(endpoint.requests.lock().unwrap().len(), 2);
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
        assert!(!dir.path().join("s.json").exists());
    }

    /// A malformed item: one line naming the page, the item and the field; no
    /// snapshot written.
    #[test]
    fn refresh_with_malformed_item_is_one_line() {
        let broken = item("m5.xlarge", "about ten cents");
        let endpoint = serve(vec![(
            200,
            page(&[M5_LARGE_ITEM.to_string(), broken], None),
        )]);
        let dir = tempfile::tempdir().unwrap();
        let out = karpsim_aws(
            dir.path(),
            &[
                "pricing",
                "refresh",
                "--region",
                "us-east-1",
                "--out",
                "s.json",
            ],
            &endpoint.url,
            true,
        );
        let line = single_error_line(&out);
        assert!(
            line.contains("GetProducts (shared tenancy) page 1, item 1: terms.OnDemand.")
                && line.contains(
                    "pricePerUnit.USD: not a decimal number of dollars: \"about ten cents\""
                ),
            "{line}"
        );
        assert!(!dir.path().join("s.json").exists());
    }
}

/// Without the `aws` feature, refresh says so (import-spot and show work).
#[cfg(not(feature = "aws"))]
#[test]
fn refresh_without_aws_support_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = karpsim_in(dir.path(), &["pricing", "refresh", "--region", "us-east-1"]);
    let line = single_error_line(&out);
    assert!(line.contains("built without AWS support"), "{line}");
}

/// Importing the real spot history into a new snapshot (bundled On-Demand
/// prices), then showing it, then pinning it: m5.large spot runs in the
/// imported zones at the imported prices.
#[test]
fn import_spot_creates_a_snapshot_with_zone_prices() {
    let dir = tempfile::tempdir().unwrap();
    let history =
        repo().join("tests/fixtures/spot/ec2_describe_spot_price_history_m5.large_us-east-1.json");
    let out = karpsim_in(
        dir.path(),
        &[
            "pricing",
            "import-spot",
            history.to_str().unwrap(),
            "--out",
            "spot.json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("created spot.json: 5 zone prices of 1 types"),
        "{text}"
    );
    let snapshot: Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("spot.json")).unwrap()).unwrap();
    assert_eq!(
        snapshot["spot"]["prices"]["m5.large"]["us-east-1a"],
        "0.0423"
    );
    assert_eq!(snapshot["spot"]["date"], "2021-02-09T01:40:10Z");
    assert_eq!(snapshot["date"], "2026-07-20");

    // A second import of the same file replaces the same five prices
    // (`--snapshot`, the flag's old name, still works).
    let again = karpsim_in(
        dir.path(),
        &[
            "pricing",
            "import-spot",
            history.to_str().unwrap(),
            "--snapshot",
            "spot.json",
        ],
    );
    assert!(
        stdout(&again).starts_with("updated spot.json: 5 zone prices"),
        "{}",
        stdout(&again)
    );

    let show = karpsim_in(dir.path(), &["pricing", "show", "--snapshot", "spot.json"]);
    let text = stdout(&show);
    assert!(
        text.contains("5 imported zone prices as of 2021-02-09T01:40:10Z"),
        "{text}"
    );

    let bad = karpsim_in(
        dir.path(),
        &[
            "pricing",
            "show",
            "--snapshot",
            "spot.json",
            "--region",
            "eu-west-1",
        ],
    );
    let line = single_error_line(&bad);
    assert!(
        line.contains("spot.json holds prices for us-east-1, not eu-west-1"),
        "{line}"
    );
}

/// `show` with no file: the bundled snapshot and its provenance.
#[test]
fn show_bundled_snapshot() {
    let out = karpsim_in(&repo(), &["pricing", "show", "--region", "eu-west-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("snapshot:        bundled"), "{text}");
    assert!(text.contains("region:          eu-west-1"), "{text}");
    assert!(text.contains("date:            2025-04-04"), "{text}");
}

/// A pinned snapshot of another region is refused at prepare time, in one
/// line.
#[test]
fn pinned_snapshot_of_another_region_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("eu.json"),
        r#"{"format":"karpsim-pricing-snapshot/1","region":"eu-west-1","date":"d","source":"s","onDemand":{"m5.large":"0.1"}}"#,
    )
    .unwrap();
    fs::write(dir.path().join("web.yaml"), WORKLOAD).unwrap();
    fs::write(dir.path().join("pool.yaml"), POOL).unwrap();
    fs::write(
        dir.path().join("s.yaml"),
        scenario("pricingSnapshot: eu.json\n"),
    )
    .unwrap();
    let out = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "r"]);
    let line = single_error_line(&out);
    assert!(
        line.contains("pricingSnapshot eu.json holds prices for eu-west-1, but the scenario's region is us-east-1"),
        "{line}"
    );
}
