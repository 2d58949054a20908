#!/usr/bin/env python3
"""One table from several runs of the benchmarks: for each figure, the run with the median
value, with the minimum and maximum of all runs beside it; its verdict is the median run's.

Each input file holds table rows `| figure | measured | reference | ratio | budget | ok/MISSED |`
as the benchmarks print them. A figure's runs are ordered by its ratio when that is a ratio
(`2.40x`, `78%`), else by its measured value (times and sizes compared in one unit); rows
without a number keep their first run's text.
"""
import re
import sys

# A number with its unit, not the digits of a name such as `p99`.
NUMBER = re.compile(r"(?<![A-Za-z0-9.])([-+]?\d+(?:\.\d+)?)\s*(ns|µs|us|ms|s|B|KB|KiB|MB|MiB|GB|GiB|x|%)?")
SCALE = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0,
         "B": 1, "KB": 1e3, "KiB": 1024, "MB": 1e6, "MiB": 1024 ** 2, "GB": 1e9, "GiB": 1024 ** 3}
RATIO = re.compile(r"^[-+]?\d+(?:\.\d+)?\s*(x|%)$")


def rows(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.startswith("| ") or line.startswith("| figure") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) == 6:
                yield cells


def value(cells):
    texts = [cells[3], cells[1]] if RATIO.match(cells[3]) else [cells[1]]
    for text in texts:
        m = NUMBER.search(text)
        if m:
            return float(m.group(1)) * SCALE.get(m.group(2) or "", 1)
    return None


def shown(cells):
    """The ordering value as printed: the ratio, or the measured column's first number."""
    if RATIO.match(cells[3]):
        return cells[3]
    m = NUMBER.search(cells[1])
    return m.group(0).strip() if m else cells[1]


def main(paths):
    order, runs = [], {}
    for path in paths:
        for cells in rows(path):
            if cells[0] not in runs:
                order.append(cells[0])
                runs[cells[0]] = []
            runs[cells[0]].append(cells)
    print("| figure | measured (median run) | reference (same run) | ratio | median [min, max] | budget | runs | |")
    print("|---|---|---|---|---|---|---|---|")
    missed = 0
    for figure in order:
        found = runs[figure]
        numbered = [c for c in found if value(c) is not None]
        if numbered:
            numbered.sort(key=value)
            median = numbered[(len(numbered) - 1) // 2]
            spread = f"{shown(median)} [{shown(numbered[0])}, {shown(numbered[-1])}]"
        else:
            median = found[0]
            spread = median[3]
        mark = median[5]
        if mark == "MISSED":
            missed += 1
        print(f"| {figure} | {median[1]} | {median[2]} | {median[3]} | {spread} | {median[4]} | {len(found)} | {mark} |")
    print()
    print(f"{len(order)} figures, {missed} missed (each the median of its runs)")


if __name__ == "__main__":
    main(sys.argv[1:])
