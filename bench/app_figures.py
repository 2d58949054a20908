#!/usr/bin/env python3
"""Start-up time and idle memory of the real app under Xvfb, and the release binaries' sizes.

Start-up: from the moment the `mandate` process is started to the page's first frame (the page
waits for one animation frame before its first request; the host writes the wall-clock time of
that request to MANDATE_STARTUP_TRACE). Memory: the app's whole process tree (the app and
WebKit's web and network processes) three seconds after it is ready, as RSS and as PSS
(proportional set size: shared libraries counted once across the tree).

Prints markdown table rows like the Rust benchmarks do.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RELEASE = os.path.join(ROOT, "target", "release")
RUNS = int(os.environ.get("MANDATE_BENCH_RUNS", "9"))


def start_display():
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "1280x820x24", "-nolisten", "tcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    number = xvfb.stdout.readline().decode().strip()
    return xvfb, f":{number}"


def tree(pid):
    """pid and all its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def memory_kb(pids):
    rss = pss = 0
    names = []
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
            with open(f"/proc/{p}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return rss, pss, names


def one_run(display, workspace, measure_memory):
    home = tempfile.mkdtemp(prefix="mandate-bench-")
    trace = os.path.join(home, "first-paint")
    env = dict(os.environ)
    env.update(
        DISPLAY=display,
        MANDATE_CONFIG_DIR=os.path.join(home, "config"),
        MANDATE_DATA_DIR=os.path.join(home, "data"),
        MANDATE_STARTUP_TRACE=trace,
        WEBKIT_DISABLE_COMPOSITING_MODE="1",
        NO_AT_BRIDGE="1",
    )
    started = time.time_ns()
    app = subprocess.Popen(
        [os.path.join(RELEASE, "mandate"), "--workspace", workspace],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    painted = None
    deadline = time.time() + 30
    while time.time() < deadline:
        if os.path.exists(trace):
            with open(trace) as f:
                text = f.read().strip()
            if text:
                painted = int(text)
                break
        time.sleep(0.005)
    mem = None
    if measure_memory and painted:
        time.sleep(3)
        mem = memory_kb(tree(app.pid))
    app.terminate()
    try:
        app.wait(timeout=5)
    except subprocess.TimeoutExpired:
        app.kill()
    shutil.rmtree(home, ignore_errors=True)
    return (painted - started) / 1e6 if painted else None, mem


MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"


def minibrowser_memory(display):
    """WebKitGTK's own browser showing the same page: the floor any WebKitGTK window pays."""
    if not os.path.exists(MINIBROWSER):
        return None
    env = dict(os.environ, DISPLAY=display, WEBKIT_DISABLE_COMPOSITING_MODE="1", NO_AT_BRIDGE="1")
    page = "file://" + os.path.join(ROOT, "ui", "index.html")
    browser = subprocess.Popen([MINIBROWSER, page], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(6)
    mem = memory_kb(tree(browser.pid))
    browser.terminate()
    try:
        browser.wait(timeout=5)
    except subprocess.TimeoutExpired:
        browser.kill()
    return mem


def row(figure, measured, reference, ratio, budget, ok):
    print(f"| {figure} | {measured} | {reference} | {ratio} | {budget} | {'ok' if ok else 'MISSED'} |")


def main():
    if not os.path.exists(os.path.join(RELEASE, "mandate-window")):
        sys.exit("build the release binaries first: cargo build --release -p mandate")
    workspace = tempfile.mkdtemp(prefix="mandate-bench-ws-")
    os.makedirs(os.path.join(workspace, ".orchestration"))
    with open(os.path.join(workspace, ".orchestration", "active_intents.yaml"), "w") as f:
        f.write("active_intents:\n  - id: INT-1\n    name: Bench\n    owned_scope: [\"src/**\"]\n")
    xvfb, display = start_display()
    try:
        reference = minibrowser_memory(display)
        one_run(display, workspace, False)  # warm the page cache
        starts, mems = [], []
        for i in range(RUNS):
            ms, mem = one_run(display, workspace, i == RUNS - 1 or i == RUNS // 2)
            if ms is not None:
                starts.append(ms)
            if mem:
                mems.append(mem)
    finally:
        xvfb.terminate()
        shutil.rmtree(workspace, ignore_errors=True)
    if starts:
        med = statistics.median(starts)
        row(f"app start, launch to first paint ({len(starts)} runs)", f"{med:.0f} ms median",
            f"min {min(starts):.0f} / max {max(starts):.0f} ms", "", "<= 500 ms median", med <= 500)
    else:
        row("app start, launch to first paint", "no paint seen", "", "", "<= 500 ms median", False)
    if mems:
        rss, pss, names = max(mems, key=lambda m: m[0])
        if reference:
            ref = f"WebKitGTK MiniBrowser, same page: {reference[0] / 1024:.0f} MB RSS / {reference[1] / 1024:.0f} MB PSS"
            ratio = f"{rss / reference[0]:.2f}x RSS, {pss / reference[1]:.2f}x PSS"
        else:
            ref, ratio = "MiniBrowser not found", ""
        row(f"memory, idle window, process tree ({', '.join(sorted(set(names)))})",
            f"{rss / 1024:.0f} MB RSS ({pss / 1024:.0f} MB PSS)", ref, ratio, "<= 150 MB RSS", rss / 1024 <= 150)
    for name in ["mandate", "mandate-window"]:
        size = os.path.getsize(os.path.join(RELEASE, name)) / 1e6
        row(f"release binary `{name}` (stripped)", f"{size:.1f} MB", "", "", "<= 20 MB", size <= 20)


if __name__ == "__main__":
    main()
