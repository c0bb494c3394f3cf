//! GPU tests of plan execution: every dispatch form, the x/y split, intermediates, several

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]
//! plans in one encoder, the pipeline cache and skipped empty passes.

mod common;

use common::{GRID, SCALE, STRIDE, data, params_n_offset, params_u32};
use kernel_runtime::{
    Binding, Context, Dispatch, IntermediateSpec, Kernel, Plan, PlannedPass, Tensor,
};

fn scale_pass(dispatch: Dispatch, n: u32, scale: f64, offset: f32) -> PlannedPass {
    PlannedPass {
        id: "scale",
        kernel: &SCALE,
        overrides: vec![("scale", scale), ("wg", 64.0)],
        bindings: vec![Binding::Arg(0), Binding::Arg(1), Binding::Params],
        params: params_n_offset(n, offset),
        dispatch,
    }
}

fn plan(passes: Vec<PlannedPass>) -> Plan {
    Plan {
        op: "Test",
        variant: "v",
        passes,
        intermediates: vec![],
        outputs: vec![],
    }
}

/// Runs `y = x * scale + offset` over `n` elements with `dispatch` and checks every element.
fn check_scale(ctx: &Context, n: usize, dispatch: Dispatch) {
    let x_host = data(n);
    let x = Tensor::from_slice(ctx, &[n], &x_host).unwrap();
    let y = Tensor::<f32>::zeros(ctx, &[n]).unwrap();
    let p = plan(vec![scale_pass(dispatch, n as u32, 3.0, 0.5)]);
    ctx.run_plan(&p, &common::io(&x, &y)).unwrap();
    let expect: Vec<f32> = x_host.iter().map(|v| v * 3.0 + 0.5).collect();
    assert_eq!(y.to_vec(ctx).unwrap(), expect, "{dispatch:?}");
}

#[test]
fn threads_dispatch() {
    let ctx = test_support::context();
    check_scale(
        &ctx,
        1000,
        Dispatch::Threads {
            threads: 1000,
            workgroup_size: 64,
        },
    );
}

#[test]
fn workgroups_dispatch() {
    let ctx = test_support::context();
    check_scale(&ctx, 1000, Dispatch::Workgroups(16));
}

#[test]
fn threads_split_over_x_and_y_beyond_the_limit() {
    let mut ctx = test_support::context();
    // 1000 threads / 64 = 16 workgroups; a limit of 5 gives a 5 x 4 grid (4 spare groups).
    ctx.set_dispatch_limit_for_testing(Some(5));
    let d = Dispatch::Threads {
        threads: 1000,
        workgroup_size: 64,
    };
    assert_eq!(d.workgroups(5).unwrap(), [5, 4, 1]);
    check_scale(&ctx, 1000, d);
    check_scale(&ctx, 1000, Dispatch::Workgroups(16));
    // 16 groups do not fit in 3 x 3.
    ctx.set_dispatch_limit_for_testing(Some(3));
    let x = Tensor::from_slice(&ctx, &[1000], &data(1000)).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[1000]).unwrap();
    let err = ctx
        .run_plan(
            &plan(vec![scale_pass(d, 1000, 1.0, 0.0)]),
            &common::io(&x, &y),
        )
        .unwrap_err();
    assert!(
        matches!(&err, kernel_runtime::RuntimeError::TooManyWorkgroups { label, count: 16, limit: 9 } if label == "scale"),
        "{err}"
    );
}

#[test]
fn grid_dispatch_uses_y_as_rows() {
    let ctx = test_support::context();
    let (rows, cols) = (7usize, 40usize);
    let x_host = data(rows * cols);
    let x = Tensor::from_slice(&ctx, &[rows, cols], &x_host).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[rows, cols]).unwrap();
    let pass = PlannedPass {
        id: "grid",
        kernel: &GRID,
        overrides: vec![],
        bindings: vec![Binding::Arg(0), Binding::Arg(1), Binding::Params],
        params: params_u32(&[rows as u32, cols as u32]),
        dispatch: Dispatch::Grid {
            x: cols.div_ceil(16) as u64,
            y: rows as u64,
            z: 1,
        },
    };
    ctx.run_plan(&plan(vec![pass]), &common::io(&x, &y))
        .unwrap();
    let expect: Vec<f32> = x_host
        .iter()
        .enumerate()
        .map(|(i, v)| v + (i / cols) as f32)
        .collect();
    assert_eq!(y.to_vec(&ctx).unwrap(), expect);
}

