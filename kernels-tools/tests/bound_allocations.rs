//! Heap allocations of a bound call in the steady state, counted by a global allocator of
//! this test binary's own. One test, so no other test allocates while it counts; wgpu's
//! allocations are measured beside ours where a call hands work to it.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::alloc::System;

use kernel_runtime::{IndexTensor, Tensor, wgpu};
use kernels::mrotary_embedding as mrope;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations made while `f` runs.
fn allocations(f: impl FnOnce()) -> usize {
    let region = Region::new(GLOBAL);
    f();
    region.change().allocations
}

fn attrs(scale: f32) -> mrope::Attrs {
    mrope::Attrs {
        num_heads: 4,
        scale,
        ..mrope::Attrs::new(mrope::RequiredAttrs {
            mrope_section: vec![4, 6, 6],
        })
    }
}

#[test]
fn update_and_record_allocate_nothing_once_warm() {
    let ctx = test_support::context();
    let t = |shape: &[usize]| Tensor::<f32>::zeros(&ctx, shape).unwrap();
    let (input, cos, sin) = (t(&[1, 16, 128]), t(&[64, 16]), t(&[64, 16]));
    let ids = IndexTensor::from_i64(&ctx, &[3, 1, 16], &[1; 48]).unwrap();
    let inputs = mrope::Inputs {
        input: &input,
        position_ids: &ids,
        cos_cache: &cos,
        sin_cache: &sin,
    };
    let mut output = t(&[1, 16, 128]);
    let out = mrope::OutputsMut {
        output: &mut output,
    };
    let mut call = mrope::bind(&ctx, &inputs, out, &attrs(1.0)).unwrap();
    let (same, other) = (attrs(1.0), attrs(0.5));
    // Warm: an update of each kind and a submission.
    call.update(&ctx, &other).unwrap();
    call.update(&ctx, &same).unwrap();
    let mut encoder = ctx.create_encoder();
    call.record_into(&mut encoder);
    ctx.submit(encoder).unwrap();

    // Planning again with the same attributes: nothing allocated, nothing written.
    let n = allocations(|| {
        for _ in 0..100 {
            call.update(&ctx, &same).unwrap();
        }
    });
    assert_eq!(n, 0, "allocations in 100 updates with the same attributes");

    // A bare `queue.write_buffer`'s allocations (wgpu's staging memory): the first after a
    // submission, as a recording's upload is, and over 50 writes.
    let scratch = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("scratch"),
        size: 64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bytes = call.plan().passes[0].params.clone();
    ctx.submit(ctx.create_encoder()).unwrap();
    let first_write = allocations(|| ctx.queue().write_buffer(&scratch, 0, &bytes));
    let writes = allocations(|| {
        for _ in 0..50 {
            ctx.queue().write_buffer(&scratch, 0, &bytes);
        }
    });
    let per_write = writes.div_ceil(50);
    ctx.submit(ctx.create_encoder()).unwrap();

    let mut encoder = ctx.create_encoder();
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        call.record(&mut pass).unwrap();
        // A uniform that changes: the update writes the context's host copy, allocating and
        // handing nothing to wgpu.
        let updates = allocations(|| {
            for i in 0..50 {
                let attrs = if i % 2 == 0 { &other } else { &same };
                call.update(&ctx, attrs).unwrap();
            }
        });
        assert_eq!(
            updates, 0,
            "allocations in 50 updates that change a uniform"
        );
        // The next recording uploads what changed with one write.
        let record = allocations(|| call.record(&mut pass).unwrap());
        eprintln!(
            "50 updates that change a uniform, then a record: {record} allocations; \
             a bare write: {first_write} the first after a submission, {writes} in 50"
        );
        // wgpu's own count per write varies a little with its staging memory's reuse.
        let one_write = first_write.max(per_write);
        assert!(
            record <= one_write + one_write / 10,
            "a record after 50 updates made {record} allocations, a bare queue write \
             {one_write}"
        );

        // Recording into a pass: set_pipeline, set_bind_group and the dispatch, nothing
        // looked up, nothing to upload (wgpu's command list had room for them all here).
        let n = allocations(|| {
            for _ in 0..1000 {
                call.record(&mut pass).unwrap();
            }
        });
        assert_eq!(n, 0, "allocations in 1000 records into one pass");
    }
    ctx.submit(encoder).unwrap();
}
