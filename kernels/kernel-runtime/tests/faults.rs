//! Faults give typed errors promptly, never hangs or panics: a lost device (every later call
//! on it fails with `DeviceLost`, and a new context in the process works), buffers beyond the
//! device's limits (named), and a readback whose mapping fails.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{SCALE, data, params_n_offset};
use kernel_runtime::{
    Binding, Context, ContextOptions, Dispatch, Plan, PlannedPass, RuntimeError, Tensor,
};

/// A call on a lost device must return within this.
const PROMPT: Duration = Duration::from_secs(10);

fn dedicated() -> Context {
    test_support::context_with(&ContextOptions {
        dedicated_device: true,
        ..ContextOptions::default()
    })
}

fn scale_plan(n: u32) -> Plan {
    Plan {
        op: "Test",
        variant: "v",
        passes: vec![PlannedPass {
            id: "scale",
            kernel: &SCALE,
            overrides: vec![("scale", 2.0), ("wg", 64.0)],
            bindings: vec![Binding::Arg(0), Binding::Arg(1), Binding::Params],
            params: params_n_offset(n, 0.0),
            dispatch: Dispatch::Threads {
                threads: u64::from(n),
                workgroup_size: 64,
            },
        }],
        intermediates: vec![],
        outputs: vec![],
    }
}

fn assert_lost<T: std::fmt::Debug>(what: &str, started: Instant, result: Result<T, RuntimeError>) {
    let took = started.elapsed();
    assert!(took < PROMPT, "{what} took {took:?} on a lost device");
    match result {
        Err(RuntimeError::DeviceLost(_)) => {}
        other => panic!("{what} on a lost device: expected DeviceLost, got {other:?}"),
    }
}

#[test]
fn a_lost_device_fails_every_call_promptly_and_a_new_context_works() {
    let ctx = dedicated();
    let n = 1000;
    let x = Tensor::from_slice(&ctx, &[n], &data(n)).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[n]).unwrap();
    let plan = scale_plan(n as u32);
    ctx.run_plan(&plan, &common::io(&x, &y)).unwrap();

    ctx.device().destroy();

    let t = Instant::now();
    assert_lost("run_plan", t, ctx.run_plan(&plan, &common::io(&x, &y)));
    let t = Instant::now();
    assert_lost("to_vec", t, y.to_vec(&ctx));
    let t = Instant::now();
    assert_lost("from_slice", t, Tensor::from_slice(&ctx, &[n], &data(n)));
    let t = Instant::now();
    assert_lost("zeros", t, Tensor::<f32>::zeros(&ctx, &[n]));
    let t = Instant::now();
    assert_lost("submit", t, ctx.submit(ctx.create_encoder()));
    // Large enough for the staged path.
    let big = 3 << 20;
    let t = Instant::now();
    assert_lost(
        "from_slice (staged)",
        t,
        Tensor::from_slice(&ctx, &[big], &vec![1.0f32; big]),
    );

    // A new context in the same process runs.
    let fresh = Context::new().unwrap();
    let x = Tensor::from_slice(&fresh, &[n], &data(n)).unwrap();
    let y = Tensor::<f32>::zeros(&fresh, &[n]).unwrap();
    fresh.run_plan(&plan, &common::io(&x, &y)).unwrap();
    let want: Vec<f32> = data(n).iter().map(|v| v * 2.0).collect();
    assert_eq!(y.to_vec(&fresh).unwrap(), want);
}

#[test]
fn a_device_lost_during_readbacks_gives_typed_errors() {
    let ctx = dedicated();
    let ctx = std::sync::Arc::new(ctx);
    let n = 1 << 16;
    let y = std::sync::Arc::new(Tensor::from_slice(&ctx, &[n], &data(n)).unwrap());
    let (reader_ctx, reader_y) = (std::sync::Arc::clone(&ctx), std::sync::Arc::clone(&y));
    let reader = std::thread::spawn(move || {
        let started = Instant::now();
        loop {
            match reader_y.to_vec(&reader_ctx) {
                Ok(_) => {}
                Err(RuntimeError::DeviceLost(_) | RuntimeError::Readback(_)) => return,
                Err(other) => panic!("a readback on a device being lost: {other:?}"),
            }
            assert!(
                started.elapsed() < PROMPT * 3,
                "readbacks never saw the loss"
            );
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    ctx.device().destroy();
    reader.join().unwrap();
}

#[test]
fn buffers_beyond_the_device_limits_are_named_errors() {
    let ctx = test_support::context();
    let limit = ctx.caps().limits.max_storage_buffer_binding_size as usize;
    let elements = limit / 4 + 1;
    match Tensor::<f32>::zeros(&ctx, &[elements]) {
        Err(RuntimeError::TooLarge {
            what,
            bytes,
            limit: l,
        }) => {
            assert!(bytes > l, "{what}: {bytes} <= {l}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // More elements than an address can count.
    match Tensor::<f32>::zeros(&ctx, &[usize::MAX / 2, 4]) {
        Err(RuntimeError::TooLarge { .. }) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn an_output_beyond_the_device_limits_names_the_output_and_the_op() {
    let ctx = test_support::context();
    let limit = ctx.caps().limits.max_storage_buffer_binding_size as usize;
    let spec = kernel_runtime::OutputSpec {
        role: "Y",
        dtype: kernel_runtime::DType::F32,
        shape: vec![limit / 4 + 1],
    };
    let err = Tensor::<f32>::zeros_for(&ctx, "Scale", &spec).unwrap_err();
    let shown = err.to_string();
    assert!(
        matches!(err, RuntimeError::TooLarge { .. }) && shown.contains("output `Y` of Scale"),
        "{shown}"
    );
}

/// Outputs are allocated until the device's memory runs out: the failure is
/// `RuntimeError::OutOfMemory` naming the output and the op, and the device works on once
/// the buffers are dropped. Ignored by default: software adapters (lavapipe) take host
/// memory, so the test would exhaust the machine rather than a GPU; run it on a GPU with
/// `cargo test -p kernel-runtime --test faults -- --ignored running_out_of_memory`.
#[test]
#[ignore = "allocates until the adapter's memory runs out; for GPUs with memory of their own"]
fn running_out_of_memory_names_the_output_and_the_device_works_on() {
    // Beyond this much, the driver is taken to spill to host memory without limit.
    const GIVE_UP_BYTES: u64 = 1 << 40;
    let ctx = test_support::context();
    let elements = (ctx.caps().limits.max_storage_buffer_binding_size / 4).min(1 << 30) as usize;
    let spec = kernel_runtime::OutputSpec {
        role: "Y",
        dtype: kernel_runtime::DType::F32,
        shape: vec![elements],
    };
    let mut held = Vec::new();
    let error = loop {
        match Tensor::<f32>::zeros_for(&ctx, "Scale", &spec) {
            Ok(t) => held.push(t),
            Err(e) => break e,
        }
        let bytes = held.len() as u64 * elements as u64 * 4;
        assert!(
            bytes < GIVE_UP_BYTES,
            "{bytes} bytes allocated and no error"
        );
    };
    let allocated = held.len() as u64 * elements as u64 * 4;
    eprintln!("out of memory after {allocated} bytes: {error}");
    assert!(
        matches!(&error, RuntimeError::OutOfMemory { label } if label == "output `Y` of Scale"),
        "{error:?}"
    );
    drop(held);
    let x = Tensor::<f32>::from_slice(&ctx, &[4], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(x.to_vec(&ctx).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}
