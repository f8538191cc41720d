"""relayout.transpose against NumPy (and torch, when installed) on the permutation cases of
relayout's benchmark suite, and the Python call overhead on a small array.

    python python/benchmarks/transpose.py                      # every case, then the overhead
    python python/benchmarks/transpose.py t2d_f32_8000 perm3d_210 --format markdown
    python python/benchmarks/transpose.py --threads 2 --tune

For each case (an axis permutation of a row-major array: `relayout bench --list` shows them) the
contenders run on the same array in one process, each warmed up and then timed in interleaved
rounds; the figures are medians. The columns are those of `relayout bench`, with NumPy and torch
in place of the naive loop:

  relayout GB/s    relayout.transpose(a, axes) (a new array, like NumPy's)
  memcpy GB/s      np.copyto of a contiguous array of the same bytes (one thread)
  ratio            relayout over memcpy
  numpy GB/s       np.ascontiguousarray(a.transpose(axes)) (for the identity copy, which it
                   would return without copying, a.copy())
  speed-up         relayout over numpy
  out= GB/s        relayout.transpose(a, axes, out=b) into a preallocated b
  copyto GB/s      np.copyto(b, a.transpose(axes)) into a preallocated b
  speed-up         out= over copyto
  torch GB/s       torch.from_numpy(a).permute(axes).contiguous(), when torch is installed
  speed-up         relayout over torch
  compile µs       relayout.compile of the case's layouts, once: planning and Cranelift

GB/s counts the tensor's bytes moved one way, for every contender. Figures depend on the machine
and on what else runs on it.
"""

import argparse
import math
import statistics
import sys
import time

import numpy as np

import relayout

try:
    import torch
except ImportError:
    torch = None

MIN_RUN = 0.01  # seconds: short calls are repeated within one timed run

COLUMNS = [
    ("case", "case"),
    ("dtype", "dtype"),
    ("bytes", "bytes"),
    ("threads", "threads"),
    ("relayout_gbps", "relayout GB/s"),
    ("memcpy_gbps", "memcpy GB/s"),
    ("ratio_memcpy", "ratio"),
    ("numpy_gbps", "numpy GB/s"),
    ("speedup_numpy", "speed-up"),
    ("out_gbps", "out= GB/s"),
    ("copyto_gbps", "copyto GB/s"),
    ("speedup_copyto", "speed-up"),
    ("torch_gbps", "torch GB/s"),
    ("speedup_torch", "speed-up"),
    ("compile_us", "compile µs"),
]


def interleaved_medians(contenders, runs):
    """Median seconds per call of each contender (a function of no arguments): each is warmed
    up, doubling its calls until a batch lasts MIN_RUN, then the contenders run in interleaved
    rounds so that drift hits them alike."""

    def timed(f, calls):
        start = time.perf_counter()
        for _ in range(calls):
            f()
        return time.perf_counter() - start

    calls = []
    for f in contenders:
        n = 1
        while timed(f, n) < MIN_RUN:
            n *= 2
        calls.append(n)
    times = [[] for _ in contenders]
    for _ in range(runs):
        for i, f in enumerate(contenders):
            times[i].append(timed(f, calls[i]) / calls[i])
    return [statistics.median(t) for t in times]


def significant(x):
    """Four significant digits, like `relayout bench`."""
    if x is None:
        return "-"
    magnitude = 0 if x == 0 or not math.isfinite(x) else math.floor(math.log10(abs(x)))
    decimals = min(max(3 - magnitude, 0), 12)
    return f"{x:.{decimals}f}"


def human_bytes(n):
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B"


def filled(shape, dtype):
    """An array of `shape` whose elements differ (every page touched before timing)."""
    n = math.prod(shape)
    return (np.arange(n, dtype=np.uint64) * 2654435761 % 65521).astype(dtype).reshape(shape)


def measure(case, threads, runs, tune):
    dtype = np.dtype(case["numpy_dtype"])
    shape, axes = tuple(case["shape"]), tuple(case["axes"])
    a = filled(shape, dtype)
    view = a.transpose(axes)
    identity = view.flags.c_contiguous
    out, out2, same = np.empty_like(view, order="C"), np.empty_like(view, order="C"), np.empty_like(a)

    src, dst = relayout.Layout(case["src"]), relayout.Layout(case["dst"])
    start = time.perf_counter()
    relayout.compile(src, dst, dtype=case["dtype"], threads=threads)
    compile_secs = time.perf_counter() - start
    first = relayout.transpose(a, axes, threads=threads, tune=tune)
    assert np.array_equal(first, np.ascontiguousarray(view)), case["name"]
    if tune:  # through the tuning runs (each a correct transpose), then time the choice
        for _ in range(48):
            relayout.transpose(a, axes, threads=threads, tune=tune)
            relayout.transpose(a, axes, out=out2, threads=threads, tune=tune)

    contenders = [
        lambda: relayout.transpose(a, axes, threads=threads, tune=tune),
        lambda: np.copyto(same, a),
        (lambda: a.copy()) if identity else (lambda: np.ascontiguousarray(view)),
        lambda: relayout.transpose(a, axes, out=out2, threads=threads, tune=tune),
        lambda: np.copyto(out, view),
    ]
    if torch is not None:
        t = torch.from_numpy(a)
        if case["dtype"] == "bf16":
            t = t.view(torch.bfloat16)
        torch.set_num_threads(threads)
        contenders.append((lambda: t.clone()) if identity else (lambda: t.permute(axes).contiguous()))
    secs = interleaved_medians(contenders, runs)
    assert np.array_equal(out, out2), case["name"]
    gbps = [a.nbytes / s / 1e9 for s in secs]
    torch_gbps = gbps[5] if torch is not None else None
    return {
        "case": case["name"],
        "dtype": case["dtype"],
        "bytes": a.nbytes,
        "threads": threads,
        "relayout_gbps": gbps[0],
        "memcpy_gbps": gbps[1],
        "ratio_memcpy": gbps[0] / gbps[1],
        "numpy_gbps": gbps[2],
        "speedup_numpy": gbps[0] / gbps[2],
        "out_gbps": gbps[3],
        "copyto_gbps": gbps[4],
        "speedup_copyto": gbps[3] / gbps[4],
        "torch_gbps": torch_gbps,
        "speedup_torch": gbps[0] / torch_gbps if torch_gbps else None,
        "compile_us": compile_secs * 1e6,
        "identity": identity,
    }


