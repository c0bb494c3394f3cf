"""The launch geometry of PyTorch's kernels for the Hub's ai.onnx benchmark cases: for each
case (as onnx_torch.py runs them, eager and torch.compile), the CUDA kernels one call launches,
with grid, block, registers per thread, shared memory and the occupancy the profiler estimates,
read from a torch.profiler trace. It tells which workgroup shapes the peer chose where a
manifest's dispatch fixes ours.

Usage: python3 torch_launches.py [op or .bench.json path ...] [--case NAME]
e.g. `python3 benchmarks/peers/torch_launches.py ai.onnx.Softmax --case "attention rows"`."""
import json
import os
import sys
import tempfile

import torch
from onnx_torch import COMPILED, EAGER, OPS, cases


def launches(fn, args):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn(*args)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    return [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"]


def main():
    argv = sys.argv[1:]
    only = None
    if "--case" in argv:
        i = argv.index("--case")
        only = argv[i + 1]
        del argv[i:i + 2]
    print("torch", torch.__version__, torch.cuda.get_device_name(0), flush=True)
    for op, case, name, _, args in cases(argv or OPS):
        if only is not None and case["name"] != only:
            continue
        for engine, fns in [("eager", EAGER), ("compile", COMPILED)]:
            for k in launches(fns[op], args):
                a = k.get("args", {})
                print(f"{engine:8s} {op} / {case['name']} / {name}: {k['name'][:60]}"
                      f" grid {a.get('grid')} block {a.get('block')}"
                      f" registers {a.get('registers per thread')}"
                      f" shared {a.get('shared memory')}"
                      f" occupancy {a.get('est. achieved occupancy %')}%"
                      f" {k.get('dur')} us", flush=True)


if __name__ == "__main__":
    main()
