//! The bandwidth ceiling of a run: the fastest of a sweep of WGSL copy kernels (`vec4<f32>`
//! words, 1, 2, 4 or 8 per invocation, several workgroup sizes) timed in the same process, on
//! the same adapter, as the op cases; and element-wise copies for what f32 and f16 accesses
//! cost there.

use std::sync::Mutex;

use anyhow::{Result, bail};
use kernel_runtime::{Arg, Binding, Context, Dispatch, Kernel, Plan, PlannedPass, Tensor};
use serde::Serialize;

static COPY: Kernel = Kernel {
    label: "bench.copy",
    source: "@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = (workgroup.x + workgroup.y * workgroups.x) * 256u + lane;
    if (i < arrayLength(&dst)) {
        dst[i] = src[i];
    }
}
",
    entry_point: "main",
    digest: "bench-copy-vec4-v1",
    web_enables: "",
    least_sizes: &[],
};

/// The same copy one f16 element per invocation: how fast the adapter moves 16-bit storage
/// elements, which kernels with f16 tensors do.
static COPY_F16: Kernel = Kernel {
    label: "bench.copy_f16",
    source: "enable f16;

@group(0) @binding(0) var<storage, read> src: array<f16>;
@group(0) @binding(1) var<storage, read_write> dst: array<f16>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = (workgroup.x + workgroup.y * workgroups.x) * 256u + lane;
    if (i < arrayLength(&dst)) {
        dst[i] = src[i];
    }
}
",
    entry_point: "main",
    digest: "bench-copy-f16-v1",
    web_enables: "",
    least_sizes: &[],
};

/// The same copy one f32 element per invocation.
static COPY_F32: Kernel = Kernel {
    label: "bench.copy_f32",
    source: "@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = (workgroup.x + workgroup.y * workgroups.x) * 256u + lane;
    if (i < arrayLength(&dst)) {
        dst[i] = src[i];
    }
}
",
    entry_point: "main",
    digest: "bench-copy-f32-v1",
    web_enables: "",
    least_sizes: &[],
};

/// The same copy, four adjacent f32 elements per invocation through a scalar array: whether
/// the compiler merges adjacent element accesses into wide ones.
static COPY_F32_RUNS: Kernel = Kernel {
    label: "bench.copy_f32_runs",
    source: "@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = ((workgroup.x + workgroup.y * workgroups.x) * 256u + lane) * 4u;
    if (i < arrayLength(&dst)) {
        let a = src[i];
        let b = src[i + 1u];
        let c = src[i + 2u];
        let d = src[i + 3u];
        dst[i] = a;
        dst[i + 1u] = b;
        dst[i + 2u] = c;
        dst[i + 3u] = d;
    }
}
",
    entry_point: "main",
    digest: "bench-copy-f32-runs-v1",
    web_enables: "",
    least_sizes: &[],
};

/// Eight adjacent f16 elements per invocation through a scalar array.
static COPY_F16_RUNS: Kernel = Kernel {
    label: "bench.copy_f16_runs",
    source: "enable f16;

@group(0) @binding(0) var<storage, read> src: array<f16>;
@group(0) @binding(1) var<storage, read_write> dst: array<f16>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = ((workgroup.x + workgroup.y * workgroups.x) * 256u + lane) * 8u;
    if (i < arrayLength(&dst)) {
        var v: array<f16, 8>;
        for (var k = 0u; k < 8u; k += 1u) {
            v[k] = src[i + k];
        }
        for (var k = 0u; k < 8u; k += 1u) {
            dst[i + k] = v[k];
        }
    }
}
",
    entry_point: "main",
    digest: "bench-copy-f16-runs-v1",
    web_enables: "",
    least_sizes: &[],
};

/// `vec4<f16>` words (8 bytes), one per invocation: what an f16 tensor bound as `vec4` words
/// moves.
static COPY_F16_VEC4: Kernel = Kernel {
    label: "bench.copy_f16_vec4",
    source: "enable f16;

@group(0) @binding(0) var<storage, read> src: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f16>>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = (workgroup.x + workgroup.y * workgroups.x) * 256u + lane;
    if (i < arrayLength(&dst)) {
        dst[i] = src[i];
    }
}
",
    entry_point: "main",
    digest: "bench-copy-f16-vec4-v1",
    web_enables: "",
    least_sizes: &[],
};

/// Two adjacent `vec4<f16>` words (16 bytes) per invocation.
static COPY_F16_VEC4_PAIRS: Kernel = Kernel {
    label: "bench.copy_f16_vec4_pairs",
    source: "enable f16;

@group(0) @binding(0) var<storage, read> src: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f16>>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = ((workgroup.x + workgroup.y * workgroups.x) * 256u + lane) * 2u;
    if (i + 1u < arrayLength(&dst)) {
        let a = src[i];
        let b = src[i + 1u];
        dst[i] = a;
        dst[i + 1u] = b;
    }
}
",
    entry_point: "main",
    digest: "bench-copy-f16-vec4-pairs-v1",
    web_enables: "",
    least_sizes: &[],
};

