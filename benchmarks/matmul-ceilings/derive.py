"""Derives experiment kernels from a tensor-core MatMul shader of `packages/kernels.MatMul`
(the native text of a `subgroup_matrix*` shader, as the op's shader table holds it), for
timing with `cargo run --release -p kernels-tools --bin wgsl-matmul`.

Usage: python3 derive.py KERNEL.wgsl TRANSFORM[+TRANSFORM...] > OUT.wgsl

Transforms, applied left to right:
  smem          the slice after the first is never loaded: cooperative loads from workgroup
                memory, multiply-adds and barriers only (a ceiling: the product is wrong)
  global        no cooperative loads or multiply-adds: global loads and workgroup stores only
  unchecked     the per-element bounds tests of the loads removed (right only for shapes
                that are whole tiles and slices)
  words         a and b read as vec4<u32> (8 halves a load) where the kernel reads vec4<f16>
  no-loads      every global load of a and b replaced by a value of the element index
  vector-tiles  the workgroup tiles as array<vec4<f16>>: one 8-byte store per 4 halves, and
                cooperative loads through vec4 pointers with strides in vec4s. naga accepts
                this; Chromium's subgroup matrices do not (their pointer is to an array of
                the matrix's scalar)

Print a kernel's native text: the op module's shader table names each shader's byte range,
e.g. for the default float32-sum variant:
  awk '/^\\/\\/ subgroup_matrix_vec4\\.main/{p=1;next} /^\\/\\/ [a-z0-9_]+\\.main\\./{if(p)exit} p' \\
      kernels/kernels/src/generated/mat_mul.shaders > kernel.wgsl
"""
import re
import sys

CHECK_A = "if (row0 + r < params.M && k0 + c < params.K) {"
CHECK_B = "if (k0 + r < params.K && col0 + c < params.N) {"


def smem(s):
    return must_change(s, s.replace("let more = t + 1u < slices;", "let more = false;"), "smem")


def global_only(s):
    lines = s.split("\n")
    start = next(i for i, l in enumerate(lines) if "let a_at = current * A_TILE" in l) - 1
    end = next(i for i in range(start, len(lines)) if "Every subgroup is done" in lines[i]
               or ("if (more) {" in lines[i] and "store_" in lines[i + 1]))
    return "\n".join(lines[:start] + lines[end:])


def unchecked(s):
    return must_change(s, s.replace(CHECK_A, "{").replace(CHECK_B, "{"), "unchecked")


def words(s):
    out = s.replace("var<storage, read> a: array<vec4<f16>>;", "var<storage, read> a: array<vec4<u32>>;")
    out = out.replace("var<storage, read> b: array<vec4<f16>>;", "var<storage, read> b: array<vec4<u32>>;")
    out = out.replace("-> vec4<f16> {", "-> vec4<u32> {").replace("var v = vec4<f16>();", "var v = vec4<u32>();")
    out = out.replace("(BK / 4u)", "(BK / 8u)").replace("(BN / 4u)", "(BN / 8u)").replace(") * 4u;\n    var v", ") * 8u;\n    var v")
    out = re.sub(r"(\+ k0 \+ c|\+ col0 \+ c)\) / 4u\]", r"\1) / 8u]", out)
    for t in "ab":
        out = re.sub(
            r"fn store_%s\(buffer: u32, e: u32, v: vec4<f16>\) \{\n    let at = ([^\n]*)\n(?:    [^\n]*\n)*?\}" % t,
            lambda m: (f"fn store_{t}(buffer: u32, e: u32, v: vec4<u32>) {{\n    let at = "
                       + m[1].replace("4u)", "8u)").replace("* 4u;", "* 8u;") + "\n"
                       + "".join(f"    let h{w} = unpack2x16float(v[{w}]);\n    tile_{t}[at + {2 * w}u] = f16(h{w}.x);\n"
                                 f"    tile_{t}[at + {2 * w + 1}u] = f16(h{w}.y);\n" for w in range(4)) + "}"),
            out)
        out = re.sub(r"var s%s(\d+): vec4<f16>;" % t, lambda m: f"var s{t}{m[1]}: vec4<u32>;", out)
    loads = max(int(n) for n in re.findall(r"var sa(\d+):", out)) + 1
    keep = loads // 2
    out = "\n".join(l for l in out.split("\n")
                    if not re.search(r"\bs[ab](\d+)\b", l) or int(re.search(r"\bs[ab](\d+)\b", l)[1]) < keep)
    out = "\n".join(l for l in out.split("\n")
                    if not (re.search(r"li \+ (\d+)u \* THREADS", l) and int(re.search(r"li \+ (\d+)u \* THREADS", l)[1]) >= keep))
    return must_change(s, out, "words")


def no_loads(s):
    out = re.sub(r"(v = |return )a\[[^;]*\];", lambda m: m[1] + "vec4<u32>(e);" if "vec4<u32>" in s else m[1] + "vec4<f16>(f16(e));", s)
    out = re.sub(r"(v = |return )b\[[^;]*\];", lambda m: m[1] + "vec4<u32>(e);" if "vec4<u32>" in s else m[1] + "vec4<f16>(f16(e));", out)
    return must_change(s, out, "no-loads")


def vector_tiles(s):
    out = s
    for t in "ab":
        m = re.search(r"var<workgroup> tile_%s: array<f16, (\d+)>;" % t, out)
        out = out.replace(m[0], f"var<workgroup> tile_{t}: array<vec4<f16>, {int(m[1]) // 4}>;")
    out = re.sub(r"coopLoadT<(coop_mat16x16<f16, [AB]>)>\(&\(tile_([ab])\)\[([^\]]*)\], ([AB])_STRIDE\)",
                 lambda m: f"coopLoadT<{m[1]}>(&(tile_{m[2]})[({m[3]}) / 4u], {m[4]}_STRIDE / 4u)", out)
    for t in "ab":
        def store(m):
            if m[1] == "vec4<u32>":
                body = (f"    tile_{t}[at / 4u] = vec4<f16>(vec4<f32>(unpack2x16float(v[0]), unpack2x16float(v[1])));\n"
                        f"    tile_{t}[at / 4u + 1u] = vec4<f16>(vec4<f32>(unpack2x16float(v[2]), unpack2x16float(v[3])));\n")
            else:
                body = f"    tile_{t}[at / 4u] = v;\n"
            return f"fn store_{t}(buffer: u32, e: u32, v: {m[1]}) {{\n    let at = {m[2]}\n" + body + "}"
        out = re.sub(r"fn store_%s\(buffer: u32, e: u32, v: (vec4<u32>|vec4<f16>)\) \{\n    let at = ([^\n]*)\n(?:    [^\n]*\n)*?\}" % t,
                     store, out)
    if re.search(r"tile_[ab]\[at \+", out):
        sys.exit("vector-tiles: the kernel's workgroup stores are not groups of 4 or 8 halves")
    return must_change(s, out, "vector-tiles")


def must_change(before, after, name):
    if before == after:
        sys.exit(f"{name}: nothing to change in this kernel")
    return after


TRANSFORMS = {"smem": smem, "global": global_only, "unchecked": unchecked, "words": words,
              "no-loads": no_loads, "vector-tiles": vector_tiles}

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    text = open(sys.argv[1]).read()
    for name in sys.argv[2].split("+"):
        if name not in TRANSFORMS:
            sys.exit(f"unknown transform {name!r}: {', '.join(TRANSFORMS)}")
        text = TRANSFORMS[name](text)
    sys.stdout.write(text)
