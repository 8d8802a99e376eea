//! Cost ledger tests; every expected amount is derived by hand in a comment.
//! Arithmetic reminder: micro-USD = price (µ$/h) × ms / 3 600 000.

use super::*;

fn secs(s: u64) -> SimTime {
    SimTime::from_secs(s)
}

fn launch(
    ledger: &mut CostLedger,
    name: &str,
    pool: &str,
    capacity_type: CapacityType,
    at: SimTime,
    price: i64,
) -> BillingId {
    ledger
        .launch(NodeLaunch {
            node_name: name.to_string(),
            pool: pool.to_string(),
            capacity_type,
            launched_at: at,
            price: Price::from_micros(price),
        })
        .unwrap()
}

/// $0.096/h for 90 s: 96 000 × 90 000 / 3 600 000 = 2 400 µ$ = $0.0024.
#[test]
fn per_second_billing() {
    let mut ledger = CostLedger::new();
    let id = launch(
        &mut ledger,
        "n1",
        "default",
        CapacityType::OnDemand,
        secs(100),
        96_000,
    );
    let cost = ledger.terminate(id, secs(190)).unwrap();
    assert_eq!(cost, MicroUsd(2_400));
    assert_eq!(cost.to_string(), "$0.002400");
}

/// $0.096/h for 10 s is charged as 60 s: 96 000 × 60 000 / 3 600 000 = 1 600 µ$.
#[test]
fn sixty_second_minimum() {
    let mut ledger = CostLedger::new();
    let id = launch(
        &mut ledger,
        "n1",
        "default",
        CapacityType::OnDemand,
        secs(5),
        96_000,
    );
    assert_eq!(ledger.terminate(id, secs(15)), Ok(MicroUsd(1_600)));
    // Exactly 60 s: no top-up, same 1 600 µ$; 61 s: 96 000 × 61 000 / 3.6e6 = 1 626.67 → 1 627.
    let id = launch(
        &mut ledger,
        "n2",
        "default",
        CapacityType::OnDemand,
        secs(0),
        96_000,
    );
    assert_eq!(ledger.terminate(id, secs(60)), Ok(MicroUsd(1_600)));
    let id = launch(
        &mut ledger,
        "n3",
        "default",
        CapacityType::OnDemand,
        secs(0),
        96_000,
    );
    assert_eq!(ledger.terminate(id, secs(61)), Ok(MicroUsd(1_627)));
    // Terminated at the launch instant: the full minute, 1 600 µ$.
    let id = launch(
        &mut ledger,
        "n4",
        "default",
        CapacityType::OnDemand,
        secs(9),
        96_000,
    );
    assert_eq!(ledger.terminate(id, secs(9)), Ok(MicroUsd(1_600)));
}

/// Rounding happens once per record, half up: 1 µ$/h for 30 min is exactly
/// 0.5 µ$ → 1; one millisecond less is 0.49999972 µ$ → 0.
#[test]
fn rounds_half_up_once_per_record() {
    let mut ledger = CostLedger::new();
    let half = launch(&mut ledger, "a", "p", CapacityType::Spot, SimTime::ZERO, 1);
    let below = launch(&mut ledger, "b", "p", CapacityType::Spot, SimTime::ZERO, 1);
    assert_eq!(
        ledger.terminate(half, SimTime::from_millis(1_800_000)),
        Ok(MicroUsd(1))
    );
    assert_eq!(
        ledger.terminate(below, SimTime::from_millis(1_799_999)),
        Ok(MicroUsd(0))
    );
    // Totals add rounded records: three records of exactly 0.5 µ$ each total
    // 3 µ$, where rounding the exact sum (1.5 µ$) would give 2.
    let mut ledger = CostLedger::new();
    for name in ["x", "y", "z"] {
        let id = launch(&mut ledger, name, "p", CapacityType::Spot, SimTime::ZERO, 1);
        ledger
            .terminate(id, SimTime::from_millis(1_800_000))
            .unwrap();
    }
    assert_eq!(ledger.closed_totals().total, MicroUsd(3));
}

/// Spot price moves mid-life: $0.036/h for the first half hour, $0.048/h for
/// the second: 36 000 × 0.5 + 48 000 × 0.5 = 18 000 + 24 000 = 42 000 µ$.
#[test]
fn price_changes_are_piecewise_constant() {
    let mut ledger = CostLedger::new();
    let id = launch(
        &mut ledger,
        "s1",
        "spot",
        CapacityType::Spot,
        SimTime::ZERO,
        36_000,
    );
    ledger
        .change_price(id, secs(1_800), Price::from_micros(48_000))
        .unwrap();
    assert_eq!(ledger.terminate(id, secs(3_600)), Ok(MicroUsd(42_000)));
    let record = ledger.record(id).unwrap();
    assert_eq!(record.launch_price(), Price::from_micros(36_000));
    assert_eq!(record.latest_price(), Price::from_micros(48_000));
    assert_eq!(record.segments().len(), 2);
}