/// Eight f16 values as one `vec4<u32>` word per invocation, unpacked to f32 and packed back:
/// f16 tensors read and written as 16-byte words, with the conversions a kernel would do.
static COPY_F16_PACKED: Kernel = Kernel {
    label: "bench.copy_f16_packed",
    source: "@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = (workgroup.x + workgroup.y * workgroups.x) * 256u + lane;
    if (i < arrayLength(&dst)) {
        let w = src[i];
        let a = unpack2x16float(w.x);
        let b = unpack2x16float(w.y);
        let c = unpack2x16float(w.z);
        let d = unpack2x16float(w.w);
        dst[i] = vec4<u32>(pack2x16float(a), pack2x16float(b), pack2x16float(c), pack2x16float(d));
    }
}
",
    entry_point: "main",
    digest: "bench-copy-f16-packed-v1",
    web_enables: "",
    least_sizes: &[],
};

/// The spread copy of `per` words of `word` (`vec4<f32>` or `vec4<f16>`) per invocation, a
/// workgroup of `WG` (an override) apart, every load issued before the first store: the
/// sweep for the ceiling, and how wide words and spacing change an f16 copy.
fn spread_source(word: &str, per: u32) -> String {
    let enable = if word.contains("f16") {
        "enable f16;\n\n"
    } else {
        ""
    };
    let loads: String = (0..per)
        .map(|k| format!("        let v{k} = src[first + {k}u * WG];\n"))
        .collect();
    let stores: String = (0..per)
        .map(|k| format!("        dst[first + {k}u * WG] = v{k};\n"))
        .collect();
    let last = per - 1;
    format!(
        "{enable}override WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> src: array<{word}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{word}>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {{
    let first = (workgroup.x + workgroup.y * workgroups.x) * WG * {per}u + lane;
    let n = arrayLength(&dst);
    if (first + {last}u * WG < n) {{
{loads}{stores}    }} else {{
        for (var k = 0u; k < {per}u; k++) {{
            let i = first + k * WG;
            if (i < n) {{
                dst[i] = src[i];
            }}
        }}
    }}
}}
"
    )
}

/// The spread kernel of `per` words, `half` for `vec4<f16>` words; made once per process
/// (kernels are `'static`, so each is leaked once: a handful of small strings).
fn spread_kernel(half: bool, per: u32) -> &'static Kernel {
    static MADE: Mutex<Vec<(bool, u32, &'static Kernel)>> = Mutex::new(Vec::new());
    let mut made = MADE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&(_, _, kernel)) = made.iter().find(|&&(h, p, _)| h == half && p == per) {
        return kernel;
    }
    let (word, name) = if half {
        ("vec4<f16>", "f16_")
    } else {
        ("vec4<f32>", "")
    };
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let kernel: &'static Kernel = Box::leak(Box::new(Kernel {
        label: leak(format!("bench.copy_{name}spread{per}")),
        source: leak(spread_source(word, per)),
        entry_point: "main",
        digest: leak(format!("bench-copy-{name}spread{per}-v1")),
        web_enables: "",
        least_sizes: &[],
    }));
    made.push((half, per, kernel));
    kernel
}

/// Which copy kernel to time.
#[derive(Debug, Clone, Copy)]
pub enum CopyKind {
    /// `vec4<f32>` words: the ceiling.
    Vec4,
    /// One f32 per invocation.
    F32,
    /// One f16 per invocation.
    F16,
    /// Four adjacent f32 per invocation, element-wise accesses.
    F32Runs,
    /// Eight adjacent f16 per invocation, element-wise accesses.
    F16Runs,
    /// One `vec4<f16>` word per invocation.
    F16Vec4,
    /// Two adjacent `vec4<f16>` words per invocation.
    F16Vec4Pairs,
    /// One `vec4<u32>` word of eight f16 per invocation, unpacked and packed.
    F16Packed,
    /// `per` `vec4<f32>` words (`vec4<f16>` with `half`) per invocation, a workgroup of `wg`
    /// apart.
    Spread {
        /// `vec4<f16>` words instead of `vec4<f32>`.
        half: bool,
        /// Words per invocation.
        per: u32,
        /// Invocations per workgroup.
        wg: u32,
    },
}

impl CopyKind {
    /// The variants of [`CopyKind::Spread`] the ceiling is the best of.
    pub fn sweep() -> Vec<CopyKind> {
        let mut kinds = Vec::new();
        for per in [1, 2, 4, 8] {
            for wg in [32, 64, 128, 256, 512, 1024] {
                kinds.push(CopyKind::Spread {
                    half: false,
                    per,
                    wg,
                });
            }
        }
        kinds
    }
}

