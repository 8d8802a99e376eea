#!/usr/bin/env python3
"""Regenerate the embedded pricing snapshot from the shared data directory.

Usage: python3 regenerate.py <shared-data-dir> [<output-dir>]

<shared-data-dir> is the directory holding pricing/, instance-types/ and spot/
(see README.md for the files read). <output-dir> defaults to the directory of
this script. Only the Python 3 standard library is used. The output is
deterministic: every file is sorted.
"""

import csv
import os
import re
import sys
from collections import defaultdict

# Regions whose On-Demand prices come from Karpenter's 2026-07 fallback table;
# every other region uses the 2025-04 all-regions table.
KARPENTER_2026_REGIONS = ("us-east-1", "us-gov-east-1", "us-gov-west-1")

# Availability zones per region: (zone-id prefix, zone-name letters, zone-id
# numbers). Public AWS facts for a new account; see README.md "Zones". Zone
# names and ids are paired in sorted order (the documented rule).
ZONES = {
    "af-south-1": ("afs1", "abc", (1, 2, 3)),
    "ap-east-1": ("ape1", "abc", (1, 2, 3)),
    "ap-northeast-1": ("apne1", "acd", (1, 2, 4)),
    "ap-northeast-2": ("apne2", "abcd", (1, 2, 3, 4)),
    "ap-northeast-3": ("apne3", "abc", (1, 2, 3)),
    "ap-south-1": ("aps1", "abc", (1, 2, 3)),
    "ap-south-2": ("aps2", "abc", (1, 2, 3)),
    "ap-southeast-1": ("apse1", "abc", (1, 2, 3)),
    "ap-southeast-2": ("apse2", "abc", (1, 2, 3)),
    "ap-southeast-3": ("apse3", "abc", (1, 2, 3)),
    "ap-southeast-4": ("apse4", "abc", (1, 2, 3)),
    "ap-southeast-5": ("apse5", "abc", (1, 2, 3)),
    "ap-southeast-7": ("apse7", "abc", (1, 2, 3)),
    "ca-central-1": ("cac1", "abd", (1, 2, 4)),
    "ca-west-1": ("caw1", "abc", (1, 2, 3)),
    "eu-central-1": ("euc1", "abc", (1, 2, 3)),
    "eu-central-2": ("euc2", "abc", (1, 2, 3)),
    "eu-north-1": ("eun1", "abc", (1, 2, 3)),
    "eu-south-1": ("eus1", "abc", (1, 2, 3)),
    "eu-south-2": ("eus2", "abc", (1, 2, 3)),
    "eu-west-1": ("euw1", "abc", (1, 2, 3)),
    "eu-west-2": ("euw2", "abc", (1, 2, 3)),
    "eu-west-3": ("euw3", "abc", (1, 2, 3)),
    "il-central-1": ("ilc1", "abc", (1, 2, 3)),
    "me-central-1": ("mec1", "abc", (1, 2, 3)),
    "me-south-1": ("mes1", "abc", (1, 2, 3)),
    "mx-central-1": ("mxc1", "abc", (1, 2, 3)),
    "sa-east-1": ("sae1", "abc", (1, 2, 3)),
    "us-east-1": ("use1", "abcdef", (1, 2, 3, 4, 5, 6)),
    "us-east-2": ("use2", "abc", (1, 2, 3)),
    "us-gov-east-1": ("usge1", "abc", (1, 2, 3)),
    "us-gov-west-1": ("usgw1", "abc", (1, 2, 3)),
    "us-west-1": ("usw1", "bc", (1, 3)),
    "us-west-2": ("usw2", "abcd", (1, 2, 3, 4)),
}