/// Minimum with a price change: launched at 60 000 µ$/h, 120 000 µ$/h from
/// 20 s, terminated at 30 s. Segments: 60 000 × 20 000 + 120 000 × 10 000 =
/// 2.4e9; top-up 30 s at the launch price: 60 000 × 30 000 = 1.8e9. Total
/// 4.2e9 / 3.6e6 = 1 166.67 → 1 167 µ$.
#[test]
fn minimum_top_up_uses_launch_price() {
    let mut ledger = CostLedger::new();
    let id = launch(
        &mut ledger,
        "s1",
        "spot",
        CapacityType::Spot,
        SimTime::ZERO,
        60_000,
    );
    ledger
        .change_price(id, secs(20), Price::from_micros(120_000))
        .unwrap();
    assert_eq!(ledger.terminate(id, secs(30)), Ok(MicroUsd(1_167)));
}

/// A change at the same instant as the previous one replaces it.
#[test]
fn change_at_same_instant_replaces() {
    let mut ledger = CostLedger::new();
    let id = launch(
        &mut ledger,
        "s1",
        "spot",
        CapacityType::Spot,
        secs(10),
        10_000,
    );
    ledger
        .change_price(id, secs(10), Price::from_micros(72_000))
        .unwrap();
    assert_eq!(ledger.record(id).unwrap().segments().len(), 1);
    assert_eq!(ledger.current_hourly_rate(), Price::from_micros(72_000));
    // 72 000 × 100 000 / 3.6e6 = 2 000 µ$.
    assert_eq!(ledger.terminate(id, secs(110)), Ok(MicroUsd(2_000)));
}

/// Totals by capacity type and by pool, over two pools and two capacity types:
/// od-1 (default, on-demand): 96 000 µ$/h × 90 s = 2 400;
/// sp-1 (default, spot):      36 000 µ$/h × 1 h  = 36 000;
/// sp-2 (batch, spot):        48 000 µ$/h × 10 s → 60 s = 800.
/// By type: on-demand 2 400, spot 36 800. By pool: default 38 400, batch 800.
#[test]
fn totals_by_capacity_type_and_pool() {
    let mut ledger = CostLedger::new();
    let od1 = launch(
        &mut ledger,
        "od-1",
        "default",
        CapacityType::OnDemand,
        SimTime::ZERO,
        96_000,
    );
    let sp1 = launch(
        &mut ledger,
        "sp-1",
        "default",
        CapacityType::Spot,
        SimTime::ZERO,
        36_000,
    );
    let sp2 = launch(
        &mut ledger,
        "sp-2",
        "batch",
        CapacityType::Spot,
        secs(30),
        48_000,
    );
    ledger.terminate(od1, secs(90)).unwrap();
    ledger.terminate(sp2, secs(40)).unwrap();
    ledger.terminate(sp1, secs(3_600)).unwrap();
    let totals = ledger.closed_totals();
    assert_eq!(totals.total, MicroUsd(39_200));
    assert_eq!(
        totals.by_capacity_type,
        BTreeMap::from([
            (CapacityType::OnDemand, MicroUsd(2_400)),
            (CapacityType::Spot, MicroUsd(36_800)),
        ])
    );
    assert_eq!(
        totals.by_pool,
        BTreeMap::from([
            ("batch".to_string(), MicroUsd(800)),
            ("default".to_string(), MicroUsd(38_400)),
        ])
    );
    assert_eq!(ledger.open_count(), 0);
}

/// Totals as of an instant include running nodes: a node at 36 000 µ$/h
/// launched at 0 and a second at 72 000 µ$/h launched at 100 s.
/// At 200 s: 36 000 × 200 000 / 3.6e6 = 2 000 µ$, plus the second node's
/// 100 s: 72 000 × 100 000 / 3.6e6 = 2 000 µ$ → 4 000 µ$.
/// At 120 s the second node has run 20 s but owes its minute:
/// 36 000 × 120 000 / 3.6e6 = 1 200 plus 72 000 × 60 000 / 3.6e6 = 1 200 → 2 400.
#[test]
fn totals_at_include_running_nodes() {
    let mut ledger = CostLedger::new();
    launch(
        &mut ledger,
        "a",
        "default",
        CapacityType::OnDemand,
        SimTime::ZERO,
        36_000,
    );
    launch(
        &mut ledger,
        "b",
        "default",
        CapacityType::OnDemand,
        secs(100),
        72_000,
    );
    assert_eq!(ledger.totals_at(secs(200)).total, MicroUsd(4_000));
    assert_eq!(ledger.totals_at(secs(120)).total, MicroUsd(2_400));
    assert_eq!(
        ledger.closed_totals().total,
        MicroUsd(0),
        "nothing closed yet"
    );
    assert_eq!(ledger.open_count(), 2);
}