/// The copy kernel's measured rate.
#[derive(Debug, Clone, Serialize)]
pub struct CopyResult {
    pub kernel: String,
    /// Bytes copied per repetition (each is read once and written once).
    pub bytes: u64,
    pub median_us: f64,
    /// Read plus written bytes per second, in GB/s.
    pub gbps: f64,
}

/// The fastest of `kinds` (each measured as [`measure`] does), with every result.
pub fn measure_best(
    ctx: &Context,
    kinds: &[CopyKind],
    bytes: u64,
    repetitions: usize,
    warm_up: std::time::Duration,
) -> Result<(CopyResult, Vec<CopyResult>)> {
    let mut all = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        all.push(measure(ctx, kind, bytes, repetitions, warm_up)?);
    }
    let Some(best) = all.iter().max_by(|a, b| a.gbps.total_cmp(&b.gbps)) else {
        bail!("no copy kernel to measure");
    };
    Ok((best.clone(), all))
}

/// Copies `bytes` (rounded down to 16) `repetitions` times, after `warm_up` of sustained
/// copies, and reports the median rate.
pub fn measure(
    ctx: &Context,
    kind: CopyKind,
    bytes: u64,
    repetitions: usize,
    warm_up: std::time::Duration,
) -> Result<CopyResult> {
    let probe = CopyProbe::new(ctx, kind, bytes)?;
    super::warm_up(warm_up, |n| {
        Ok(ctx.time_plan(&probe.plan, &probe.args(), n)?)
    })?;
    probe.measure(ctx, repetitions)
}

/// A copy kernel with its source and destination, to time again and again on one device.
pub struct CopyProbe {
    label: String,
    words: usize,
    plan: Plan,
    src: Tensor<f32>,
    dst: Tensor<f32>,
}

impl CopyProbe {
    /// The tensors (`bytes` rounded down to 16, each) and the plan of one copy.
    pub fn new(ctx: &Context, kind: CopyKind, bytes: u64) -> Result<Self> {
        let words = (bytes / 16) as usize;
        let src = Tensor::<f32>::from_slice(ctx, &[words * 4], &vec![1.0; words * 4])?;
        let dst = Tensor::<f32>::zeros(ctx, &[words * 4])?;
        let mut workgroup_size = 256;
        let mut overrides = vec![];
        let (kernel, threads) = match kind {
            CopyKind::Spread { half, per, wg } => {
                if per == 0 {
                    bail!("a spread copy needs at least one word per invocation");
                }
                workgroup_size = wg;
                overrides.push(("WG", f64::from(wg)));
                let count = if half { words * 2 } else { words };
                (spread_kernel(half, per), count.div_ceil(per as usize))
            }
            CopyKind::Vec4 => (&COPY, words),
            CopyKind::F32 => (&COPY_F32, words * 4),
            CopyKind::F16 => (&COPY_F16, words * 8),
            CopyKind::F32Runs => (&COPY_F32_RUNS, words),
            CopyKind::F16Runs => (&COPY_F16_RUNS, words),
            CopyKind::F16Vec4 => (&COPY_F16_VEC4, words * 2),
            CopyKind::F16Vec4Pairs => (&COPY_F16_VEC4_PAIRS, words),
            CopyKind::F16Packed => (&COPY_F16_PACKED, words),
        };
        let plan = Plan {
            op: "bench",
            variant: "copy",
            passes: vec![PlannedPass {
                id: "copy",
                kernel,
                overrides,
                bindings: vec![Binding::Arg(0), Binding::Arg(1)],
                params: vec![],
                dispatch: Dispatch::Threads {
                    threads: threads as u64,
                    workgroup_size,
                },
            }],
            intermediates: vec![],
            outputs: vec![],
        };
        Ok(Self {
            label: match kind {
                CopyKind::Spread { wg, .. } => format!("{} wg{wg}", kernel.label),
                _ => kernel.label.to_owned(),
            },
            words,
            plan,
            src,
            dst,
        })
    }

    fn args(&self) -> [Arg<'_>; 2] {
        [
            Arg::read("src", self.src.binding()),
            Arg::write("dst", self.dst.binding()),
        ]
    }

    /// The median of `repetitions` timed copies, right away (no warm-up).
    pub fn measure(&self, ctx: &Context, repetitions: usize) -> Result<CopyResult> {
        let times = ctx.time_plan(&self.plan, &self.args(), repetitions)?;
        let Some(median) = super::median(&times) else {
            bail!("no timings");
        };
        let median = median.as_secs_f64();
        let copied = self.words as u64 * 16;
        Ok(CopyResult {
            kernel: self.label.clone(),
            bytes: copied,
            median_us: median * 1e6,
            gbps: 2.0 * copied as f64 / median / 1e9,
        })
    }
}