def cells(row, fmt):
    out = []
    for key, _ in COLUMNS:
        v = row[key]
        if key == "case":
            out.append(v + ("*" if row["identity"] else ""))
        elif key == "bytes":
            out.append(str(v) if fmt == "tsv" else human_bytes(v))
        elif key in ("dtype", "threads"):
            out.append(str(v))
        elif key == "compile_us":
            out.append(f"{v:.0f}")
        else:
            out.append(significant(v))
    return out


def print_header(fmt):
    if fmt == "tsv":
        print("\t".join(key for key, _ in COLUMNS))
    elif fmt == "markdown":
        print("| " + " | ".join(h for _, h in COLUMNS) + " |")
        print("|" + " --- |" * len(COLUMNS))
    else:
        print("  ".join(h.rjust(w) if i > 1 else h.ljust(w) for i, ((_, h), w) in enumerate(zip(COLUMNS, WIDTHS))))


WIDTHS = [18, 5, 10, 7, 13, 11, 7, 10, 8, 9, 11, 8, 10, 8, 10]


def print_row(row, fmt):
    c = cells(row, fmt)
    if fmt == "tsv":
        print("\t".join(c))
    elif fmt == "markdown":
        print("| " + " | ".join(c) + " |")
    else:
        print("  ".join(x.rjust(w) if i > 1 else x.ljust(w) for i, (x, w) in enumerate(zip(c, WIDTHS))))
    sys.stdout.flush()


def overhead(runs):
    """Microseconds per call on an 8x8 float32 transpose: the cost of a call, not of moving."""
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    b = np.empty((8, 8), np.float32)
    kernel = relayout.compile("cute:(8,8):(8,1)", "cute:(8,8):(1,8)")
    flat, flat_out = a.reshape(-1), np.empty(64, np.float32)
    contenders = {
        "relayout.transpose(a)": lambda: relayout.transpose(a),
        "relayout.transpose(a, out=b)": lambda: relayout.transpose(a, out=b),
        "kernel(a, out=b) (compiled once)": lambda: kernel(flat, out=flat_out),
        "np.ascontiguousarray(a.T)": lambda: np.ascontiguousarray(a.T),
        "np.copyto(b, a.T)": lambda: np.copyto(b, a.T),
    }
    if torch is not None:
        t = torch.from_numpy(a)
        contenders["t.T.contiguous() (torch)"] = lambda: t.T.contiguous()
    secs = interleaved_medians(list(contenders.values()), runs)
    print("\nPython call overhead: an 8x8 float32 transpose (256 bytes), µs per call")
    for name, s in zip(contenders, secs):
        print(f"  {name:34} {s * 1e6:7.2f}")


def main():
    cases = relayout._suite_cases()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="suite cases to run (default: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each contender")
    parser.add_argument("--tune", action="store_true", help="let relayout tune large transposes first")
    parser.add_argument("--format", choices=["table", "tsv", "markdown"], default="table")
    parser.add_argument("--reduced", action="store_true", help="the suite's small sizes (to test the script)")
    parser.add_argument("--no-overhead", action="store_true", help="skip the call overhead")
    args = parser.parse_args()
    if args.reduced:
        cases = relayout._suite_cases(reduced=True)
    names = {c["name"] for c in cases}
    unknown = [n for n in args.cases if n not in names]
    if unknown:
        parser.error(f"unknown cases {unknown}; the suite has {sorted(names)}")
    chosen = [c for c in cases if not args.cases or c["name"] in args.cases]
    print_header(args.format)
    for case in chosen:
        print_row(measure(case, args.threads, args.runs, args.tune), args.format)
    if any(c["axes"] == sorted(c["axes"]) for c in chosen):
        print("* the identity copy: np.ascontiguousarray would return its input, so numpy is a.copy()")
    if torch is None:
        print("torch is not installed: no torch column")
    if not args.no_overhead:
        overhead(args.runs)


if __name__ == "__main__":
    main()