INSTANCE_COLUMNS = [
    "name", "category", "family", "generation", "size", "vcpu", "memory_mib",
    "arch", "cpu_manufacturer", "cpu_clock_mhz", "hypervisor",
    "capability_flex", "encryption_in_transit", "network_bandwidth_mbps",
    "ebs_bandwidth_mbps", "local_nvme_gb", "instance_store_gb", "gpu_count",
    "gpu_name", "gpu_manufacturer", "gpu_memory_mib", "accelerator_count",
    "accelerator_name", "accelerator_manufacturer", "efa",
    "enis_default_card", "ipv4_per_eni", "pod_eni", "usage_classes",
    "spot_advisor_regions",
]


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def write_csv(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def instance_store_gb(row):
    """Total instance-store size in GB (what EC2 reports as TotalSizeInGB)."""
    if row["local_nvme_gib"]:
        return row["local_nvme_gib"]
    m = re.match(r"^(\d+) x (\d+)", row["instance_storage"])
    return str(int(m.group(1)) * int(m.group(2))) if m else ""


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    data = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.dirname(os.path.abspath(__file__))

    types = read_csv(os.path.join(data, "instance-types", "instance_types.csv"))
    rows = []
    for t in sorted(types, key=lambda r: r["instance_type"]):
        rows.append([
            t["instance_type"], t["category"], t["family"], t["generation"], t["size"],
            t["vcpu"], t["memory_mib"], "amd64" if t["arch"] == "x86_64" else t["arch"],
            t["cpu_manufacturer"], t["cpu_sustained_clock_mhz"], t["hypervisor"],
            t["capability_flex"], t["encryption_in_transit"], t["network_bandwidth_mbps"],
            t["ebs_bandwidth_mbps"], t["local_nvme_gib"], instance_store_gb(t),
            t["gpu_count"], t["gpu_name"], t["gpu_manufacturer"], t["gpu_memory_mib"],
            t["accelerator_count"], t["accelerator_name"], t["accelerator_manufacturer"],
            t["efa"], t["max_enis_default_card"], t["ipv4_per_eni"],
            t["branch_interfaces"] or "0", t["supported_usage_classes"],
            t["spot_advisor_regions"],
        ])
    write_csv(os.path.join(out, "instance_types.csv"), INSTANCE_COLUMNS, rows)
    known = {t["instance_type"] for t in types}

    regions = read_csv(os.path.join(data, "pricing", "regions.csv"))
    region_names = sorted(r["region"] for r in regions)
    if sorted(ZONES) != region_names:
        sys.exit("zone table and regions.csv disagree")
    write_csv(
        os.path.join(out, "regions.csv"),
        ["region", "pricing_location_name", "on_demand_source"],
        [[r["region"], r["pricing_location_name"],
          "karpenter-2026-07" if r["region"] in KARPENTER_2026_REGIONS else "ec2shop-2025-04"]
         for r in sorted(regions, key=lambda r: r["region"])],
    )

    zone_rows = []
    zone_ids = set()
    for region in region_names:
        prefix, letters, numbers = ZONES[region]
        for letter, number in zip(letters, numbers):
            zone_rows.append([region, region + letter, "%s-az%d" % (prefix, number)])
            zone_ids.add("%s-az%d" % (prefix, number))
    write_csv(os.path.join(out, "zones.csv"), ["region", "zone", "zone_id"], zone_rows)

    prices = defaultdict(dict)
    for r in read_csv(os.path.join(data, "pricing", "on_demand_linux_all_regions_2025-04.csv")):
        if r["region"] not in KARPENTER_2026_REGIONS:
            prices[r["region"]][r["instance_type"]] = r["on_demand_usd_per_hour"]
    for r in read_csv(os.path.join(data, "pricing", "on_demand_karpenter_us_east_1_and_govcloud_2026-07.csv")):
        prices[r["region"]][r["instance_type"]] = r["on_demand_usd_per_hour"]

    advisor = defaultdict(list)
    for r in read_csv(os.path.join(data, "spot", "spot_advisor_2025-06.csv")):
        if r["os"] == "Linux" and r["instance_type"] in known:
            advisor[r["region"]].append([r["instance_type"], r["interruption_band_index"], r["savings_pct"]])

    # Latest point per (zone id, type): the price in effect at the end of the day.
    latest = {}
    for r in read_csv(os.path.join(data, "spot", "spot_price_samples_linux_2022-05-31.csv")):
        if r["instance_type"] not in known:
            continue
        if r["availability_zone_id"] not in zone_ids:
            sys.exit("sample zone id %s missing from the zone table" % r["availability_zone_id"])
        key = (r["region"], r["instance_type"], r["availability_zone_id"])
        if key not in latest or r["timestamp"] > latest[key][0]:
            latest[key] = (r["timestamp"], r["spot_price_usd_per_hour"])
    samples = defaultdict(list)
    for (region, itype, zone_id), (_, price) in latest.items():
        samples[region].append([itype, zone_id, price])

    for region in region_names:
        write_csv(os.path.join(out, "on-demand", region + ".csv"), ["instance_type", "usd_per_hour"],
                  sorted([t, p] for t, p in prices[region].items() if t in known))
        write_csv(os.path.join(out, "spot-advisor", region + ".csv"),
                  ["instance_type", "band_index", "savings_pct"], sorted(advisor[region]))
        write_csv(os.path.join(out, "spot-samples-2022", region + ".csv"),
                  ["instance_type", "zone_id", "usd_per_hour"], sorted(samples[region]))


if __name__ == "__main__":
    main()
