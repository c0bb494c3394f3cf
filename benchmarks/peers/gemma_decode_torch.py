"""PyTorch peer of one decode step of the Gemma-4-style decoder in examples/gemma-decoder:
the same step (test-support/src/decode, stage by stage) at the same shapes, with dense float16
weights (the packed 4-bit projections and embedding tables become float16 matrices of the same
shapes), greedy tokens chosen and fed back on the GPU with no host sync per token.

Usage: python3 gemma_decode_torch.py --config small|e2b --tokens N [--positions START] OUT.json
(also --seed, --token, --modes, --compile-mode). The cache positions before START are filled by
an untimed eager decode from position 0; each mode then decodes N tokens from START, once to warm
up and once timed with CUDA events around every token. Prints one line per mode: median us per
token, tokens/s over the whole timed run, GB/s over the bytes read per token, first tokens.

Precision: weights, KV caches and every matrix product's input and output are float16; RMS norms,
the residual stream, RoPE, the softmax and the GELU gates compute in float32 (the usual mixed
precision of PyTorch decoders).

Modes:
- eager: attention over exactly the cached positions (`K[first:pos + 1]`, Python slicing).
- eager_masked: the graph-capturable step: `pos` is a device tensor, the KV row is written with
  index_copy_, and attention reads the whole preallocated cache `[max_positions, ...]` with a
  mask built on the device from `pos` (and the window for local layers), so one graph serves
  every position. It reads the whole cache every token (the byte counts below say how much).
- eager_masked_graph: that step captured once in a CUDA graph and replayed per token.
- compile_graph: torch.compile of that step (--compile-mode, default
  max-autotune-no-cudagraphs), captured by hand in a CUDA graph and replayed per token."""
import argparse
import json
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

# examples/gemma-decoder/src/config.rs
CONFIGS = {
    "small": dict(hidden=1536, layers=2, q_heads=4, kv_heads=1, head_dim=256, intermediate=3072,
                  vocab=4096, ple_dim=256, sliding_window=16, global_every=2, max_positions=64),
    "e2b": dict(hidden=1536, layers=35, q_heads=8, kv_heads=1, head_dim=256, intermediate=6144,
                vocab=262_144, ple_dim=256, sliding_window=512, global_every=5,
                max_positions=1024),
}
EPS = 1e-6
THETA_LOCAL = 10_000.0
THETA_GLOBAL = 1_000_000.0
MODES = ["eager", "eager_masked", "eager_masked_graph", "compile_graph"]


def rms(x, w, width):
    """`x / sqrt(mean(x²) + eps) * w` over rows of `width`, in float32, flattened."""
    x = x.float().view(-1, width)
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
    if w is not None:
        y = y * w
    return y.view(-1)


