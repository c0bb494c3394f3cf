//! Bound calls (`op::bind`, `kernel_runtime::Bound`): the same results as `run_into` and the
//! float64 references across updates that change a uniform between submissions, flat
//! object counts once bound, and a rebuild when an update changes the variant.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use kernel_runtime::{Context, DType, IndexTensor, Tensor, wgpu};
use kernels::{bias_softmax as softmax, mrotary_embedding as mrope};
use kernels_tools::data::{DataRng, Tolerance, compare, from_elem, to_elem};
use kernels_tools::reference::bias_softmax::bias_softmax;
use kernels_tools::reference::mrotary_embedding::{mrotary_embedding, rope_caches};

const MAX_POSITIONS: usize = 64;
const HIDDEN: [usize; 3] = [1, 16, 128];

/// MRotaryEmbedding's inputs on the device, with their host values for the reference.
struct Rope {
    query: Vec<f64>,
    ids: Vec<i64>,
    cos: Vec<f64>,
    sin: Vec<f64>,
    tensors: (Tensor<f32>, IndexTensor, Tensor<f32>, Tensor<f32>),
}

fn round(v: Vec<f64>) -> Vec<f64> {
    from_elem(&to_elem::<f32>(&v))
}

fn rope(ctx: &Context) -> Rope {
    let mut rng = DataRng::new(5);
    let query = round(rng.uniform(HIDDEN.iter().product(), -2.0, 2.0));
    let ids: Vec<i64> = (0..48).map(|i| 3 + (i % 16) as i64).collect();
    let (cos, sin) = rope_caches(MAX_POSITIONS, 16, 10000.0);
    let (cos, sin) = (round(cos), round(sin));
    let upload = |shape: &[usize], v: &[f64]| Tensor::from_slice(ctx, shape, &to_elem::<f32>(v));
    let tensors = (
        upload(&HIDDEN, &query).unwrap(),
        IndexTensor::from_i64(ctx, &[3, 1, 16], &ids).unwrap(),
        upload(&[MAX_POSITIONS, 16], &cos).unwrap(),
        upload(&[MAX_POSITIONS, 16], &sin).unwrap(),
    );
    Rope {
        query,
        ids,
        cos,
        sin,
        tensors,
    }
}

fn rope_attrs(scale: f32) -> mrope::Attrs {
    mrope::Attrs {
        num_heads: 4,
        scale,
        ..mrope::Attrs::new(mrope::RequiredAttrs {
            mrope_section: vec![4, 6, 6],
        })
    }
}

impl Rope {
    fn inputs(&self) -> mrope::Inputs<'_, f32> {
        let (input, position_ids, cos_cache, sin_cache) = &self.tensors;
        mrope::Inputs {
            input,
            position_ids,
            cos_cache,
            sin_cache,
        }
    }

    fn reference(&self, attrs: &mrope::Attrs) -> Vec<f64> {
        let (q, ids, cos, sin) = (&self.query, &self.ids, &self.cos, &self.sin);
        mrotary_embedding(q, &HIDDEN, ids, cos, sin, MAX_POSITIONS, attrs).unwrap()
    }
}

#[test]
fn a_bound_call_matches_run_into_and_the_reference_as_a_uniform_changes() {
    let ctx = test_support::context();
    let rope = rope(&ctx);
    let mut bound_out = Tensor::<f32>::zeros(&ctx, &HIDDEN).unwrap();
    let mut run_out = Tensor::<f32>::zeros(&ctx, &HIDDEN).unwrap();
    let out = mrope::OutputsMut {
        output: &mut bound_out,
    };
    let mut call = mrope::bind(&ctx, &rope.inputs(), out, &rope_attrs(1.0)).unwrap();
    for (step, scale) in [1.0, 0.5, 2.0, -0.25].into_iter().enumerate() {
        let attrs = rope_attrs(scale);
        call.update(&ctx, &attrs).unwrap();
        // In a compute pass of the caller's on even steps, of its own on odd ones.
        let mut encoder = ctx.create_encoder();
        if step % 2 == 0 {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            call.record(&mut pass).unwrap();
        } else {
            call.record_into(&mut encoder);
        }
        ctx.submit(encoder).unwrap();
        let out = mrope::OutputsMut {
            output: &mut run_out,
        };
        mrope::run_into(&ctx, &rope.inputs(), out, &attrs).unwrap();
        let got = from_elem(&bound_out.to_vec(&ctx).unwrap());
        assert_eq!(
            got,
            from_elem(&run_out.to_vec(&ctx).unwrap()),
            "scale {scale}"
        );
        let comparison = compare(&got, &rope.reference(&attrs), Tolerance::mrope(DType::F32));
        assert!(comparison.passed(), "scale {scale}: {comparison}");
    }
}

