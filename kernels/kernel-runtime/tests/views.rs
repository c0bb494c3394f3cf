//! GPU tests of tensors that view the application's buffers: ops read and write exactly
//! their range, bad views and aliased arguments are typed errors, absent arguments are
//! reported, and GPU-made index tensors carry no host values.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod common;

use common::data;
use kernel_runtime::{Arg, Context, IndexTensor, Plan, RuntimeError, Tensor, wgpu};

const N: usize = 100;

fn scale_plan(n: usize) -> Plan {
    common::scale_plan("v", n, 2.0, 1.0)
}

/// An application buffer of `bytes` bytes, every f32 of it set to `fill`.
fn arena(ctx: &Context, bytes: u64, usage: wgpu::BufferUsages, fill: f32) -> wgpu::Buffer {
    let buffer = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("application arena"),
        size: bytes,
        usage,
        mapped_at_creation: false,
    });
    if usage.contains(wgpu::BufferUsages::COPY_DST) {
        let words = vec![fill; bytes as usize / 4];
        ctx.queue()
            .write_buffer(&buffer, 0, bytemuck::cast_slice(&words));
    }
    buffer
}

const ARENA_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

#[test]
fn views_read_and_write_only_their_range() {
    let ctx = test_support::context();
    let align = u64::from(ctx.device().limits().min_storage_buffer_offset_alignment);
    let span = (N as u64 * 4).next_multiple_of(align);
    let inputs = arena(&ctx, 3 * span, ARENA_USAGE, -7.0);
    let outputs = arena(&ctx, 3 * span, ARENA_USAGE, -7.0);
    let host = data(N);
    ctx.queue()
        .write_buffer(&inputs, span, bytemuck::cast_slice(&host));

    let x = Tensor::<f32>::from_buffer(&ctx, &inputs, span, &[N]).unwrap();
    let y = Tensor::<f32>::from_buffer(&ctx, &outputs, 2 * span, &[10, N / 10]).unwrap();
    assert_eq!((y.offset(), y.shape()), (2 * span, &[10, N / 10][..]));
    assert_eq!(x.to_vec(&ctx).unwrap(), host, "a view reads its own range");

    ctx.run_plan(&scale_plan(N), &common::io(&x, &y)).unwrap();
    let expect: Vec<f32> = host.iter().map(|v| v * 2.0 + 1.0).collect();
    assert_eq!(y.to_vec(&ctx).unwrap(), expect);

    let whole: Vec<f32> =
        bytemuck::pod_collect_to_vec(&ctx.read_buffer(&outputs, outputs.size()).unwrap());
    let first = 2 * span as usize / 4;
    assert!(
        whole[..first].iter().all(|&v| v == -7.0),
        "before the output"
    );
    assert!(
        whole[first + N..].iter().all(|&v| v == -7.0),
        "after the output"
    );
}

fn view_error(ctx: &Context, buffer: &wgpu::Buffer, offset: u64, n: usize) -> String {
    match Tensor::<f32>::from_buffer(ctx, buffer, offset, &[n]).unwrap_err() {
        RuntimeError::BufferView { what, reason } => {
            assert!(what.contains(&format!("[{n}]")), "{what}");
            reason
        }
        other => panic!("expected a BufferView error, got {other}"),
    }
}

#[test]
fn bad_views_are_typed_errors() {
    let ctx = test_support::context();
    let uniform = arena(
        &ctx,
        1024,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        0.0,
    );
    assert!(view_error(&ctx, &uniform, 0, 4).contains("lacks STORAGE"));

    let storage = arena(&ctx, 1024, ARENA_USAGE, 0.0);
    let align = ctx.device().limits().min_storage_buffer_offset_alignment;
    let reason = view_error(&ctx, &storage, 4, 4);
    assert!(
        reason.contains(&format!(
            "not a multiple of the device's storage offset alignment ({align})"
        )),
        "{reason}"
    );
    let reason = view_error(&ctx, &storage, 0, 257);
    assert!(
        reason.contains("do not fit in the 1024-byte buffer"),
        "{reason}"
    );
    // An odd count of f16 binds 4-byte-rounded bytes, which must fit too.
    let tight = arena(&ctx, 8, ARENA_USAGE, 0.0);
    assert!(Tensor::<half::f16>::from_buffer(&ctx, &tight, 0, &[4]).is_ok());
    assert!(Tensor::<half::f16>::from_buffer(&ctx, &tight, 0, &[5]).is_err());

    let write_only = arena(
        &ctx,
        256,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        1.0,
    );
    let view = Tensor::<f32>::from_buffer(&ctx, &write_only, 0, &[4]).unwrap();
    let err = view.to_vec(&ctx).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Readback(m) if m.contains("lacks COPY_SRC")),
        "{err}"
    );
}

#[test]
fn a_written_buffer_is_bound_once_per_dispatch() {
    let ctx = test_support::context();
    let align = u64::from(ctx.device().limits().min_storage_buffer_offset_alignment);
    let span = (N as u64 * 4).next_multiple_of(align);
    let buffer = arena(&ctx, 2 * span, ARENA_USAGE, 0.0);
    let x = Tensor::<f32>::from_buffer(&ctx, &buffer, 0, &[N]).unwrap();
    // Disjoint from x, but the same buffer: WebGPU forbids that as much as an overlap.
    let y = Tensor::<f32>::from_buffer(&ctx, &buffer, span, &[N]).unwrap();
    for (x, y) in [(&x, &y), (&x, &x)] {
        let err = ctx.run_plan(&scale_plan(N), &common::io(x, y)).unwrap_err();
        assert_eq!(
            err,
            RuntimeError::Alias {
                label: "Test/v".to_owned(),
                pass: "scale",
                written: "y",
                other: "x",
            }
        );
        assert!(
            err.to_string().contains("give `y` a buffer of its own"),
            "{err}"
        );
    }

    // Reading one buffer through several arguments is fine; only a written one is exclusive.
    let z = Tensor::<f32>::zeros(&ctx, &[N]).unwrap();
    ctx.run_plan(&scale_plan(N), &common::io(&x, &z)).unwrap();
}

#[test]
fn a_pass_binding_an_absent_argument_is_reported() {
    let ctx = test_support::context();
    let y = Tensor::<f32>::zeros(&ctx, &[N]).unwrap();
    let args = [Arg::absent("x"), Arg::write("y", y.binding())];
    let err = ctx.run_plan(&scale_plan(N), &args).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::InvalidPlan { reason, .. }
            if reason.contains("argument 0 (`x`), which was not given")),
        "{err}"
    );
}

#[test]
fn gpu_made_index_tensors_have_no_host_values() {
    let ctx = test_support::context();
    let buffer = arena(&ctx, 64, ARENA_USAGE, 0.0);
    ctx.queue()
        .write_buffer(&buffer, 0, bytemuck::cast_slice(&[3u32, 1, 4, 1]));
    let ids = IndexTensor::from_buffer(&ctx, &buffer, 0, &[2, 2]).unwrap();
    assert_eq!(ids.values(), None);
    assert_eq!(ids.shape(), [2, 2]);
    assert_eq!(ids.to_vec(&ctx).unwrap(), [3, 1, 4, 1]);

    let made = Tensor::<u32>::from_slice(&ctx, &[3], &[9, 8, 7]).unwrap();
    let ids = IndexTensor::from_tensor(made);
    assert_eq!((ids.values(), ids.numel()), (None, 3));
    assert_eq!(ids.to_vec(&ctx).unwrap(), [9, 8, 7]);
}
