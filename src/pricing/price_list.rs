//! The AWS Price List side of `karpsim pricing refresh`, pure: the
//! `GetProducts` queries Karpenter makes for On-Demand Linux prices, and the
//! reading of the price items they return.
//!
//! Karpenter (aws: pkg/providers/pricing/pricing.go `UpdateOnDemandPricing`)
//! asks for service `AmazonEC2` with TERM_MATCH filters on `regionCode`,
//! `serviceCode`, `preInstalledSw=NA`, `operatingSystem=Linux`,
//! `capacitystatus=Used` and `marketoption=OnDemand`, in two queries:
//! shared tenancy `Compute Instance`, and dedicated `Compute Instance (bare
//! metal)`; results are merged, the bare-metal query last.
//!
//! Each item of a page's `PriceList` is a JSON document given as a string.
//! The instance type is `product.attributes.instanceType`; the price is
//! `pricePerUnit.USD` of a price dimension of a term under `terms.OnDemand`.
//! Reserved and any other terms are ignored. A zero price is skipped, as
//! Karpenter skips it. Unlike Karpenter, which logs and skips an item it
//! cannot read, a malformed item is an error naming the page, the item and
//! the field, so that a snapshot is never written from a partial answer.

use std::collections::BTreeMap;

use serde_json::Value;

use karpsim_model::cloud::Price;

/// The Price List service code of EC2.
pub const SERVICE_CODE: &str = "AmazonEC2";

/// Items per page Karpenter asks for (the API's maximum).
pub const PAGE_SIZE: i32 = 100;

/// One of the two `GetProducts` queries of a refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// Shared-tenancy instances (`productFamily` `Compute Instance`).
    Shared,
    /// Bare-metal instances, priced as dedicated tenancy.
    BareMetal,
}

impl Query {
    /// Both queries, in the order their results are merged.
    pub const ALL: [Query; 2] = [Query::Shared, Query::BareMetal];

    /// A short name for messages.
    pub fn label(self) -> &'static str {
        match self {
            Query::Shared => "shared tenancy",
            Query::BareMetal => "bare metal",
        }
    }

    /// The TERM_MATCH filters `(field, value)` of this query for `region`.
    pub fn filters(self, region: &str) -> Vec<(&'static str, String)> {
        let (tenancy, family) = match self {
            Query::Shared => ("Shared", "Compute Instance"),
            Query::BareMetal => ("Dedicated", "Compute Instance (bare metal)"),
        };
        [
            ("regionCode", region),
            ("serviceCode", SERVICE_CODE),
            ("preInstalledSw", "NA"),
            ("operatingSystem", "Linux"),
            ("capacitystatus", "Used"),
            ("marketoption", "OnDemand"),
            ("tenancy", tenancy),
            ("productFamily", family),
        ]
        .into_iter()
        .map(|(field, value)| (field, value.to_string()))
        .collect()
    }
}

/// The region of the Price List endpoint to ask for prices of `region`
/// (Karpenter's choice: the API lives in a few regions only).
pub fn endpoint_region(region: &str) -> &'static str {
    if region.starts_with("ap-") {
        "ap-south-1"
    } else if region.starts_with("eu-") {
        "eu-central-1"
    } else if region.starts_with("cn-") {
        "cn-northwest-1"
    } else {
        "us-east-1"
    }
}

/// What one price item says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceItem {
    /// `product.attributes.instanceType`.
    pub instance_type: String,
    /// The On-Demand price per hour; `None` when every On-Demand price is
    /// zero (skipped).
    pub price: Option<Price>,
    /// `publicationDate`, when present.
    pub publication_date: Option<String>,
}

/// Why a price item is unusable: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ItemProblem {
    /// The field path, e.g. `product.attributes.instanceType`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

