//! GPU tests of error capture: wgpu's validation errors come back as values, never panics.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod common;

use common::{BROKEN, MISMATCH, SCALE, data, params_n_offset};
use kernel_runtime::{Arg, Binding, Dispatch, Plan, PlannedPass, RuntimeError, Tensor};

fn one_pass(pass: PlannedPass) -> Plan {
    Plan {
        op: "Test",
        variant: "errors",
        passes: vec![pass],
        intermediates: vec![],
        outputs: vec![],
    }
}

#[test]
fn binding_mismatch_is_a_validation_error() {
    let ctx = test_support::context();
    let y = Tensor::<f32>::zeros(&ctx, &[4]).unwrap();
    let x = Tensor::<f32>::zeros(&ctx, &[4]).unwrap();
    let pass = PlannedPass {
        id: "mismatched",
        kernel: &MISMATCH,
        overrides: vec![],
        // Binding 1 is a uniform in the shader; a storage-only tensor buffer is bound there.
        bindings: vec![Binding::Arg(0), Binding::Arg(1)],
        params: vec![],
        dispatch: Dispatch::Workgroups(1),
    };
    let err = ctx
        .run_plan(&one_pass(pass), &common::io(&y, &x))
        .unwrap_err();
    eprintln!("{err}");
    match &err {
        RuntimeError::Validation { label, message } => {
            assert_eq!(label, "mismatched");
            assert!(!message.is_empty());
        }
        other => panic!("expected a validation error, got {other}"),
    }
    // The context stays usable afterwards.
    assert_eq!(y.to_vec(&ctx).unwrap(), [0.0; 4]);
}

#[test]
fn missing_binding_is_a_validation_error() {
    let ctx = test_support::context();
    let x = Tensor::from_slice(&ctx, &[64], &data(64)).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[64]).unwrap();
    let pass = PlannedPass {
        id: "no-params",
        kernel: &SCALE,
        overrides: vec![("scale", 1.0)],
        bindings: vec![Binding::Arg(0), Binding::Arg(1)],
        params: vec![],
        dispatch: Dispatch::Workgroups(1),
    };
    let err = ctx
        .run_plan(&one_pass(pass), &common::io(&x, &y))
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Validation { label, .. } if label == "no-params"),
        "{err}"
    );
}

#[test]
fn invalid_wgsl_is_a_validation_error_naming_the_kernel() {
    let ctx = test_support::context();
    let err = ctx.precompile(&BROKEN, &[]).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Validation { label, .. } if label == "test/broken"),
        "{err}"
    );
    assert_eq!(ctx.pipeline_cache_len(), 0, "failures are not cached");
}

#[test]
fn missing_override_is_a_validation_error() {
    let ctx = test_support::context();
    // `scale` has no default in the shader.
    let err = ctx.precompile(&SCALE, &[("wg", 64.0)]).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Validation { label, .. } if label == "test/scale"),
        "{err}"
    );
}

#[test]
fn prepare_reports_the_failing_pipeline_and_keeps_the_good_ones() {
    let ctx = test_support::context();
    let pass = |kernel, overrides: Vec<(&'static str, f64)>| PlannedPass {
        id: "prepared",
        kernel,
        overrides,
        bindings: vec![],
        params: vec![],
        dispatch: Dispatch::Workgroups(1),
    };
    let good = one_pass(pass(&SCALE, vec![("scale", 2.0), ("wg", 64.0)]));
    assert_eq!(ctx.prepare(&[&good, &good]).unwrap(), 1);
    assert_eq!(ctx.pipeline_cache_len(), 1);
    let broken = one_pass(pass(&BROKEN, vec![]));
    let err = ctx.prepare(&[&broken]).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Validation { label, .. } if label == "test/broken"),
        "{err}"
    );
    assert_eq!(ctx.pipeline_cache_len(), 1);
}

#[test]
fn argument_index_out_of_range_is_an_invalid_plan() {
    let ctx = test_support::context();
    let x = Tensor::from_slice(&ctx, &[64], &data(64)).unwrap();
    let pass = PlannedPass {
        id: "short",
        kernel: &SCALE,
        overrides: vec![("scale", 1.0)],
        bindings: vec![Binding::Arg(0), Binding::Arg(1), Binding::Params],
        params: params_n_offset(64, 0.0),
        dispatch: Dispatch::Workgroups(1),
    };
    let err = ctx
        .run_plan(&one_pass(pass.clone()), &common::out(&x))
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::InvalidPlan { label, .. } if label == "short"),
        "{err}"
    );
    let no_bytes = PlannedPass {
        params: vec![],
        ..pass.clone()
    };
    let err = ctx
        .run_plan(&one_pass(no_bytes), &common::io(&x, &x))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::InvalidPlan { .. }), "{err}");
    let bad_intermediate = PlannedPass {
        bindings: vec![Binding::Arg(0), Binding::Intermediate(0), Binding::Params],
        ..pass
    };
    let err = ctx
        .run_plan(&one_pass(bad_intermediate), &common::out(&x))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::InvalidPlan { .. }), "{err}");
}

#[test]
fn aliased_read_write_arguments_fail_at_submit() {
    let ctx = test_support::context();
    let x = Tensor::from_slice(&ctx, &[64], &data(64)).unwrap();
    let pass = PlannedPass {
        id: "aliased",
        kernel: &SCALE,
        overrides: vec![("scale", 1.0)],
        bindings: vec![Binding::Arg(0), Binding::Arg(0), Binding::Params],
        params: params_n_offset(64, 0.0),
        dispatch: Dispatch::Workgroups(1),
    };
    // Declared as read only, so the runtime's aliasing check lets it through, but the shader
    // binds it read-write too: wgpu rejects the recorded commands, which surfaces when the
    // encoder is finished.
    let args = [Arg::read("x", x.binding())];
    let err = ctx.run_plan(&one_pass(pass.clone()), &args).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Validation { label, message }
            if label == "Test/errors" && message.contains("'Test/errors'")),
        "{err}"
    );

    // Declared as written, the same plan is rejected before anything is recorded.
    let err = ctx.run_plan(&one_pass(pass), &common::out(&x)).unwrap_err();
    assert!(
        matches!(
            err,
            RuntimeError::Alias {
                written: "y",
                other: "y",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn grid_beyond_the_device_limit_is_an_error() {
    let ctx = test_support::context();
    let max = u64::from(ctx.caps().limits.max_compute_workgroups_per_dimension);
    let x = Tensor::from_slice(&ctx, &[64], &data(64)).unwrap();
    let pass = PlannedPass {
        id: "huge-grid",
        kernel: &SCALE,
        overrides: vec![("scale", 1.0)],
        bindings: vec![Binding::Arg(0), Binding::Arg(0), Binding::Params],
        params: params_n_offset(64, 0.0),
        dispatch: Dispatch::Grid {
            x: max + 1,
            y: 1,
            z: 1,
        },
    };
    let err = ctx.run_plan(&one_pass(pass), &common::out(&x)).unwrap_err();
    assert!(
        matches!(err, RuntimeError::TooManyWorkgroups { .. }),
        "{err}"
    );
}