#[test]
fn updates_that_keep_the_plan_create_nothing() {
    let ctx = test_support::context();
    let rope = rope(&ctx);
    let mut output = Tensor::<f32>::zeros(&ctx, &HIDDEN).unwrap();
    let out = mrope::OutputsMut {
        output: &mut output,
    };
    let mut call = mrope::bind(&ctx, &rope.inputs(), out, &rope_attrs(1.0)).unwrap();
    let step = |call: &mut kernel_runtime::Bound<mrope::Op<f32>>, scale: f32| {
        call.update(&ctx, &rope_attrs(scale)).unwrap();
        let mut encoder = ctx.create_encoder();
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            call.record(&mut pass).unwrap();
        }
        ctx.submit(encoder).unwrap();
    };
    step(&mut call, 0.5);
    let first = ctx.counts();
    for i in 0..8 {
        step(&mut call, 1.0 + i as f32 / 8.0);
    }
    let last = ctx.counts();
    assert_eq!(
        (
            last.buffers_created,
            last.bind_groups_created,
            last.pipelines_created
        ),
        (
            first.buffers_created,
            first.bind_groups_created,
            first.pipelines_created
        ),
        "{first:?} then {last:?}"
    );
    assert_eq!(last.dispatches_recorded, first.dispatches_recorded + 8);
    // The last update's scale is what ran.
    let got = from_elem(&output.to_vec(&ctx).unwrap());
    let comparison = compare(
        &got,
        &rope.reference(&rope_attrs(1.875)),
        Tolerance::mrope(DType::F32),
    );
    assert!(comparison.passed(), "{comparison}");
}

#[test]
fn an_update_that_changes_the_variant_rebuilds_the_call() {
    let ctx = test_support::context();
    let shape = [64, 8];
    let mut rng = DataRng::new(9);
    let data = round(rng.uniform(512, -3.0, 3.0));
    let bias = round(rng.uniform(512, -1.0, 1.0));
    let x = Tensor::from_slice(&ctx, &shape, &to_elem::<f32>(&data)).unwrap();
    let b = Tensor::from_slice(&ctx, &shape, &to_elem::<f32>(&bias)).unwrap();
    let mut output = Tensor::<f32>::zeros(&ctx, &shape).unwrap();
    let attrs = |axis| softmax::Attrs {
        axis,
        ..softmax::Attrs::new(softmax::RequiredAttrs {
            is_inner_broadcast: true,
        })
    };
    let inputs = softmax::Inputs { data: &x, bias: &b };
    let out = softmax::OutputsMut {
        output: &mut output,
    };
    let mut call = softmax::bind(&ctx, &inputs, out, &attrs(1)).unwrap();
    let mut variants = Vec::new();
    for axis in [1, 0, 1] {
        call.update(&ctx, &attrs(axis)).unwrap();
        variants.push(call.plan().variant);
        let mut encoder = ctx.create_encoder();
        call.record_into(&mut encoder);
        ctx.submit(encoder).unwrap();
        let got = from_elem(&output.to_vec(&ctx).unwrap());
        let want = bias_softmax(&data, &shape, &bias, axis, true).unwrap();
        let comparison = compare(&got, &want, Tolerance::bias_softmax(DType::F32));
        assert!(comparison.passed(), "axis {axis}: {comparison}");
    }
    assert_ne!(variants[0], variants[1], "{variants:?}");
    assert_eq!(variants[0], variants[2]);
}

