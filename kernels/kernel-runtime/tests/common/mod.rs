//! Shared helpers of the GPU tests: tiny kernels and their arguments (contexts come from
//! `test_support`).

#![allow(dead_code)]

use kernel_runtime::{Arg, Binding, Dispatch, Element, Kernel, Plan, PlannedPass, Tensor};

/// The arguments of a one-input, one-output test kernel: `x` read, `y` written.
pub fn io<'a, A: Element, B: Element>(x: &'a Tensor<A>, y: &'a Tensor<B>) -> [Arg<'a>; 2] {
    [Arg::read("x", x.binding()), Arg::write("y", y.binding())]
}

/// The argument of a one-output test kernel.
pub fn out<T: Element>(y: &Tensor<T>) -> [Arg<'_>; 1] {
    [Arg::write("y", y.binding())]
}

/// `y[i] = x[i] * scale + params.offset` for `i < params.n`, over a linearised 2D grid of
/// workgroups (`wid.x + wid.y * num_workgroups.x`), with the workgroup size and the scale as
/// pipeline overrides.
pub static SCALE: Kernel = Kernel {
    label: "test/scale",
    source: r#"
override scale: f32;
override wg: u32 = 64u;

struct Params {
    n: u32,
    offset: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(wg)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let group = wid.x + wid.y * nwg.x;
    let i = group * wg + lid;
    if i >= params.n {
        return;
    }
    y[i] = x[i] * scale + params.offset;
}
"#,
    entry_point: "main",
    digest: "test-scale-v1",
    web_enables: "",
    least_sizes: &[],
};

/// `y[r * cols + c] = x[r * cols + c] + f32(r)`: one workgroup per (column block, row), never
/// split, so `wid.y` is the row.
pub static GRID: Kernel = Kernel {
    label: "test/grid",
    source: r#"
struct Params {
    rows: u32,
    cols: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wid.x * 16u + lid.x;
    let r = wid.y;
    if c >= params.cols || r >= params.rows {
        return;
    }
    let i = r * params.cols + c;
    y[i] = x[i] + f32(r);
}
"#,
    entry_point: "main",
    digest: "test-grid-v1",
    web_enables: "",
    least_sizes: &[],
};

/// `y[i] = x[i] - 1` with a grid-stride loop over `params.n` items.
pub static STRIDE: Kernel = Kernel {
    label: "test/stride",
    source: r#"
struct Params {
    n: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * 32u;
    for (var i = gid.x; i < params.n; i += stride) {
        y[i] = x[i] - 1.0;
    }
}
"#,
    entry_point: "main",
    digest: "test-stride-v1",
    web_enables: "",
    least_sizes: &[],
};

/// Declares binding 1 as a uniform while plans bind a storage tensor there.
pub static MISMATCH: Kernel = Kernel {
    label: "test/mismatch",
    source: r#"
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<uniform> u: vec4<f32>;

@compute @workgroup_size(1)
fn main() {
    y[0] = u.x;
}
"#,
    entry_point: "main",
    digest: "test-mismatch-v1",
    web_enables: "",
    least_sizes: &[],
};

/// Not WGSL at all.
pub static BROKEN: Kernel = Kernel {
    label: "test/broken",
    source: "this is not wgsl",
    entry_point: "main",
    digest: "test-broken-v1",
    web_enables: "",
    least_sizes: &[],
};

/// A one-pass plan `Test/variant`: `y = x * scale + offset` over `n` elements with
/// [`SCALE`], one thread per element in workgroups of 64.
pub fn scale_plan(variant: &'static str, n: usize, scale: f64, offset: f32) -> Plan {
    Plan {
        op: "Test",
        variant,
        passes: vec![PlannedPass {
            id: "scale",
            kernel: &SCALE,
            overrides: vec![("scale", scale), ("wg", 64.0)],
            bindings: vec![Binding::Arg(0), Binding::Arg(1), Binding::Params],
            params: params_n_offset(n as u32, offset),
            dispatch: Dispatch::Threads {
                threads: n as u64,
                workgroup_size: 64,
            },
        }],
        intermediates: vec![],
        outputs: vec![],
    }
}

/// Packs `(u32, f32)` params as the runtime expects them.
pub fn params_n_offset(n: u32, offset: f32) -> Vec<u8> {
    let mut v = n.to_le_bytes().to_vec();
    v.extend_from_slice(&offset.to_le_bytes());
    v
}

/// Packs a list of `u32` params.
pub fn params_u32(values: &[u32]) -> Vec<u8> {
    bytemuck::cast_slice(values).to_vec()
}

/// Deterministic non-zero test data.
pub fn data(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 % 101) as f32) * 0.25 - 12.0)
        .collect()
}