/// The $/h sampler. Node A: 96 000 µ$/h on [0 s, 90 s). Node B: 36 000 from
/// 30 s, 48 000 from 60 s, still running.
/// At 0: 96 000. At 30 s: 96 000 + 36 000 = 132 000. At 60 s: 96 000 + 48 000
/// = 144 000. At 90 s (A gone): 48 000. At 29.999 s: 96 000.
#[test]
fn hourly_rate_at_instants() {
    let mut ledger = CostLedger::new();
    let a = launch(
        &mut ledger,
        "a",
        "default",
        CapacityType::OnDemand,
        SimTime::ZERO,
        96_000,
    );
    let b = launch(
        &mut ledger,
        "b",
        "spot",
        CapacityType::Spot,
        secs(30),
        36_000,
    );
    ledger
        .change_price(b, secs(60), Price::from_micros(48_000))
        .unwrap();
    ledger.terminate(a, secs(90)).unwrap();
    let rate = |ms: u64| ledger.hourly_rate_at(SimTime::from_millis(ms)).micros();
    assert_eq!(rate(0), 96_000);
    assert_eq!(rate(29_999), 96_000);
    assert_eq!(rate(30_000), 132_000);
    assert_eq!(rate(60_000), 144_000);
    assert_eq!(rate(90_000), 48_000);
    assert_eq!(ledger.current_hourly_rate(), Price::from_micros(48_000));
    let spot_only =
        ledger.hourly_rate_at_where(secs(60), |r| r.capacity_type() == CapacityType::Spot);
    assert_eq!(spot_only, Price::from_micros(48_000));
    assert_eq!(spot_only.to_string(), "$0.048");
}

#[test]
fn bad_operations_are_errors() {
    let mut ledger = CostLedger::new();
    let negative = ledger.launch(NodeLaunch {
        node_name: "neg".into(),
        pool: "p".into(),
        capacity_type: CapacityType::OnDemand,
        launched_at: SimTime::ZERO,
        price: Price::from_micros(-1),
    });
    assert!(matches!(negative, Err(LedgerError::NegativePrice { .. })));
    assert!(
        ledger.records().is_empty(),
        "a rejected launch leaves no record"
    );

    let id = launch(
        &mut ledger,
        "n1",
        "p",
        CapacityType::Spot,
        secs(100),
        10_000,
    );
    assert_eq!(
        ledger.change_price(id, secs(99), Price::from_micros(1)),
        Err(LedgerError::OutOfOrder {
            node: "n1".into(),
            at: secs(99),
            previous: secs(100)
        })
    );
    assert!(matches!(
        ledger.change_price(id, secs(150), Price::from_micros(-5)),
        Err(LedgerError::NegativePrice { .. })
    ));
    assert!(matches!(
        ledger.terminate(id, secs(50)),
        Err(LedgerError::OutOfOrder { .. })
    ));
    ledger.terminate(id, secs(200)).unwrap();
    assert_eq!(
        ledger.terminate(id, secs(300)),
        Err(LedgerError::AlreadyTerminated {
            node: "n1".into(),
            terminated_at: secs(200)
        })
    );
    assert!(matches!(
        ledger.change_price(id, secs(300), Price::from_micros(1)),
        Err(LedgerError::AlreadyTerminated { .. })
    ));
    assert_eq!(
        ledger.terminate(BillingId(99), secs(300)),
        Err(LedgerError::UnknownRecord(BillingId(99)))
    );
    assert_eq!(ledger.current_hourly_rate(), Price::from_micros(0));
}

#[test]
fn money_display() {
    assert_eq!(MicroUsd(0).to_string(), "$0.000000");
    assert_eq!(MicroUsd(1_234_567_890).to_string(), "$1234.567890");
    assert_eq!(MicroUsd(-1_500_000).to_string(), "-$1.500000");
    assert_eq!(Price::from_micros(96_000).to_string(), "$0.096");
    assert_eq!(CapacityType::OnDemand.to_string(), "on-demand");
}

/// A fixed charge (a capacity reservation) is paid from its start to its
/// end whatever runs, counted in the total and under its capacity type but
/// under no pool, and in the fleet's $/h while it lasts.
#[test]
fn fixed_charges_are_paid_for_their_interval() {
    let mut ledger = CostLedger::new();
    let charge = ledger
        .charge(
            "capacity-reservation/cr-1".to_string(),
            CapacityType::Reserved,
            secs(0),
            Price::from_micros(1_920_000),
        )
        .unwrap();
    assert_eq!(ledger.current_hourly_rate(), Price::from_micros(1_920_000));
    assert_eq!(
        ledger.hourly_rate_at(secs(10)),
        Price::from_micros(1_920_000)
    );
    let totals = ledger.totals_at(secs(1_800));
    assert_eq!(totals.total, MicroUsd(960_000));
    assert_eq!(
        totals.by_capacity_type[&CapacityType::Reserved],
        MicroUsd(960_000)
    );
    assert!(totals.by_pool.is_empty());
    ledger.end_charge(charge, secs(3_600));
    ledger.end_charge(charge, secs(7_200));
    assert_eq!(ledger.current_hourly_rate(), Price::ZERO);
    assert_eq!(ledger.hourly_rate_at(secs(3_600)), Price::ZERO);
    assert_eq!(ledger.totals_at(secs(7_200)).total, MicroUsd(1_920_000));
}
