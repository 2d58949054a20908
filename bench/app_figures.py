#!/usr/bin/env python3
"""Start-up time and idle memory of the real app under Xvfb, and the release binaries' sizes.

Start-up: from the moment the `mandate` process is started to the page's first frame (the page
waits for one animation frame before its first request; the host writes the wall-clock time of
that request to MANDATE_STARTUP_TRACE).

Memory: the whole process tree (the app and WebKit's web and network processes), idle, SETTLE
seconds after launch, as RSS, PSS (proportional set size: a page shared by n processes counts
1/n in each, so shared libraries count once across the tree and the sum is what the tree costs
the machine) and USS (pages no other process maps: what quitting the app gives back). WebKitGTK's
own MiniBrowser showing the same page in a window of the same size is measured the same way in the
same run; the median of
MEMORY_RUNS runs of each is reported. MANDATE_BENCH_ONLY=memory skips the start-up runs, and
MANDATE_BENCH_DETAIL=1 prints each process of the median run on stderr, with the mappings
that carry most of its PSS.

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
MEMORY_RUNS = int(os.environ.get("MANDATE_BENCH_MEMORY_RUNS", "3"))
SETTLE = 6.0
# The app's window (src-tauri/src/window.rs) and the Xvfb screen.
WIDTH, HEIGHT = 1280, 820
ONLY = os.environ.get("MANDATE_BENCH_ONLY", "")
DETAIL = os.environ.get("MANDATE_BENCH_DETAIL") == "1"


def start_display():
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", f"{WIDTH}x{HEIGHT}x24", "-nolisten", "tcp"],
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
    """(rss, pss, uss, per-process list) in kB for the processes `pids`."""
    rss = pss = uss = 0
    per = []
    for p in pids:
        try:
            fields = {}
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                        fields[parts[0][:-1]] = int(parts[1])
            with open(f"/proc/{p}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        p_uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
        rss += fields.get("Rss", 0)
        pss += fields.get("Pss", 0)
        uss += p_uss
        per.append((name, fields.get("Rss", 0), fields.get("Pss", 0), p_uss, mappings(p) if DETAIL else {}))
    return rss, pss, uss, per


def mappings(pid):
    """PSS in kB by what is mapped (a file's name, [heap], [anon], ...), for the detail."""
    out, name = {}, None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                parts = line.split()
                if parts and not parts[0].endswith(":"):
                    path = parts[5] if len(parts) >= 6 else "[anon]"
                    name = os.path.basename(path) if path.startswith("/") else path
                elif parts and parts[0] == "Pss:" and name:
                    out[name] = out.get(name, 0) + int(parts[1])
    except OSError:
        pass
    return out


def median_run(mems):
    """The run with the median PSS (a whole run, so the three figures belong together)."""
    ordered = sorted(mems, key=lambda m: m[1])
    return ordered[len(ordered) // 2]


def detail(label, mem):
    if not DETAIL or not mem:
        return
    for name, rss, pss, uss, maps in sorted(mem[3], key=lambda x: -x[2]):
        print(f"  {label}: {name:<20} RSS {rss / 1024:6.1f}  PSS {pss / 1024:6.1f}  USS {uss / 1024:6.1f} MB", file=sys.stderr)
        top = sorted(maps.items(), key=lambda m: -m[1])[:10]
        print("      " + ", ".join(f"{m} {kb / 1024:.1f}" for m, kb in top), file=sys.stderr)


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
        time.sleep(max(0.0, SETTLE - (time.time_ns() - started) / 1e9))
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
    started = time.time()
    browser = subprocess.Popen([MINIBROWSER, page], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # MiniBrowser opens at 1024x768 (its toolbar included); the app's window is 1280x820. Window
    # buffers grow with the size, so it is given the app's size (its page gets a little less:
    # the toolbar keeps its share). No window manager runs, so the resize is taken as asked.
    try:
        windows = subprocess.run(
            ["xdotool", "search", "--sync", "--onlyvisible", "--pid", str(browser.pid)],
            env=env, capture_output=True, text=True, timeout=SETTLE,
        ).stdout.split()
        for window in windows:
            subprocess.run(["xdotool", "windowsize", window, str(WIDTH), str(HEIGHT)], env=env, timeout=SETTLE)
    except (OSError, subprocess.TimeoutExpired):
        print("MiniBrowser's window could not be resized (xdotool); it stays at 1024x768", file=sys.stderr)
    time.sleep(max(0.0, SETTLE - (time.time() - started)))
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
        one_run(display, workspace, False)  # warm the page cache
        starts, mems, refs = [], [], []
        # Memory runs alternate with the reference's, so both see the same machine.
        for _ in range(MEMORY_RUNS):
            ref = minibrowser_memory(display)
            if ref:
                refs.append(ref)
            _, mem = one_run(display, workspace, True)
            if mem:
                mems.append(mem)
        for i in range(RUNS if ONLY != "memory" else 0):
            ms, _ = one_run(display, workspace, False)
            if ms is not None:
                starts.append(ms)
    finally:
        xvfb.terminate()
        shutil.rmtree(workspace, ignore_errors=True)
    reference = median_run(refs) if refs else None
    detail("MiniBrowser", reference)
    if ONLY == "memory":
        pass
    elif starts:
        med = statistics.median(starts)
        row(f"app start, launch to first paint ({len(starts)} runs)", f"{med:.0f} ms median",
            f"min {min(starts):.0f} / max {max(starts):.0f} ms", "", "<= 500 ms median", med <= 500)
    else:
        row("app start, launch to first paint", "no paint seen", "", "", "<= 500 ms median", False)
    if mems:
        mem = median_run(mems)
        detail("Mandate", mem)
        rss, pss, uss, per = mem
        names = ", ".join(sorted({p[0] for p in per}))
        measured = f"{pss / 1024:.0f} MB PSS, {uss / 1024:.0f} MB USS ({rss / 1024:.0f} MB RSS)"
        if reference:
            r_rss, r_pss, r_uss, _ = reference
            ref = f"MiniBrowser, same page: {r_pss / 1024:.0f} MB PSS, {r_uss / 1024:.0f} MB USS ({r_rss / 1024:.0f} MB RSS)"
            ratio = f"{pss / r_pss:.2f}x PSS, {uss / r_uss:.2f}x USS"
            ok = pss <= r_pss
        else:
            ref, ratio, ok = "MiniBrowser not found", "", False
        row(f"memory, idle window, process tree ({names}), median of {len(mems)}",
            measured, ref, ratio, "PSS <= MiniBrowser's", ok)
    if ONLY == "memory":
        return
    for name in ["mandate", "mandate-window"]:
        size = os.path.getsize(os.path.join(RELEASE, name)) / 1e6
        row(f"release binary `{name}` (stripped)", f"{size:.1f} MB", "", "", "<= 20 MB", size <= 20)


if __name__ == "__main__":
    main()