#[test]
fn grid_stride_dispatch_covers_more_items_than_threads() {
    let mut ctx = test_support::context();
    // Clamp to 2 workgroups of 32: each invocation loops over ~16 items.
    ctx.set_dispatch_limit_for_testing(Some(2));
    let n = 1000;
    let x_host = data(n);
    let x = Tensor::from_slice(&ctx, &[n], &x_host).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[n]).unwrap();
    let dispatch = Dispatch::GridStride {
        items: n as u64,
        workgroup_size: 32,
    };
    assert_eq!(dispatch.workgroups(2).unwrap(), [2, 1, 1]);
    let pass = PlannedPass {
        id: "stride",
        kernel: &STRIDE,
        overrides: vec![],
        bindings: vec![Binding::Arg(0), Binding::Arg(1), Binding::Params],
        params: params_u32(&[n as u32]),
        dispatch,
    };
    ctx.run_plan(&plan(vec![pass]), &common::io(&x, &y))
        .unwrap();
    let expect: Vec<f32> = x_host.iter().map(|v| v - 1.0).collect();
    assert_eq!(y.to_vec(&ctx).unwrap(), expect);
}

#[test]
fn multi_pass_plan_with_an_intermediate_runs_twice_from_the_pool() {
    let ctx = test_support::context();
    let n = 300;
    let x_host = data(n);
    let x = Tensor::from_slice(&ctx, &[n], &x_host).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[n]).unwrap();
    let threads = Dispatch::Threads {
        threads: n as u64,
        workgroup_size: 64,
    };
    // tmp = x * 2 + 1; y = tmp * -1 + 0.25
    let mut first = scale_pass(threads, n as u32, 2.0, 1.0);
    first.bindings[1] = Binding::Intermediate(0);
    let mut second = scale_pass(threads, n as u32, -1.0, 0.25);
    second.id = "second";
    second.bindings[0] = Binding::Intermediate(0);
    let p = Plan {
        intermediates: vec![IntermediateSpec {
            id: "tmp",
            dtype: kernel_runtime::DType::F32,
            len: n as u64,
        }],
        ..plan(vec![first, second])
    };
    let expect: Vec<f32> = x_host.iter().map(|v| -(v * 2.0 + 1.0) + 0.25).collect();
    for _ in 0..2 {
        ctx.run_plan(&p, &common::io(&x, &y)).unwrap();
        assert_eq!(y.to_vec(&ctx).unwrap(), expect);
    }
}

#[test]
fn several_plans_in_one_encoder_run_in_order() {
    let ctx = test_support::context();
    let n = 256;
    let x_host = data(n);
    let x = Tensor::from_slice(&ctx, &[n], &x_host).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[n]).unwrap();
    let z = Tensor::<f32>::zeros(&ctx, &[n]).unwrap();
    let d = Dispatch::Threads {
        threads: n as u64,
        workgroup_size: 64,
    };
    let mut encoder = ctx.create_encoder();
    ctx.record_plan(
        &mut encoder,
        &plan(vec![scale_pass(d, n as u32, 2.0, 0.0)]),
        &common::io(&x, &y),
    )
    .unwrap();
    ctx.record_plan(
        &mut encoder,
        &plan(vec![scale_pass(d, n as u32, 1.0, 1.0)]),
        &common::io(&y, &z),
    )
    .unwrap();
    ctx.submit(encoder).unwrap();
    let expect: Vec<f32> = x_host.iter().map(|v| v * 2.0 + 1.0).collect();
    assert_eq!(z.to_vec(&ctx).unwrap(), expect);
}

#[test]
fn pipelines_are_cached_per_digest_entry_and_overrides() {
    let ctx = test_support::context();
    assert_eq!(ctx.pipeline_cache_len(), 0);
    ctx.precompile(&SCALE, &[("scale", 2.0), ("wg", 64.0)])
        .unwrap();
    ctx.precompile(&SCALE, &[("wg", 64.0), ("scale", 2.0)])
        .unwrap();
    assert_eq!(ctx.pipeline_cache_len(), 1, "same key in another order");
    ctx.precompile(&SCALE, &[("scale", 3.0), ("wg", 64.0)])
        .unwrap();
    assert_eq!(ctx.pipeline_cache_len(), 2, "another override value");
    let d = Dispatch::Threads {
        threads: 64,
        workgroup_size: 64,
    };
    let x = Tensor::from_slice(&ctx, &[64], &data(64)).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[64]).unwrap();
    for _ in 0..3 {
        ctx.run_plan(
            &plan(vec![scale_pass(d, 64, 2.0, 0.0)]),
            &common::io(&x, &y),
        )
        .unwrap();
    }
    assert_eq!(
        ctx.pipeline_cache_len(),
        2,
        "runs hit the precompiled pipeline"
    );
    ctx.clear_pipeline_cache();
    assert_eq!(ctx.pipeline_cache_len(), 0);
}