#[test]
fn a_bound_call_refuses_what_record_into_refuses() {
    let ctx = test_support::context();
    let rope = rope(&ctx);
    // An output of the wrong shape, when bound.
    let mut wrong = Tensor::<f32>::zeros(&ctx, &[1, 16, 64]).unwrap();
    let out = mrope::OutputsMut { output: &mut wrong };
    let err = mrope::bind(&ctx, &rope.inputs(), out, &rope_attrs(1.0)).unwrap_err();
    assert!(
        matches!(err, kernel_runtime::OpError::Output { .. }),
        "{err}"
    );
    // An update whose attributes no variant accepts leaves the call as it was.
    let mut output = Tensor::<f32>::zeros(&ctx, &HIDDEN).unwrap();
    let out = mrope::OutputsMut {
        output: &mut output,
    };
    let mut call = mrope::bind(&ctx, &rope.inputs(), out, &rope_attrs(1.0)).unwrap();
    let variant = call.plan().variant;
    let bad = mrope::Attrs {
        num_heads: 5,
        ..rope_attrs(1.0)
    };
    let err = call.update(&ctx, &bad).unwrap_err();
    assert!(
        matches!(err, kernel_runtime::OpError::NoVariant { .. }),
        "{err}"
    );
    assert_eq!(call.plan().variant, variant);
    let mut encoder = ctx.create_encoder();
    call.record_into(&mut encoder);
    ctx.submit(encoder).unwrap();
    let got = from_elem(&output.to_vec(&ctx).unwrap());
    let comparison = compare(
        &got,
        &rope.reference(&rope_attrs(1.0)),
        Tolerance::mrope(DType::F32),
    );
    assert!(comparison.passed(), "{comparison}");
}

#[test]
fn calls_with_intermediates_record_into_one_pass_after_clearing() {
    let ctx = test_support::context();
    // Rows of 65,536 take BiasSoftmax's split variant, whose four intermediates hold block
    // and row statistics.
    let shape = [2, 65_536];
    let mut rng = DataRng::new(11);
    let data = round(rng.uniform(2 * 65_536, -3.0, 3.0));
    let bias = round(rng.uniform(2 * 65_536, -1.0, 1.0));
    let x = Tensor::from_slice(&ctx, &shape, &to_elem::<f32>(&data)).unwrap();
    let b = Tensor::from_slice(&ctx, &shape, &to_elem::<f32>(&bias)).unwrap();
    let attrs = softmax::Attrs {
        axis: 1,
        ..softmax::Attrs::new(softmax::RequiredAttrs {
            is_inner_broadcast: true,
        })
    };
    // Two calls, the second reading the first's output: softmax(softmax(x + b) + b).
    let mut first_out = Tensor::<f32>::zeros(&ctx, &shape).unwrap();
    let mut second_out = Tensor::<f32>::zeros(&ctx, &shape).unwrap();
    let inputs = softmax::Inputs { data: &x, bias: &b };
    let out = softmax::OutputsMut {
        output: &mut first_out,
    };
    let first = softmax::bind(&ctx, &inputs, out, &attrs).unwrap();
    assert!(
        !first.plan().intermediates.is_empty(),
        "variant {} has no intermediates",
        first.plan().variant
    );
    let inputs = softmax::Inputs {
        data: &first_out,
        bias: &b,
    };
    let out = softmax::OutputsMut {
        output: &mut second_out,
    };
    let second = softmax::bind(&ctx, &inputs, out, &attrs).unwrap();

    // What `run_into` gives, and the float64 reference.
    let mut run_first = Tensor::<f32>::zeros(&ctx, &shape).unwrap();
    let mut run_second = Tensor::<f32>::zeros(&ctx, &shape).unwrap();
    let inputs = softmax::Inputs { data: &x, bias: &b };
    let out = softmax::OutputsMut {
        output: &mut run_first,
    };
    softmax::run_into(&ctx, &inputs, out, &attrs).unwrap();
    let inputs = softmax::Inputs {
        data: &run_first,
        bias: &b,
    };
    let out = softmax::OutputsMut {
        output: &mut run_second,
    };
    softmax::run_into(&ctx, &inputs, out, &attrs).unwrap();
    let want_first = from_elem(&run_first.to_vec(&ctx).unwrap());
    let want_second = from_elem(&run_second.to_vec(&ctx).unwrap());
    let reference = bias_softmax(&data, &shape, &bias, 1, true).unwrap();
    let reference = bias_softmax(&reference, &shape, &bias, 1, true).unwrap();

    // `record` refuses the plan; cleared first, both calls go into one pass, step after step
    // (the second step's intermediates hold the first's values until cleared).
    let mut encoder = ctx.create_encoder();
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        assert!(first.record(&mut pass).is_err());
    }
    drop(encoder);
    for step in 0..2 {
        let passes = ctx.counts().compute_passes_recorded;
        let mut encoder = ctx.create_encoder();
        first.clear_intermediates(&mut encoder);
        second.clear_intermediates(&mut encoder);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            first.record_cleared(&mut pass);
            second.record_cleared(&mut pass);
        }
        ctx.submit(encoder).unwrap();
        // The caller's pass is not the runtime's to count.
        assert_eq!(ctx.counts().compute_passes_recorded, passes);
        let got_first = from_elem(&first_out.to_vec(&ctx).unwrap());
        let got_second = from_elem(&second_out.to_vec(&ctx).unwrap());
        assert_eq!(got_first, want_first, "step {step}: the first call");
        assert_eq!(got_second, want_second, "step {step}: the second call");
        let comparison = compare(&got_second, &reference, Tolerance::bias_softmax(DType::F32));
        assert!(comparison.passed(), "step {step}: {comparison}");
    }
}

