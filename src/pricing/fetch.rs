//! The one part of karpsim that talks to AWS (cargo feature `aws`): the
//! `GetProducts` queries of a refresh, paginated, through
//! `aws-sdk-pricing`. Credentials, retries and the endpoint come from the
//! standard AWS configuration chain (environment, shared config files,
//! SSO, web identity, container and instance metadata); an explicit
//! endpoint URL overrides it. The region of the client is the Price List
//! endpoint's, chosen from the region asked for (see
//! [`endpoint_region`]).
//!
//! Errors come back as one line each: missing credentials, throttling
//! (after the configured retries), an API error, an unreachable endpoint,
//! or a malformed price item.

use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_pricing::Client;
use aws_sdk_pricing::config::{BehaviorVersion, Region};
use aws_sdk_pricing::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_pricing::types::{Filter, FilterType};
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};

use super::price_list::{
    OnDemandTable, PAGE_SIZE, PriceListError, Query, SERVICE_CODE, endpoint_region,
};
use karpsim_catalog::snapshot::PriceSnapshot;
use karpsim_sim::spot::Timestamp;

/// Why a refresh failed; each message is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshError {
    /// The configuration chain found no credentials.
    #[error(
        "no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a \
         profile with AWS_PROFILE): {detail}"
    )]
    NoCredentials {
        /// The chain's own explanation.
        detail: String,
    },
    /// The API kept throttling after the retries.
    #[error("the AWS Price List API throttled the request ({code}: {message}); try again later")]
    Throttled {
        /// The error code, e.g. `ThrottlingException`.
        code: String,
        /// The service's message.
        message: String,
    },
    /// Any other error the API returned.
    #[error("GetProducts failed: {code}: {message}")]
    Service {
        /// The error code.
        code: String,
        /// The service's message.
        message: String,
    },
    /// No answer from the endpoint.
    #[error("cannot reach the AWS Price List endpoint: {detail}")]
    Unreachable {
        /// What the HTTP client said.
        detail: String,
    },
    /// A price item could not be read.
    #[error(transparent)]
    Malformed(#[from] PriceListError),
    /// The answer held no usable price.
    #[error("the AWS Price List API returned no On-Demand Linux price for {region}")]
    NoPrices {
        /// The region asked for.
        region: String,
    },
    /// Something else (the SDK's description).
    #[error("GetProducts failed: {0}")]
    Other(String),
}

/// An error and its causes on one line, each cause once, whitespace
/// collapsed (the SDK's messages span lines).
fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut cause = Some(error);
    while let Some(current) = cause {
        let part = current.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        cause = current.source();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Classifies an SDK error into one line.
fn classify<E, R>(error: &SdkError<E, R>) -> RefreshError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(credentials) = current.downcast_ref::<CredentialsError>() {
            return RefreshError::NoCredentials {
                detail: chain_text(credentials),
            };
        }
        cause = current.source();
    }
    let one_line = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    match error {
        SdkError::ServiceError(context) => {
            let err = context.err();
            let code = err.code().unwrap_or("unknown error").to_string();
            let message = one_line(err.message().unwrap_or("no message").to_string());
            if code.contains("Throttling") || code == "TooManyRequestsException" {
                RefreshError::Throttled { code, message }
            } else {
                RefreshError::Service { code, message }
            }
        }
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => RefreshError::Unreachable {
            detail: chain_text(error),
        },
        _ => RefreshError::Other(chain_text(error)),
    }
}

fn filters(query: Query, region: &str) -> Result<Vec<Filter>, RefreshError> {
    query
        .filters(region)
        .into_iter()
        .map(|(field, value)| {
            Filter::builder()
                .r#type(FilterType::TermMatch)
                .field(field)
                .value(value)
                .build()
                .map_err(|err| RefreshError::Other(err.to_string()))
        })
        .collect()
}

/// Runs both `GetProducts` queries for `region` through `client`, every
/// page, and reads the On-Demand prices.
pub async fn fetch_on_demand(client: &Client, region: &str) -> Result<OnDemandTable, RefreshError> {
    let mut table = OnDemandTable::default();
    for query in Query::ALL {
        let mut pages = client
            .get_products()
            .service_code(SERVICE_CODE)
            .format_version("aws_v1")
            .set_filters(Some(filters(query, region)?))
            .max_results(PAGE_SIZE)
            .into_paginator()
            .send();
        let mut page = 0;
        while let Some(output) = pages.next().await {
            let output = output.map_err(|err| classify(&err))?;
            page += 1;
            table.add_page(query, page, output.price_list())?;
        }
    }
    if table.prices.is_empty() {
        return Err(RefreshError::NoPrices {
            region: region.to_string(),
        });
    }
    Ok(table)
}

/// A client for `region`'s Price List endpoint from the standard chain,
/// with `endpoint_url` in place of the chain's endpoint when given.
pub async fn client_for(region: &str, endpoint_url: Option<&str>) -> Client {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(endpoint_region(region)))
        // One HTTPS client for the Price List API and the credential
        // providers: rustls on the ring crypto provider.
        .http_client(
            aws_smithy_http_client::Builder::new()
                .tls_provider(Provider::Rustls(CryptoMode::Ring))
                .build_https(),
        );
    if let Some(url) = endpoint_url {
        loader = loader.endpoint_url(url);
    }
    Client::new(&loader.load().await)
}

/// Fetches `region`'s On-Demand prices and makes a snapshot of them dated
/// `now`. Runs its own single-threaded runtime.
pub fn refresh(
    region: &str,
    endpoint_url: Option<&str>,
    now: Timestamp,
) -> Result<PriceSnapshot, RefreshError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| RefreshError::Other(format!("cannot start the async runtime: {err}")))?;
    let table = runtime.block_on(async {
        let client = client_for(region, endpoint_url).await;
        fetch_on_demand(&client, region).await
    })?;
    Ok(snapshot_of(region, endpoint_url, table, now))
}

/// The snapshot made from a refresh's table.
pub fn snapshot_of(
    region: &str,
    endpoint_url: Option<&str>,
    table: OnDemandTable,
    now: Timestamp,
) -> PriceSnapshot {
    let endpoint = endpoint_url
        .map(str::to_string)
        .unwrap_or_else(|| format!("{} endpoint", endpoint_region(region)));
    let mut source = format!(
        "AWS Price List API GetProducts (AmazonEC2 On-Demand, Linux, shared tenancy and bare \
         metal; {endpoint}): {} pages, {} items",
        table.pages, table.items
    );
    if let Some(published) = &table.published {
        source.push_str(&format!(", published {published}"));
    }
    PriceSnapshot {
        region: region.to_string(),
        date: now.to_string(),
        source,
        on_demand: table.prices,
        spot: None,
    }
}

#[cfg(test)]
#[path = "fetch_tests.rs"]
mod tests;
