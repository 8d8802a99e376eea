//! Offline tests of the refresh client: a replay HTTP client answers with
//! recorded-style `GetProducts` pages built from the real price item, and
//! the tests look at what the SDK sent. Nothing reaches the network.

use std::time::Duration;

use aws_sdk_pricing::Client;
use aws_sdk_pricing::config::retry::RetryConfig;
use aws_sdk_pricing::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_http_client::test_util::{ReplayEvent, StaticReplayClient};
use aws_smithy_types::body::SdkBody;
use serde_json::{Value, json};

use super::*;
use karpsim_model::cloud::Price;

const M5_LARGE_ITEM: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/pricing/getproducts_priceitem_m5.large_us-east-1.json"
));

/// The real item with another instance type and On-Demand price; a
/// Reserved price of the copy is set far off, to show it is ignored.
fn item(instance_type: &str, usd: &str) -> String {
    let mut item: Value = serde_json::from_str(M5_LARGE_ITEM).unwrap();
    item["product"]["attributes"]["instanceType"] = Value::from(instance_type);
    for terms in ["OnDemand", "Reserved"] {
        let price = if terms == "OnDemand" { usd } else { "99.0" };
        for term in item["terms"][terms].as_object_mut().unwrap().values_mut() {
            for dim in term["priceDimensions"]
                .as_object_mut()
                .unwrap()
                .values_mut()
            {
                dim["pricePerUnit"]["USD"] = Value::from(price);
            }
        }
    }
    item.to_string()
}

/// A `GetProducts` wire body: items as JSON strings, and a `NextToken` on
/// every page but the last.
fn page(items: &[String], next: Option<&str>) -> String {
    let mut body = json!({"FormatVersion": "aws_v1", "PriceList": items});
    if let Some(token) = next {
        body["NextToken"] = Value::from(token);
    }
    body.to_string()
}

fn event(body: String, status: u16) -> ReplayEvent {
    let request = http::Request::builder()
        .uri("https://api.pricing.us-east-1.amazonaws.com/")
        .body(SdkBody::empty())
        .unwrap();
    let response = http::Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.1")
        .body(SdkBody::from(body))
        .unwrap();
    ReplayEvent::new(request, response)
}

fn client(replay: &StaticReplayClient, attempts: u32) -> Client {
    let config = aws_sdk_pricing::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKID", "secret", None, None, "test"))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(attempts)
                .with_initial_backoff(Duration::from_millis(1)),
        )
        .http_client(replay.clone())
        .build();
    Client::from_conf(config)
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

fn sent_bodies(replay: &StaticReplayClient) -> Vec<Value> {
    replay
        .actual_requests()
        .map(|request| {
            assert_eq!(
                request.headers().get("x-amz-target"),
                Some("AWSPriceListService.GetProducts")
            );
            serde_json::from_slice(request.body().bytes().unwrap()).unwrap()
        })
        .collect()
}

fn filter_value(body: &Value, field: &str) -> Option<String> {
    body["Filters"]
        .as_array()?
        .iter()
        .find(|f| f["Field"] == field)
        .map(|f| {
            assert_eq!(f["Type"], "TERM_MATCH");
            f["Value"].as_str().unwrap().to_string()
        })
}

