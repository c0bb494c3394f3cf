//! Ops writing into outputs the caller provides (`record_into` / `run_into`): views of the
//! application's buffers, chained without readback and checked against the float64
//! reference; a wrong shape and an output sharing an input's buffer are typed errors.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use kernel_runtime::{AllocatingOp, Context, DType, Op, OpError, Plan, RuntimeError, Tensor, wgpu};
use kernels::bias_softmax::{self as op, Attrs, Inputs, OutputsMut, RequiredAttrs};
use kernels_tools::data::{DataRng, Tolerance, compare, from_elem, to_elem};
use kernels_tools::reference::bias_softmax::bias_softmax;

const SHAPE: [usize; 3] = [4, 3, 40];
const BIAS: [usize; 2] = [3, 40];

fn ctx() -> Context {
    test_support::context()
}

/// An application buffer holding two outputs, each at a multiple of the offset alignment.
fn arena(ctx: &Context) -> (wgpu::Buffer, u64) {
    let align = u64::from(ctx.device().limits().min_storage_buffer_offset_alignment);
    let span = (SHAPE.iter().product::<usize>() as u64 * 4).next_multiple_of(align);
    let buffer = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("application outputs"),
        size: 3 * span,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    (buffer, span)
}

/// An op driven through the `Op` traits, as code that handles every op alike drives it: the
/// plan for the call's own shapes, then `run_into`.
fn through_traits<O: Op>(
    ctx: &Context,
    inputs: &O::Inputs<'_>,
    outputs: O::OutputsMut<'_>,
    attrs: &O::Attrs,
) -> Plan {
    // The shapes borrow the outputs; they go before the outputs are handed on.
    let plan = {
        let (shapes, dtypes) = O::call_shapes(inputs, &outputs);
        O::plan(ctx.caps(), &shapes, &dtypes, attrs).unwrap()
    };
    O::run_into(ctx, inputs, outputs, attrs).unwrap();
    plan
}

#[test]
fn the_op_traits_run_an_op_as_its_module_functions_do() {
    let ctx = ctx();
    let mut rng = DataRng::new(43);
    let x_host = rng.uniform(SHAPE.iter().product(), -4.0, 4.0);
    let b_host = rng.uniform(BIAS.iter().product(), -2.0, 2.0);
    let x = Tensor::from_slice(&ctx, &SHAPE, &to_elem::<f32>(&x_host)).unwrap();
    let bias = Tensor::from_slice(&ctx, &BIAS, &to_elem::<f32>(&b_host)).unwrap();
    let attrs = Attrs::new(RequiredAttrs {
        is_inner_broadcast: true,
    });
    let inputs = Inputs {
        data: &x,
        bias: &bias,
    };
    let mut provided = Tensor::<f32>::zeros(&ctx, &SHAPE).unwrap();
    let outputs = OutputsMut {
        output: &mut provided,
    };
    let plan = through_traits::<op::Op>(&ctx, &inputs, outputs, &attrs);
    let direct = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
    assert_eq!(plan, direct);
    assert_eq!(<op::Op as Op>::NAME, op::OP_NAME);
    // An op that writes nothing in place takes `()` for its in-place tensors.
    let allocated = <op::Op<f32> as AllocatingOp>::run(&ctx, &inputs, (), &attrs).unwrap();
    let got = from_elem(&provided.to_vec(&ctx).unwrap());
    assert_eq!(got, from_elem(&allocated.output.to_vec(&ctx).unwrap()));
    let want = bias_softmax(
        &from_elem(&to_elem::<f32>(&x_host)),
        &SHAPE,
        &from_elem(&to_elem::<f32>(&b_host)),
        1,
        true,
    )
    .unwrap();
    let c = compare(&got, &want, Tolerance::bias_softmax(DType::F32));
    assert!(c.passed(), "{c}");
}

#[test]
fn chained_ops_write_into_provided_views() {
    let ctx = ctx();
    let mut rng = DataRng::new(41);
    let n = SHAPE.iter().product();
    let x_host = rng.uniform(n, -4.0, 4.0);
    let b_host = rng.uniform(BIAS.iter().product(), -2.0, 2.0);
    let x = Tensor::from_slice(&ctx, &SHAPE, &to_elem::<f32>(&x_host)).unwrap();
    let bias = Tensor::from_slice(&ctx, &BIAS, &to_elem::<f32>(&b_host)).unwrap();
    let attrs = Attrs::new(RequiredAttrs {
        is_inner_broadcast: false,
    });

    // The first result lives at offset `span` of one buffer, the second at `2 * span` of
    // another, and the first feeds the second inside one submission.
    let (first_buf, span) = arena(&ctx);
    let (second_buf, _) = arena(&ctx);
    let mut first = Tensor::<f32>::from_buffer(&ctx, &first_buf, span, &SHAPE).unwrap();
    let mut second = Tensor::<f32>::from_buffer(&ctx, &second_buf, 2 * span, &SHAPE).unwrap();
    let mut encoder = ctx.create_encoder();
    let inputs = Inputs {
        data: &x,
        bias: &bias,
    };
    let outputs = OutputsMut { output: &mut first };
    op::record_into(&ctx, &mut encoder, &inputs, outputs, &attrs).unwrap();
    let inputs = Inputs {
        data: &first,
        bias: &bias,
    };
    let outputs = OutputsMut {
        output: &mut second,
    };
    op::record_into(&ctx, &mut encoder, &inputs, outputs, &attrs).unwrap();
    ctx.submit(encoder).unwrap();

    let x_f32 = from_elem(&to_elem::<f32>(&x_host));
    let b_f32 = from_elem(&to_elem::<f32>(&b_host));
    let want_first = bias_softmax(&x_f32, &SHAPE, &b_f32, 1, false).unwrap();
    let got_first = from_elem(&first.to_vec(&ctx).unwrap());
    let tolerance = Tolerance::bias_softmax(DType::F32);
    let c = compare(&got_first, &want_first, tolerance);
    assert!(c.passed(), "first: {c}");
    // The second op's reference starts from the first's GPU result, so the test measures the
    // second op, not the first one's rounding twice.
    let want_second = bias_softmax(&got_first, &SHAPE, &b_f32, 1, false).unwrap();
    let c = compare(
        &from_elem(&second.to_vec(&ctx).unwrap()),
        &want_second,
        tolerance,
    );
    assert!(c.passed(), "second: {c}");

    // `run_into` reuses the same output with new data.
    let y_host = rng.uniform(n, -1.0, 1.0);
    let y = Tensor::from_slice(&ctx, &SHAPE, &to_elem::<f32>(&y_host)).unwrap();
    let inputs = Inputs {
        data: &y,
        bias: &bias,
    };
    let outputs = OutputsMut { output: &mut first };
    op::run_into(&ctx, &inputs, outputs, &attrs).unwrap();
    let y_f32 = from_elem(&to_elem::<f32>(&y_host));
    let want = bias_softmax(&y_f32, &SHAPE, &b_f32, 1, false).unwrap();
    let c = compare(&from_elem(&first.to_vec(&ctx).unwrap()), &want, tolerance);
    assert!(c.passed(), "run_into: {c}");
}

