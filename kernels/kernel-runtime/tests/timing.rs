//! GPU tests of timestamp timing.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod common;

use common::{SCALE, data, params_n_offset};
use kernel_runtime::{Binding, ContextOptions, Dispatch, Plan, PlannedPass, RuntimeError, Tensor};

fn scale_plan(n: u32) -> Plan {
    let pass = PlannedPass {
        id: "scale",
        kernel: &SCALE,
        overrides: vec![("scale", 2.0)],
        bindings: vec![Binding::Arg(0), Binding::Arg(1), Binding::Params],
        params: params_n_offset(n, 0.0),
        dispatch: Dispatch::Threads {
            threads: u64::from(n),
            workgroup_size: 64,
        },
    };
    Plan {
        op: "Test",
        variant: "timing",
        passes: vec![
            pass.clone(),
            PlannedPass {
                id: "again",
                ..pass
            },
        ],
        intermediates: vec![],
        outputs: vec![],
    }
}

#[test]
fn time_plan_returns_one_duration_per_repeat_or_missing_feature() {
    let ctx = test_support::context();
    let n = 4096;
    let x = Tensor::from_slice(&ctx, &[n], &data(n)).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[n]).unwrap();
    let plan = scale_plan(n as u32);
    match ctx.time_plan(&plan, &common::io(&x, &y), 5) {
        Ok(times) => {
            assert!(ctx.caps().timestamp_query);
            assert_eq!(times.len(), 5);
            assert!(times.iter().all(|t| t.as_secs() < 10), "{times:?}");
            eprintln!("{}: {times:?}", ctx.adapter_summary());
        }
        Err(e) => {
            assert!(!ctx.caps().timestamp_query);
            assert_eq!(e, RuntimeError::MissingFeature("timestamp-query"));
        }
    }
    // The timed runs computed the right thing.
    let expect: Vec<f32> = data(n).iter().map(|v| v * 2.0).collect();
    assert_eq!(y.to_vec(&ctx).unwrap(), expect);
    assert!(
        ctx.time_plan(&plan, &common::io(&x, &y), 0)
            .is_ok_and(|t| t.is_empty())
            || !ctx.caps().timestamp_query
    );
}

#[test]
fn time_plan_passes_times_each_active_pass() {
    let ctx = test_support::context();
    if !ctx.caps().timestamp_query {
        return;
    }
    let n = 4096;
    let x = Tensor::from_slice(&ctx, &[n], &data(n)).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[n]).unwrap();
    // 1100 repetitions of two passes need 4400 queries: more than one query set holds.
    let times = ctx
        .time_plan_passes(&scale_plan(n as u32), &common::io(&x, &y), 1100)
        .unwrap();
    assert_eq!(times.total.len(), 1100);
    let ids: Vec<&str> = times.passes.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, ["scale", "again"]);
    for (id, pass) in &times.passes {
        assert_eq!(pass.len(), 1100);
        assert!(
            pass.iter().all(|t| !t.is_zero() && t.as_secs() < 10),
            "{id}: {pass:?}"
        );
    }
    // A pass with no workgroups is skipped, and is not listed; a single pass's times are the
    // totals.
    let mut plan = scale_plan(n as u32);
    plan.passes[1].dispatch = Dispatch::Threads {
        threads: 0,
        workgroup_size: 64,
    };
    let times = ctx.time_plan_passes(&plan, &common::io(&x, &y), 3).unwrap();
    assert_eq!(times.passes.len(), 1);
    assert_eq!(times.passes[0].0, "scale");
    assert_eq!(times.passes[0].1, times.total);
}

#[test]
fn timing_without_the_feature_is_missing_feature() {
    let opts = ContextOptions {
        disable_features: vec!["timestamp-query"],
        ..ContextOptions::default()
    };
    let ctx = test_support::context_with(&opts);
    let x = Tensor::from_slice(&ctx, &[64], &data(64)).unwrap();
    let y = Tensor::<f32>::zeros(&ctx, &[64]).unwrap();
    let err = ctx
        .time_plan(&scale_plan(64), &common::io(&x, &y), 3)
        .unwrap_err();
    assert_eq!(err, RuntimeError::MissingFeature("timestamp-query"));
}