/// Two shared-tenancy pages and one bare-metal page: every page is asked
/// for (the second with the first's NextToken), both queries carry
/// Karpenter's filters (reference §6), and only On-Demand prices land in
/// the table (aws: pkg/providers/pricing/pricing.go `onDemandPage`).
#[test]
fn paginates_both_queries_with_karpenters_filters() {
    let replay = StaticReplayClient::new(vec![
        event(
            page(
                &[M5_LARGE_ITEM.to_string(), item("m5.xlarge", "0.192")],
                Some("page-2"),
            ),
            200,
        ),
        event(page(&[item("c5.large", "0.0850000000")], None), 200),
        event(page(&[item("m5.metal", "4.6080000000")], None), 200),
    ]);
    let table = block_on(fetch_on_demand(&client(&replay, 1), "eu-west-1")).unwrap();
    assert_eq!(table.pages, 3);
    assert_eq!(table.items, 4);
    let prices: Vec<(&str, Price)> = table
        .prices
        .iter()
        .map(|(name, price)| (name.as_str(), *price))
        .collect();
    assert_eq!(
        prices,
        vec![
            ("c5.large", Price::from_micros(85_000)),
            ("m5.large", Price::from_micros(96_000)),
            ("m5.metal", Price::from_micros(4_608_000)),
            ("m5.xlarge", Price::from_micros(192_000)),
        ]
    );

    let bodies = sent_bodies(&replay);
    assert_eq!(bodies.len(), 3, "one request per page");
    assert_eq!(bodies[0].get("NextToken"), None);
    assert_eq!(bodies[1]["NextToken"], "page-2");
    assert_eq!(bodies[2].get("NextToken"), None);
    for body in &bodies {
        assert_eq!(body["ServiceCode"], "AmazonEC2");
        assert_eq!(body["MaxResults"], 100);
        assert_eq!(
            filter_value(body, "regionCode").as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(
            filter_value(body, "operatingSystem").as_deref(),
            Some("Linux")
        );
        assert_eq!(filter_value(body, "preInstalledSw").as_deref(), Some("NA"));
        assert_eq!(
            filter_value(body, "capacitystatus").as_deref(),
            Some("Used")
        );
        assert_eq!(
            filter_value(body, "marketoption").as_deref(),
            Some("OnDemand")
        );
    }
    assert_eq!(
        filter_value(&bodies[0], "tenancy").as_deref(),
        Some("Shared")
    );
    assert_eq!(
        filter_value(&bodies[1], "tenancy").as_deref(),
        Some("Shared")
    );
    assert_eq!(
        filter_value(&bodies[2], "tenancy").as_deref(),
        Some("Dedicated")
    );
}

/// Throttling is retried as configured, then reported as one line.
#[test]
fn throttling_is_retried_then_reported() {
    let throttled = || {
        event(
            json!({"__type": "ThrottlingException", "message": "Rate exceeded"}).to_string(),
            400,
        )
    };
    let replay = StaticReplayClient::new(vec![throttled(), throttled()]);
    let err = block_on(fetch_on_demand(&client(&replay, 2), "us-east-1")).unwrap_err();
    assert_eq!(replay.actual_requests().count(), 2, "one retry");
    assert_eq!(
        err,
        RefreshError::Throttled {
            code: "ThrottlingException".into(),
            message: "Rate exceeded".into()
        }
    );
}

/// A malformed item stops the refresh with its page, index and field.
#[test]
fn malformed_item_names_page_index_and_field() {
    let replay = StaticReplayClient::new(vec![
        event(page(&[M5_LARGE_ITEM.to_string()], Some("t")), 200),
        event(
            page(&[item("c5.large", "0.085"), "{\"terms\":{}}".into()], None),
            200,
        ),
    ]);
    let err = block_on(fetch_on_demand(&client(&replay, 1), "us-east-1")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "GetProducts (shared tenancy) page 2, item 1: product.attributes.instanceType: missing"
    );
}

#[test]
fn snapshot_records_the_source() {
    let mut table = OnDemandTable::default();
    table
        .add_page(Query::Shared, 1, &[M5_LARGE_ITEM.to_string()])
        .unwrap();
    let snapshot = snapshot_of(
        "us-east-1",
        None,
        table,
        Timestamp::from_unix_millis(1_764_468_000_000),
    );
    assert_eq!(snapshot.date, "2025-11-30T02:00:00Z");
    assert!(
        snapshot
            .source
            .contains("us-east-1 endpoint): 1 pages, 1 items, published 2021-02-05T20:45:00Z"),
        "{}",
        snapshot.source
    );
    assert_eq!(snapshot.on_demand["m5.large"], Price::from_micros(96_000));
}
