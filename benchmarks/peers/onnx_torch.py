"""PyTorch peer of the Hub's ai.onnx benchmark cases (benchmarks/cases/ai.onnx.*.bench.json)
and of the seed packages' kernels.MatMul (benchmarks/cases/kernels.MatMul.bench.json, timed
with torch.matmul as ai.onnx.MatMul is): eager and torch.compile for Add, Softmax and MatMul at
the same shapes, and PyTorch's own device copy rate, on one CUDA GPU in one process. MatMul
runs with TF32 off for float32.

Usage: python3 onnx_torch.py [results.json [op ...]], e.g. `torch.json ai.onnx.Add` for Add only;
an op given as a path ending in `.bench.json` times that file's cases (a sweep), e.g.
`torch.json benchmarks/sweeps/softmax-attention-waves.bench.json`.
Prints one line per case: engine, op, case, dtype, median microseconds, GB/s over the minimal
bytes (each input read once, the output written once) and, for MatMul, TFLOP/s."""
import json
import os
import sys

import torch
from triton.testing import do_bench

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEVICE = "cuda"
# The cases beside this script in the repository, or those of the repository it runs from.
CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cases")
if not os.path.isdir(CASES):
    CASES = os.path.join("benchmarks", "cases")
DTYPES = {"float32": torch.float32, "float16": torch.float16}


def bench(fn):
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def add(a, b):
    return a + b


def softmax(x, axis):
    return torch.softmax(x, dim=axis)


def matmul(a, b):
    return torch.matmul(a, b)


COMPILED_MATMUL = torch.compile(matmul)
COMPILED = {
    "ai.onnx.Add": torch.compile(add),
    "ai.onnx.Softmax": torch.compile(softmax),
    "ai.onnx.MatMul": COMPILED_MATMUL,
    "kernels.MatMul": COMPILED_MATMUL,
}
EAGER = {
    "ai.onnx.Add": add,
    "ai.onnx.Softmax": softmax,
    "ai.onnx.MatMul": matmul,
    "kernels.MatMul": matmul,
}
OPS = list(EAGER)
# The ops timed in TFLOP/s: both MatMuls are torch.matmul.
MATMULS = ("ai.onnx.MatMul", "kernels.MatMul")

results = []


def report(engine, op, case, dtype, ms, nbytes, flops=None):
    row = {"engine": engine, "op": op, "case": case, "dtype": dtype, "us": ms * 1e3,
           "gbps": nbytes / ms / 1e6}
    line = f"{engine:8s} {op:16s} {case:24s} {dtype:8s} {ms * 1e3:10.1f} us {nbytes / ms / 1e6:8.0f} GB/s"
    if flops is not None:
        row["tflops"] = flops / ms / 1e9
        line += f" {row['tflops']:7.1f} TFLOP/s"
    results.append(row)
    print(line, flush=True)


def cases(ops):
    """Each case of `ops` (op names or `.bench.json` paths) in each of its dtypes, as
    (op, case, dtype name, inputs, call arguments), inputs uniform random in [-1, 1]."""
    for op in ops:
        path = op if op.endswith(".bench.json") else os.path.join(CASES, f"{op}.bench.json")
        with open(path) as f:
            spec = json.load(f)
        op = spec["op"]
        for case in spec["cases"]:
            for name in case["dtypes"]:
                dtype = DTYPES[name]
                inputs = [torch.rand(i["shape"], device=DEVICE, dtype=dtype) * 2 - 1
                          for i in case["inputs"].values()]
                args = list(inputs)
                if op == "ai.onnx.Softmax":
                    args.append(case.get("attrs", {}).get("axis", -1))
                yield op, case, name, inputs, args
                del inputs, args
                torch.cuda.empty_cache()


def main():
    print("torch", torch.__version__, torch.cuda.get_device_name(0), flush=True)
    x = torch.rand(256 << 20, device=DEVICE)  # 1 GiB of float32
    y = torch.empty_like(x)
    report("torch", "copy", "1 GiB", "float32", bench(lambda: y.copy_(x)), 2 * x.numel() * 4)
    del x, y
    for op, case, name, inputs, args in cases(sys.argv[2:] or OPS):
        out = EAGER[op](*args)
        nbytes = sum(t.numel() * t.element_size() for t in inputs)
        nbytes += out.numel() * out.element_size()
        flops = None
        if op in MATMULS:
            k = inputs[0].shape[-1]
            flops = 2 * out.numel() * k
        del out
        for engine, fns in [("eager", EAGER), ("compile", COMPILED)]:
            fn = fns[op]
            ms = bench(lambda: fn(*args))
            report(engine, op, case["name"], name, ms, nbytes, flops)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