#[test]
fn zero_work_plans_dispatch_nothing() {
    let ctx = test_support::context();
    static NEVER_COMPILED: Kernel = Kernel {
        label: "test/never-compiled",
        source: "not even wgsl",
        entry_point: "main",
        digest: "test-never-compiled",
        web_enables: "",
        least_sizes: &[],
    };
    let x = Tensor::<f32>::from_slice(&ctx, &[0], &[]).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[0]).unwrap();
    let empty = |dispatch| PlannedPass {
        kernel: &NEVER_COMPILED,
        ..scale_pass(dispatch, 0, 1.0, 0.0)
    };
    let p = plan(vec![
        empty(Dispatch::Threads {
            threads: 0,
            workgroup_size: 64,
        }),
        empty(Dispatch::Workgroups(0)),
        empty(Dispatch::Grid { x: 4, y: 0, z: 1 }),
        empty(Dispatch::GridStride {
            items: 0,
            workgroup_size: 64,
        }),
    ]);
    // The kernel is invalid: any attempt to build its pipeline would fail.
    ctx.run_plan(&p, &common::io(&x, &y)).unwrap();
    let mut encoder = ctx.create_encoder();
    ctx.record_plan(&mut encoder, &p, &common::io(&x, &y))
        .unwrap();
    ctx.submit(encoder).unwrap();
    assert_eq!(ctx.pipeline_cache_len(), 0);
    if ctx.caps().timestamp_query {
        assert_eq!(
            ctx.time_plan(&p, &[], 3).unwrap(),
            [std::time::Duration::ZERO; 3]
        );
    }
}

#[test]
fn f16_storage_kernel_when_supported() {
    let ctx = test_support::context();
    if !ctx.caps().shader_f16 {
        eprintln!("skipping: no shader-f16 on {}", ctx.adapter_summary());
        return;
    }
    static HALVE: Kernel = Kernel {
        label: "test/halve-f16",
        source: r#"
enable f16;
@group(0) @binding(0) var<storage, read_write> y: array<f16>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x < 6u {
        y[g.x] = f16(f32(y[g.x]) * 0.5);
    }
}
"#,
        entry_point: "main",
        digest: "test-halve-f16",
        web_enables: "",
        least_sizes: &[],
    };
    let host: Vec<half::f16> = [1.0, 2.0, -4.0, 8.0, 3.0, 0.25]
        .map(half::f16::from_f32)
        .to_vec();
    let y = Tensor::from_slice(&ctx, &[6], &host).unwrap();
    let pass = PlannedPass {
        id: "halve",
        kernel: &HALVE,
        overrides: vec![],
        bindings: vec![Binding::Arg(0)],
        params: vec![],
        dispatch: Dispatch::Threads {
            threads: 6,
            workgroup_size: 64,
        },
    };
    ctx.run_plan(&plan(vec![pass]), &common::out(&y)).unwrap();
    let got: Vec<f32> = y.to_vec(&ctx).unwrap().into_iter().map(f32::from).collect();
    assert_eq!(got, [0.5, 1.0, -2.0, 4.0, 1.5, 0.125]);
}

#[test]
fn plans_run_from_several_threads_on_one_context() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<Tensor<f32>>();
    let ctx = test_support::context();
    let n = 500;
    std::thread::scope(|s| {
        for t in 0..4 {
            let ctx = &ctx;
            s.spawn(move || {
                let x_host = data(n);
                let x = Tensor::from_slice(ctx, &[n], &x_host).unwrap();
                let y = Tensor::<f32>::zeros(ctx, &[n]).unwrap();
                let d = Dispatch::Threads {
                    threads: n as u64,
                    workgroup_size: 64,
                };
                let offset = t as f32;
                let p = plan(vec![scale_pass(d, n as u32, 2.0, offset)]);
                ctx.run_plan(&p, &common::io(&x, &y)).unwrap();
                let expect: Vec<f32> = x_host.iter().map(|v| v * 2.0 + offset).collect();
                assert_eq!(y.to_vec(ctx).unwrap(), expect);
            });
        }
    });
    // One key: every thread used the same kernel and override values.
    assert_eq!(ctx.pipeline_cache_len(), 1);
}