#[test]
fn a_provided_output_of_the_wrong_shape_is_rejected() {
    let ctx = ctx();
    let x = Tensor::<f32>::zeros(&ctx, &SHAPE).unwrap();
    let bias = Tensor::<f32>::zeros(&ctx, &BIAS).unwrap();
    let mut wrong = Tensor::<f32>::zeros(&ctx, &[4, 120]).unwrap();
    let inputs = Inputs {
        data: &x,
        bias: &bias,
    };
    let outputs = OutputsMut { output: &mut wrong };
    let err = op::run_into(
        &ctx,
        &inputs,
        outputs,
        &Attrs::new(RequiredAttrs {
            is_inner_broadcast: true,
        }),
    )
    .unwrap_err();
    assert_eq!(
        err,
        OpError::Output {
            op: op::OP_NAME,
            output: "output".to_owned(),
            rule: "the op produces shape [4, 3, 40], the provided tensor has shape [4, 120]"
                .to_owned(),
        }
    );
}

#[test]
fn an_output_in_an_input_buffer_is_rejected() {
    let ctx = ctx();
    let (buffer, span) = arena(&ctx);
    let x = Tensor::<f32>::from_buffer(&ctx, &buffer, 0, &SHAPE).unwrap();
    let mut out = Tensor::<f32>::from_buffer(&ctx, &buffer, span, &SHAPE).unwrap();
    let bias = Tensor::<f32>::zeros(&ctx, &BIAS).unwrap();
    let inputs = Inputs {
        data: &x,
        bias: &bias,
    };
    let outputs = OutputsMut { output: &mut out };
    let err = op::run_into(
        &ctx,
        &inputs,
        outputs,
        &Attrs::new(RequiredAttrs {
            is_inner_broadcast: false,
        }),
    )
    .unwrap_err();
    let OpError::Runtime(RuntimeError::Alias { written, other, .. }) = &err else {
        panic!("expected an Alias error, got {err}");
    };
    assert_eq!((*written, *other), ("output", "data"));
}

#[test]
fn a_loop_over_the_same_tensors_reuses_its_bind_groups() {
    let ctx = ctx();
    let mut rng = DataRng::new(7);
    let n = SHAPE.iter().product();
    let bias = Tensor::from_slice(
        &ctx,
        &BIAS,
        &to_elem::<f32>(&rng.uniform(BIAS.iter().product(), -1.0, 1.0)),
    )
    .unwrap();
    let x = Tensor::from_slice(&ctx, &SHAPE, &to_elem::<f32>(&rng.uniform(n, -3.0, 3.0))).unwrap();
    let mut out = Tensor::<f32>::zeros(&ctx, &SHAPE).unwrap();
    let attrs = Attrs::new(RequiredAttrs {
        is_inner_broadcast: false,
    });
    let step = |out: &mut Tensor<f32>| {
        let inputs = Inputs {
            data: &x,
            bias: &bias,
        };
        op::run_into(&ctx, &inputs, OutputsMut { output: out }, &attrs).unwrap();
    };
    step(&mut out);
    let kept = ctx.kept_bind_groups();
    assert!(kept >= 1, "run_into keeps the bind groups it made");
    let first = out.to_vec(&ctx).unwrap();
    for _ in 0..4 {
        step(&mut out);
    }
    assert_eq!(ctx.kept_bind_groups(), kept, "later steps reuse them");
    assert_eq!(
        out.to_vec(&ctx).unwrap(),
        first,
        "and compute the same result"
    );

    // `run` makes new outputs every call, so it keeps nothing that would hold them alive.
    let inputs = Inputs {
        data: &x,
        bias: &bias,
    };
    op::run(&ctx, &inputs, &attrs).unwrap();
    assert_eq!(ctx.kept_bind_groups(), kept);
    ctx.trim_pools();
    assert_eq!(ctx.kept_bind_groups(), 0);
}