#[test]
fn calls_updated_together_each_run_with_their_own_uniforms() {
    let ctx = test_support::context();
    let rope = rope(&ctx);
    let mut outputs: Vec<_> = (0..4)
        .map(|_| Tensor::<f32>::zeros(&ctx, &HIDDEN).unwrap())
        .collect();
    let mut calls: Vec<_> = (outputs.iter_mut())
        .map(|output| {
            let out = mrope::OutputsMut { output };
            mrope::bind(&ctx, &rope.inputs(), out, &rope_attrs(1.0)).unwrap()
        })
        .collect();
    let scale = |step: usize, call: usize| 0.25 * (1 + call) as f32 - 0.5 * step as f32;
    let check = |outputs: &[Tensor<f32>], step: usize| {
        for (i, output) in outputs.iter().enumerate() {
            let got = from_elem(&output.to_vec(&ctx).unwrap());
            let want = rope.reference(&rope_attrs(scale(step, i)));
            let comparison = compare(&got, &want, Tolerance::mrope(DType::F32));
            assert!(comparison.passed(), "step {step}, call {i}: {comparison}");
        }
    };
    // Every call updated, then all recorded into one pass: one upload for them all.
    for step in 0..3 {
        for (i, call) in calls.iter_mut().enumerate() {
            call.update(&ctx, &rope_attrs(scale(step, i))).unwrap();
        }
        let mut encoder = ctx.create_encoder();
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            for call in &calls {
                call.record(&mut pass).unwrap();
            }
        }
        ctx.submit(encoder).unwrap();
        check(&outputs, step);
    }
    // Updated after being recorded: the update takes effect once uploaded, here by
    // `flush_uniforms` before a submission through the queue.
    let mut encoder = ctx.create_encoder();
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        for call in &calls {
            call.record(&mut pass).unwrap();
        }
    }
    for (i, call) in calls.iter_mut().enumerate() {
        call.update(&ctx, &rope_attrs(scale(3, i))).unwrap();
    }
    ctx.flush_uniforms();
    ctx.queue().submit([encoder.finish()]);
    drop(calls);
    check(&outputs, 3);
}

#[test]
fn binding_again_and_again_reuses_uniform_ranges() {
    let ctx = test_support::context();
    let rope = rope(&ctx);
    let mut output = Tensor::<f32>::zeros(&ctx, &HIDDEN).unwrap();
    let mut bind_and_run = |scale: f32| {
        let out = mrope::OutputsMut {
            output: &mut output,
        };
        let call = mrope::bind(&ctx, &rope.inputs(), out, &rope_attrs(scale)).unwrap();
        let mut encoder = ctx.create_encoder();
        call.record_into(&mut encoder);
        ctx.submit(encoder).unwrap();
    };
    bind_and_run(1.0);
    let first = ctx.counts();
    for i in 0..100 {
        bind_and_run(i as f32 / 100.0);
    }
    let last = ctx.counts();
    // A call dropped gives its range back, and the next one takes it: no new buffer.
    assert_eq!(last.buffers_created, first.buffers_created);
    assert_eq!(last.bound_uniform_bytes, first.bound_uniform_bytes);
    assert!(first.bound_uniform_bytes > 0, "{first:?}");
    let got = from_elem(&output.to_vec(&ctx).unwrap());
    let want = rope.reference(&rope_attrs(0.99));
    let comparison = compare(&got, &want, Tolerance::mrope(DType::F32));
    assert!(comparison.passed(), "{comparison}");
}
