#!/usr/bin/env python3
"""Draws benches/diurnal-scaling.svg from the CSV that measure.sh prints:
median user CPU seconds per scale, variant and build against the pods at
the daily peak, with the line that linear scaling from x1 would follow.

Usage: benches/diurnal/plot.py results.csv > benches/diurnal-scaling.svg
"""
import csv
import statistics
import sys

PEAK_PODS = {"x1": 2952, "x3": 8856, "x5": 14760, "x10": 29520}
SERIES = [
    ("consolidating", "before", "#d62728", "6,4"),
    ("consolidating", "after", "#d62728", None),
    ("when-empty", "before", "#1f77b4", "6,4"),
    ("when-empty", "after", "#1f77b4", None),
]
W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 420, 70, 620, 40, 340


def main():
    times = {}
    with open(sys.argv[1]) as f:
        for row in csv.DictReader(f):
            key = (row["scale"], row["variant"], row["build"])
            times.setdefault(key, []).append(float(row["user_s"]))
    med = {k: statistics.median(v) for k, v in times.items()}
    top = max(med.values())
    step = 10 if top <= 60 else 20
    ymax = step * (int(top // step) + 1)
    xmax = max(PEAK_PODS.values())

    def x(pods):
        return LEFT + (RIGHT - LEFT) * pods / xmax

    def y(sec):
        return BOTTOM - (BOTTOM - TOP) * sec / ymax

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14">'
        "benches/diurnal: user CPU time of one variant vs peak pods (2 cores, --jobs 1)</text>",
        f'<line x1="{LEFT}" y1="{BOTTOM}" x2="{RIGHT}" y2="{BOTTOM}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{BOTTOM}" stroke="black"/>',
    ]
    for sec in range(0, ymax + 1, step):
        out.append(
            f'<line x1="{LEFT - 4}" y1="{y(sec):.1f}" x2="{RIGHT}" y2="{y(sec):.1f}" stroke="#ddd"/>'
            f'<text x="{LEFT - 8}" y="{y(sec) + 4:.1f}" text-anchor="end">{sec} s</text>'
        )
    for scale, pods in PEAK_PODS.items():
        out.append(
            f'<text x="{x(pods):.1f}" y="{BOTTOM + 16}" text-anchor="middle">{pods:,}</text>'
        )
    out.append(
        f'<text x="{(LEFT + RIGHT) / 2}" y="{BOTTOM + 36}" text-anchor="middle">'
        "pods at the daily peak (x1, x3, x5, x10)</text>"
    )
    legend_y = TOP + 4
    for variant, build, color, dash in SERIES:
        pts = [
            (x(PEAK_PODS[s]), y(med[(s, variant, build)]))
            for s in PEAK_PODS
            if (s, variant, build) in med
        ]
        if not pts:
            continue
        style = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            '<polyline points="'
            + " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
            + f'" fill="none" stroke="{color}" stroke-width="2"{style}/>'
        )
        for px, py in pts:
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"/>')
        out.append(
            f'<line x1="{LEFT + 12}" y1="{legend_y}" x2="{LEFT + 40}" y2="{legend_y}" '
            f'stroke="{color}" stroke-width="2"{style}/>'
            f'<text x="{LEFT + 46}" y="{legend_y + 4}">{variant}, {build}</text>'
        )
        legend_y += 16
    base = med.get(("x1", "consolidating", "after"))
    if base is not None:
        # Linear from x1: time proportional to the pods.
        end = min(base * 10, ymax)
        pods_end = xmax * end / (base * 10)
        out.append(
            f'<line x1="{x(PEAK_PODS["x1"]):.1f}" y1="{y(base):.1f}" x2="{x(pods_end):.1f}" '
            f'y2="{y(end):.1f}" stroke="#888" stroke-width="1" stroke-dasharray="2,3"/>'
            f'<text x="{x(pods_end) - 4:.1f}" y="{y(end) - 6:.1f}" text-anchor="end" '
            'fill="#888">linear from x1 (consolidating, after)</text>'
        )
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
