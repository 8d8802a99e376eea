//! Offerings: where and how an instance type can be bought (zone × capacity
//! type), at what price, and the spot pricing rule of the bundled snapshot.

use std::collections::BTreeMap;

use super::price::Price;
use super::reservation::OfferingReservation;

/// How a node is purchased (`karpenter.sh/capacity-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CapacityType {
    /// `on-demand`.
    OnDemand,
    /// `spot`.
    Spot,
    /// `reserved` (capacity reservations).
    Reserved,
}

impl std::fmt::Display for CapacityType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

impl CapacityType {
    /// The label value.
    pub const fn label(self) -> &'static str {
        match self {
            CapacityType::OnDemand => "on-demand",
            CapacityType::Spot => "spot",
            CapacityType::Reserved => "reserved",
        }
    }
}

/// A Spot Advisor interruption-frequency band, 0 (`<5%`) to 4 (`>20%`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InterruptionBand(u8);

impl InterruptionBand {
    /// The band with this index, if it is 0–4.
    pub const fn new(index: u8) -> Option<InterruptionBand> {
        if index <= 4 {
            Some(InterruptionBand(index))
        } else {
            None
        }
    }

    /// The index, 0–4.
    pub const fn index(self) -> u8 {
        self.0
    }

    /// The advisor's label: `<5%`, `5-10%`, `10-15%`, `15-20%` or `>20%`.
    pub const fn label(self) -> &'static str {
        match self.0 {
            0 => "<5%",
            1 => "5-10%",
            2 => "10-15%",
            3 => "15-20%",
            _ => ">20%",
        }
    }

    /// The upper bound of monthly interruption frequency, in percent, that
    /// the advisor feed's `ranges` give for the band (5, 11, 16, 22, 100).
    pub const fn upper_bound_percent(self) -> u8 {
        match self.0 {
            0 => 5,
            1 => 11,
            2 => 16,
            3 => 22,
            _ => 100,
        }
    }
}

/// One way to buy an instance type: a zone and a capacity type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offering {
    /// Zone name, e.g. `us-east-1a`.
    pub zone: &'static str,
    /// Zone id, e.g. `use1-az1`.
    pub zone_id: &'static str,
    /// On-demand or spot.
    pub capacity_type: CapacityType,
    /// Price per instance-hour.
    pub price: Price,
    /// Whether it can be launched now (the snapshot offers every priced
    /// offering; a simulation marks some unavailable, as an ICE cache would).
    pub available: bool,
    /// Spot Advisor interruption band (spot offerings only).
    pub interruption_band: Option<InterruptionBand>,
    /// The capacity reservation behind a `reserved` offering.
    pub reservation: Option<OfferingReservation>,
}

/// A Spot Advisor row for one instance type in one region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpotAdvice {
    /// Interruption band.
    pub band: InterruptionBand,
    /// Savings over On-Demand, in percent (may be negative in the feed).
    pub savings_percent: i64,
}

/// Per-zone spot prices of one instance type in one region.
///
/// The rule, exact in integer micro-dollars:
/// 1. the regional spot price is `on_demand × (100 − savings) / 100`, with
///    `savings` from the 2025-06 Spot Advisor row of (region, type);
/// 2. if the 2022-05-31 samples hold prices for the type in some of the
///    region's zones, each sampled zone `z` gets
///    `regional × sample(z) × n / Σ samples` (n = number of sampled zones), so
///    the sampled zones keep the real relative spread and average to the
///    regional price; every other zone gets the regional price;
/// 3. each price is capped at the On-Demand price (what a spot instance pays
///    at most by default) and floored at one micro-dollar.
///
/// `samples` maps zone id to the sampled price; `zone_ids` lists the region's
/// zones in order. Returns one price per zone, in `zone_ids` order.
pub fn spot_prices(
    on_demand: Price,
    advice: SpotAdvice,
    samples: &BTreeMap<&str, Price>,
    zone_ids: &[&str],
) -> Vec<Price> {
    let keep = i128::from(100 - advice.savings_percent);
    let sampled: Vec<Price> = zone_ids
        .iter()
        .filter_map(|id| samples.get(id).copied())
        .collect();
    let sum: i128 = sampled.iter().map(|p| i128::from(p.micros())).sum();
    let n = sampled.len() as i128;
    zone_ids
        .iter()
        .map(|id| {
            let price = match samples.get(id) {
                Some(sample) if sum > 0 => {
                    on_demand.scale(keep * i128::from(sample.micros()) * n, 100 * sum)
                }
                _ => on_demand.scale(keep, 100),
            };
            price
                .unwrap_or(on_demand)
                .min(on_demand)
                .max(Price::from_micros(1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice(savings_percent: i64) -> SpotAdvice {
        SpotAdvice {
            band: InterruptionBand::new(0).unwrap(),
            savings_percent,
        }
    }

    #[test]
    fn regional_price_without_samples() {
        let od = Price::from_micros(96_000);
        let prices = spot_prices(od, advice(60), &BTreeMap::new(), &["a", "b"]);
        // 0.096 × 40 % = 0.0384 in every zone.
        assert_eq!(prices, vec![Price::from_micros(38_400); 2]);
    }

    #[test]
    fn samples_spread_prices_around_the_regional_price() {
        let od = Price::from_micros(100_000);
        let samples = BTreeMap::from([
            ("a", Price::from_micros(30_000)),
            ("b", Price::from_micros(50_000)),
        ]);
        let prices = spot_prices(od, advice(60), &samples, &["a", "b", "c"]);
        // Regional 0.04; a = 0.04 × 0.03 × 2 / 0.08 = 0.03, b = 0.05, c unsampled.
        assert_eq!(
            prices,
            vec![
                Price::from_micros(30_000),
                Price::from_micros(50_000),
                Price::from_micros(40_000)
            ]
        );
    }

    #[test]
    fn capped_at_on_demand() {
        let od = Price::from_micros(100_000);
        let prices = spot_prices(od, advice(-20), &BTreeMap::new(), &["a"]);
        assert_eq!(prices, vec![od]);
        let samples = BTreeMap::from([
            ("a", Price::from_micros(10_000)),
            ("b", Price::from_micros(90_000)),
        ]);
        let prices = spot_prices(od, advice(10), &samples, &["a", "b"]);
        assert_eq!(prices[0], Price::from_micros(18_000));
        assert_eq!(prices[1], od);
    }

    #[test]
    fn band_labels() {
        assert_eq!(InterruptionBand::new(0).unwrap().label(), "<5%");
        assert_eq!(InterruptionBand::new(4).unwrap().label(), ">20%");
        assert_eq!(InterruptionBand::new(2).unwrap().upper_bound_percent(), 16);
        assert_eq!(InterruptionBand::new(5), None);
    }
}