fn problem(field: impl Into<String>, reason: impl Into<String>) -> ItemProblem {
    ItemProblem {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Reads one price item (the text of one `PriceList` element).
pub fn parse_price_item(text: &str) -> Result<PriceItem, ItemProblem> {
    let item: Value = serde_json::from_str(text)
        .map_err(|err| problem("(item)", format!("not valid JSON: {err}")))?;
    if !item.is_object() {
        return Err(problem("(item)", "expected a JSON object"));
    }
    let instance_type = match item.pointer("/product/attributes/instanceType") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) => {
            return Err(problem("product.attributes.instanceType", "is empty"));
        }
        Some(other) => {
            return Err(problem(
                "product.attributes.instanceType",
                format!("expected a string, found {other}"),
            ));
        }
        None => return Err(problem("product.attributes.instanceType", "missing")),
    };
    let terms = match item.pointer("/terms/OnDemand") {
        Some(Value::Object(terms)) => terms,
        Some(_) => return Err(problem("terms.OnDemand", "expected an object")),
        None => return Err(problem("terms.OnDemand", "missing")),
    };
    let mut prices: Vec<(Price, String)> = Vec::new();
    for (term_code, term) in terms {
        let field = format!("terms.OnDemand.{term_code}.priceDimensions");
        let Some(Value::Object(dimensions)) = term.get("priceDimensions") else {
            return Err(problem(field, "missing or not an object"));
        };
        for (rate_code, dimension) in dimensions {
            let field = format!("{field}.{rate_code}.pricePerUnit.USD");
            let text = match dimension.pointer("/pricePerUnit/USD") {
                Some(Value::String(text)) => text,
                Some(other) => {
                    return Err(problem(field, format!("expected a string, found {other}")));
                }
                None => return Err(problem(field, "missing")),
            };
            let price = Price::parse_dollars(text).ok_or_else(|| {
                problem(
                    field.clone(),
                    format!("not a decimal number of dollars: {text:?}"),
                )
            })?;
            if price > Price::ZERO {
                prices.push((price, field));
            }
        }
    }
    if let [(first, first_field), rest @ ..] = prices.as_slice()
        && let Some((other, field)) = rest.iter().find(|(p, _)| p != first)
    {
        return Err(problem(
            field.clone(),
            format!("On-Demand price {other} differs from {first} at {first_field}"),
        ));
    }
    Ok(PriceItem {
        instance_type,
        price: prices.first().map(|(p, _)| *p),
        publication_date: item
            .get("publicationDate")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// A malformed item of a `GetProducts` answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("GetProducts ({query}) page {page}, item {item}: {problem}")]
pub struct PriceListError {
    /// The query's label.
    pub query: &'static str,
    /// 1-based page number within the query.
    pub page: usize,
    /// 0-based index of the item in the page's `PriceList`.
    pub item: usize,
    /// What is wrong.
    pub problem: ItemProblem,
}

/// The On-Demand prices read so far from `GetProducts` pages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OnDemandTable {
    /// Instance type → price; a later item overrides an earlier one.
    pub prices: BTreeMap<String, Price>,
    /// Pages read.
    pub pages: usize,
    /// Items read.
    pub items: usize,
    /// Items whose On-Demand prices were all zero.
    pub zero_priced: usize,
    /// The latest `publicationDate` among the items.
    pub published: Option<String>,
}

impl OnDemandTable {
    /// Reads one page's `PriceList` of `query`; `page` is its 1-based number
    /// within the query. Nothing is added when an item is malformed.
    pub fn add_page(
        &mut self,
        query: Query,
        page: usize,
        price_list: &[String],
    ) -> Result<(), PriceListError> {
        let items = price_list
            .iter()
            .enumerate()
            .map(|(index, text)| {
                parse_price_item(text).map_err(|problem| PriceListError {
                    query: query.label(),
                    page,
                    item: index,
                    problem,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.pages += 1;
        for item in items {
            self.items += 1;
            // RFC 3339 instants of one format compare as text.
            if let Some(date) = item.publication_date
                && self.published.as_ref().is_none_or(|latest| *latest < date)
            {
                self.published = Some(date);
            }
            match item.price {
                Some(price) => {
                    self.prices.insert(item.instance_type, price);
                }
                None => self.zero_priced += 1,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real price item of the shared fixtures (m5.large, us-east-1,
    /// On-Demand 0.096 USD plus 12 Reserved terms).
    pub(crate) const M5_LARGE_ITEM: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pricing/getproducts_priceitem_m5.large_us-east-1.json"
    ));

    /// aws: pricing.go `onDemandPage` reads `pricePerUnit.USD` of the
    /// On-Demand terms; the fixture's Reserved terms (0.06 and others) must
    /// not leak in.
    #[test]
    fn reads_the_on_demand_price_of_the_real_item() {
        let item = parse_price_item(M5_LARGE_ITEM).unwrap();
        assert_eq!(item.instance_type, "m5.large");
        assert_eq!(item.price, Some(Price::from_micros(96_000)));
        assert_eq!(
            item.publication_date.as_deref(),
            Some("2021-02-05T20:45:00Z")
        );
    }

    fn edited(edit: impl FnOnce(&mut Value)) -> String {
        let mut item: Value = serde_json::from_str(M5_LARGE_ITEM).unwrap();
        edit(&mut item);
        item.to_string()
    }

    fn usd(item: &mut Value) -> &mut Value {
        let terms = item["terms"]["OnDemand"].as_object_mut().unwrap();
        let term = terms.values_mut().next().unwrap();
        let dims = term["priceDimensions"].as_object_mut().unwrap();
        let dim = dims.values_mut().next().unwrap();
        &mut dim["pricePerUnit"]["USD"]
    }

    #[test]
    fn malformed_items_name_the_field() {
        let no_type = edited(|item| {
            item["product"]["attributes"]
                .as_object_mut()
                .unwrap()
                .remove("instanceType");
        });
        let err = parse_price_item(&no_type).unwrap_err();
        assert_eq!(err.field, "product.attributes.instanceType");
        assert_eq!(err.reason, "missing");

        let bad_price = edited(|item| *usd(item) = Value::from("cheap"));
        let err = parse_price_item(&bad_price).unwrap_err();
        assert_eq!(
            err.field,
            "terms.OnDemand.6C86BEPQVG73ZGGR.JRTCKXETXF.priceDimensions.\
             6C86BEPQVG73ZGGR.JRTCKXETXF.6YS6EN2CT7.pricePerUnit.USD"
        );
        assert!(err.reason.contains("\"cheap\""), "{err}");

        let no_terms = edited(|item| {
            item["terms"].as_object_mut().unwrap().remove("OnDemand");
        });
        assert_eq!(
            parse_price_item(&no_terms).unwrap_err().field,
            "terms.OnDemand"
        );
        assert_eq!(parse_price_item("{").unwrap_err().field, "(item)");
        assert_eq!(parse_price_item("[1]").unwrap_err().field, "(item)");
    }

    /// aws: pricing.go skips a zero price.
    #[test]
    fn zero_price_is_skipped_not_an_error() {
        let free = edited(|item| *usd(item) = Value::from("0.0000000000"));
        let item = parse_price_item(&free).unwrap();
        assert_eq!(item.price, None);
        let mut table = OnDemandTable::default();
        table.add_page(Query::Shared, 1, &[free]).unwrap();
        assert_eq!(table.zero_priced, 1);
        assert!(table.prices.is_empty());
    }

    #[test]
    fn pages_accumulate_and_a_bad_item_adds_nothing() {
        let m5_xlarge = edited(|item| {
            item["product"]["attributes"]["instanceType"] = Value::from("m5.xlarge");
            *usd(item) = Value::from("0.1920000000");
        });
        let mut table = OnDemandTable::default();
        table
            .add_page(Query::Shared, 1, &[M5_LARGE_ITEM.to_string()])
            .unwrap();
        let broken = edited(|item| *usd(item) = Value::from(0.5));
        let err = table
            .add_page(Query::Shared, 2, &[m5_xlarge.clone(), broken])
            .unwrap_err();
        assert_eq!((err.page, err.item), (2, 1));
        assert!(
            err.to_string()
                .starts_with("GetProducts (shared tenancy) page 2, item 1: terms.OnDemand."),
            "{err}"
        );
        assert_eq!(table.prices.len(), 1);
        table.add_page(Query::Shared, 2, &[m5_xlarge]).unwrap();
        assert_eq!(table.pages, 2);
        assert_eq!(table.items, 2);
        assert_eq!(table.prices["m5.xlarge"], Price::from_micros(192_000));
        assert_eq!(table.published.as_deref(), Some("2021-02-05T20:45:00Z"));
    }

    /// reference §6: the filters Karpenter sends, per query.
    #[test]
    fn filters_match_karpenter() {
        let shared = Query::Shared.filters("eu-west-1");
        let get = |filters: &[(&str, String)], key: &str| {
            filters
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get(&shared, "regionCode").as_deref(), Some("eu-west-1"));
        assert_eq!(get(&shared, "operatingSystem").as_deref(), Some("Linux"));
        assert_eq!(get(&shared, "tenancy").as_deref(), Some("Shared"));
        assert_eq!(get(&shared, "preInstalledSw").as_deref(), Some("NA"));
        assert_eq!(get(&shared, "capacitystatus").as_deref(), Some("Used"));
        assert_eq!(get(&shared, "marketoption").as_deref(), Some("OnDemand"));
        let metal = Query::BareMetal.filters("eu-west-1");
        assert_eq!(get(&metal, "tenancy").as_deref(), Some("Dedicated"));
        assert_eq!(
            get(&metal, "productFamily").as_deref(),
            Some("Compute Instance (bare metal)")
        );
        assert_eq!(endpoint_region("eu-west-1"), "eu-central-1");
        assert_eq!(endpoint_region("ap-northeast-1"), "ap-south-1");
        assert_eq!(endpoint_region("us-west-2"), "us-east-1");
    }
}