def rope(x, cos, sin):
    """Split-half rotation of each head of `x` [heads, head_dim] by `cos`, `sin` [1, half]."""
    half = x.shape[-1] // 2
    a, b = x[:, :half], x[:, half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class Decoder:
    def __init__(self, c, seed, device):
        self.c = c
        H, L, P, D = c["hidden"], c["layers"], c["ple_dim"], c["head_dim"]
        Hq, KV, I, V, T = c["q_heads"], c["kv_heads"], c["intermediate"], c["vocab"], c["max_positions"]
        torch.manual_seed(seed)

        def mat(rows, cols, scale_cols=None):
            w = torch.randn(rows, cols, device=device, dtype=torch.float16)
            return w.mul_((scale_cols or cols) ** -0.5)

        def norm(n):
            return 1.0 + 0.1 * torch.rand(n, device=device, dtype=torch.float32)

        # Table rows have RMS 1/sqrt(width): times sqrt(width) at the gather they are unit-scale.
        self.embed = mat(V, H)
        self.ple_embed = mat(V, L * P, scale_cols=P)
        self.ple_model_projection = mat(L * P, H)
        self.ple_projection_norm = norm(P)
        self.layers = []
        for l in range(L):
            self.layers.append(dict(
                input_norm=norm(H), q=mat(Hq * D, H), k=mat(KV * D, H), v=mat(KV * D, H),
                q_norm=norm(D), k_norm=norm(D), o=mat(H, Hq * D), post_attention_norm=norm(H),
                pre_mlp_norm=norm(H), gate=mat(I, H), up=mat(I, H), down=mat(H, I),
                post_mlp_norm=norm(H), ple_gate=mat(P, H), ple_projection=mat(H, P),
                post_ple_norm=norm(H), layer_scalar=0.75 + 0.25 * float(torch.rand(1)),
                is_global=(l + 1) % c["global_every"] == 0))
        self.final_norm = norm(H)
        self.lm_head = mat(V, H)
        self.k_cache = [torch.zeros(T, KV, D, device=device, dtype=torch.float16) for _ in range(L)]
        self.v_cache = [torch.zeros(T, KV, D, device=device, dtype=torch.float16) for _ in range(L)]
        # Rotation tables [max_positions, half], float64 on the host like the GPU model's.
        i = torch.arange(D // 2, dtype=torch.float64)
        p = torch.arange(T, dtype=torch.float64)[:, None]
        self.cos, self.sin = {}, {}
        for is_global, theta in [(False, THETA_LOCAL), (True, THETA_GLOBAL)]:
            angle = p / theta ** (2.0 * i / D)[None, :]
            self.cos[is_global] = angle.cos().float().to(device)
            self.sin[is_global] = angle.sin().float().to(device)
        self.positions = torch.arange(T, device=device)
        self.tok = torch.zeros(1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.out = torch.zeros(T, dtype=torch.long, device=device)

    def reset(self, pos, token):
        self.pos.fill_(pos)
        self.tok.fill_(token)

    def attend(self, l, q, pos, pos_int):
        """Decode attention of `q` [q_heads, head_dim] (normed, rotated) over layer `l`'s cache,
        scale 1.0; query head h reads KV head h // (q_heads // kv_heads)."""
        c, lw = self.c, self.layers[l]
        KV, D = c["kv_heads"], c["head_dim"]
        keys, values = self.k_cache[l], self.v_cache[l]
        q = q.view(KV, -1, D).to(torch.float16)
        if pos_int is not None:
            first = 0 if lw["is_global"] else max(0, pos_int + 1 - c["sliding_window"])
            keys, values = keys[first:pos_int + 1], values[first:pos_int + 1]
        scores = torch.einsum("kgd,tkd->kgt", q, keys).float()
        if pos_int is None:
            valid = self.positions <= pos
            if not lw["is_global"]:
                valid = valid & (self.positions > pos - c["sliding_window"])
            scores = scores.masked_fill(~valid, float("-inf"))
        probs = torch.softmax(scores, dim=-1).to(torch.float16)
        return torch.einsum("kgt,tkd->kgd", probs, values).reshape(1, -1)

    def decode_step(self, tok, pos, pos_int=None):
        """One token at `pos` (device [1]); `pos_int` (its value on the host) selects the sliced
        attention, None the masked one. Writes the next token into `tok` and `out[pos]`, and
        advances `pos`."""
        c = self.c
        H, P, D = c["hidden"], c["ple_dim"], c["head_dim"]
        KV, half = c["kv_heads"], c["head_dim"] // 2
        h16 = torch.float16
        # Embedding row and layer 0's input; the per-layer inputs from the same row.
        hidden = self.embed.index_select(0, tok).view(-1).float() * math.sqrt(H)
        x = rms(hidden, self.layers[0]["input_norm"], H).to(h16).view(1, H)
        gathered = self.ple_embed.index_select(0, tok).view(-1).float() * math.sqrt(P)
        projected = F.linear(hidden.to(h16).view(1, H), self.ple_model_projection)
        ple = (rms(projected, self.ple_projection_norm, P) + gathered) * (1.0 / math.sqrt(2.0))
        rot = {g: (self.cos[g].index_select(0, pos), self.sin[g].index_select(0, pos))
               for g in (False, True)}
        for l, lw in enumerate(self.layers):
            cos, sin = rot[lw["is_global"]]
            q, k, v = F.linear(x, lw["q"]), F.linear(x, lw["k"]), F.linear(x, lw["v"])
            k = rope(rms(k, lw["k_norm"], D).view(KV, D), cos, sin)
            self.k_cache[l].index_copy_(0, pos, k.to(h16).view(1, KV, D))
            v = rms(v, None, D)
            self.v_cache[l].index_copy_(0, pos, v.to(h16).view(1, KV, D))
            q = rope(rms(q, lw["q_norm"], D).view(-1, D), cos, sin)
            attended = self.attend(l, q, pos, pos_int)
            o = F.linear(attended, lw["o"])
            hidden = hidden + rms(o, lw["post_attention_norm"], H)
            mlp_in = rms(hidden, lw["pre_mlp_norm"], H).to(h16).view(1, H)
            gate, up = F.linear(mlp_in, lw["gate"]), F.linear(mlp_in, lw["up"])
            mlp = (F.gelu(gate.float(), approximate="tanh") * up.float()).to(h16)
            hidden = hidden + rms(F.linear(mlp, lw["down"]), lw["post_mlp_norm"], H)
            g = F.linear(hidden.to(h16).view(1, H), lw["ple_gate"]).view(-1).float()
            gated = (F.gelu(g, approximate="tanh") * ple[l * P:(l + 1) * P]).to(h16).view(1, P)
            projected = F.linear(gated, lw["ple_projection"])
            hidden = (hidden + rms(projected, lw["post_ple_norm"], H)) * lw["layer_scalar"]
            nxt_norm = self.layers[l + 1]["input_norm"] if l + 1 < len(self.layers) else self.final_norm
            x = rms(hidden, nxt_norm, H).to(h16).view(1, H)
        logits = F.linear(x, self.lm_head).view(-1)
        nxt = torch.argmax(logits).view(1)
        self.out.index_copy_(0, pos, nxt)
        tok.copy_(nxt)
        pos.add_(1)

    def bytes_per_token(self, start, n):
        """Bytes each token reads: every matrix but the embedding tables, one row of each table,
        and the KV rows attended (exactly, averaged over the run; or the whole cache, masked)."""
        c = self.c
        mats = [self.ple_model_projection, self.lm_head]
        mats += [lw[k] for lw in self.layers for k in
                 ("q", "k", "v", "o", "gate", "up", "down", "ple_gate", "ple_projection")]
        weights = sum(m.numel() * m.element_size() for m in mats)
        rows = 2 * (c["hidden"] + c["layers"] * c["ple_dim"])
        kv_row = 2 * 2 * c["kv_heads"] * c["head_dim"]  # a key and a value row, float16
        exact = 0
        for pos in range(start, start + n):
            for lw in self.layers:
                first = 0 if lw["is_global"] else max(0, pos + 1 - c["sliding_window"])
                exact += (pos + 1 - first) * kv_row
        return dict(weights=weights, embedding_rows=rows, kv_exact=exact / n,
                    kv_masked=c["layers"] * c["max_positions"] * kv_row)


def capture(fn, dec, start, token):
    """A CUDA graph of one call of `fn`, after warm-up calls on a side stream."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            dec.reset(start, token)
            fn()
    torch.cuda.current_stream().wait_stream(s)
    dec.reset(start, token)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph


def timed(step, dec, start, token, n):
    """A warm-up run of `n` tokens from `start`, then a timed one: (ms per token, ms in all)."""
    for _ in range(2):
        dec.reset(start, token)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        torch.cuda.synchronize()
        events[0].record()
        for i in range(n):
            step(start + i)
            events[i + 1].record()
        torch.cuda.synchronize()
    per = [events[i].elapsed_time(events[i + 1]) for i in range(n)]
    return per, events[0].elapsed_time(events[n])


def copy_gbps():
    """PyTorch's device copy rate over 1 GiB, bytes read and written, median of 20."""
    x = torch.empty(256 << 20, device="cuda")
    y = torch.empty_like(x)
    times = []
    for _ in range(25):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        y.copy_(x)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    del x, y
    torch.cuda.empty_cache()
    return 2 * (1 << 30) / statistics.median(times[5:]) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="small")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--positions", type=int, default=0, help="the first decoded position")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--token", type=int, default=1, help="the token at position 0")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of " + ", ".join(MODES))
    ap.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
    ap.add_argument("out", help="results JSON")
    args = ap.parse_args()
    if torch is None:
        sys.exit("gemma_decode_torch.py needs PyTorch (`import torch` failed)")
    if not torch.cuda.is_available():
        sys.exit("gemma_decode_torch.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    c = CONFIGS[args.config]
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in MODES for m in modes):
        sys.exit(f"--modes: choose from {', '.join(MODES)}")
    start, n = args.positions, args.tokens
    if n < 1 or start < 0 or start + n > c["max_positions"]:
        sys.exit(f"--positions {start} --tokens {n}: positions must lie in 0..{c['max_positions']}")
    if not 0 <= args.token < c["vocab"]:
        sys.exit(f"--token {args.token} is outside the vocabulary of {c['vocab']}")

    device_name = torch.cuda.get_device_name(0)
    print("torch", torch.__version__, device_name, f"config {args.config}", c, flush=True)
    ceiling = copy_gbps()
    dec = Decoder(c, args.seed, "cuda")
    with torch.no_grad():
        # The cache positions before `start`, decoded eagerly from position 0.
        dec.reset(0, args.token)
        for p in range(start):
            dec.decode_step(dec.tok, dec.pos, p)
        token = int(dec.tok.item())
    nbytes = dec.bytes_per_token(start, n)
    read_exact = nbytes["weights"] + nbytes["embedding_rows"] + nbytes["kv_exact"]
    read_masked = nbytes["weights"] + nbytes["embedding_rows"] + nbytes["kv_masked"]
    print(f"copy {ceiling:.0f} GB/s; bytes read per token: {read_exact / 1e6:.1f} MB attending "
          f"exactly, {read_masked / 1e6:.1f} MB over the whole cache", flush=True)
    result = dict(config=args.config, dims=dict(c, eps=EPS, rope_theta_local=THETA_LOCAL,
                  rope_theta_global=THETA_GLOBAL), dtype="float16 weights, KV cache and matrix "
                  "products; float32 norms, residual, RoPE, softmax and GELU",
                  device=device_name, torch=torch.__version__, seed=args.seed,
                  start_position=start, tokens_decoded=n, first_token=token,
                  compile_mode=args.compile_mode, copy_gbps=ceiling, bytes_per_token=dict(
                      nbytes, read_exact=read_exact, read_masked=read_masked), modes={})

    def masked():
        dec.decode_step(dec.tok, dec.pos)

    for mode in modes:
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                if mode == "eager":
                    step = lambda p: dec.decode_step(dec.tok, dec.pos, p)
                elif mode == "eager_masked":
                    step = lambda p: masked()
                else:
                    fn = masked
                    if mode == "compile_graph":
                        compiled = torch.compile(dec.decode_step, mode=args.compile_mode)
                        fn = lambda: compiled(dec.tok, dec.pos)
                    graph = capture(fn, dec, start, token)
                    step = lambda p: graph.replay()
                setup_s = time.perf_counter() - t0
                per, total = timed(step, dec, start, token, n)
                tokens = dec.out[start:start + n].tolist()
        except Exception as e:  # report the failure, keep the other modes
            print(f"{mode:20s} failed: {type(e).__name__}: {e}", flush=True)
            result["modes"][mode] = dict(error=f"{type(e).__name__}: {e}")
            continue
        us = statistics.median(per) * 1e3
        nread = read_exact if mode == "eager" else read_masked
        row = dict(us_per_token_median=us, tokens_per_s=n / (total / 1e3),
                   gbps=nread / us / 1e3, setup_s=setup_s, tokens=tokens[:16],
                   us_per_token_min=min(per) * 1e3, us_per_token_max=max(per) * 1e3)
        result["modes"][mode] = row
        print(f"{mode:20s} {us:10.1f} us/token {row['tokens_per_s']:9.1f} tokens/s "
              f"{row['gbps']:7.0f} GB/s  tokens {tokens[:8]}", flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
