//! `precompile` of every generated op on a real adapter: it compiles every shader the device
//! can run (on several threads natively), the pipelines land in the context's cache, and a
//! run afterwards still matches the reference.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use kernel_runtime::AnyTensor;
use kernels_tools::cases;
use kernels_tools::data::compare;

#[test]
fn precompile_prepares_every_runnable_shader_and_runs_still_match() {
    let ctx = test_support::context();
    let prepared = [
        kernels::bias_softmax::precompile(&ctx).unwrap(),
        kernels::gated_relative_position_bias::precompile(&ctx).unwrap(),
        kernels::mrotary_embedding::precompile(&ctx).unwrap(),
    ];
    assert!(prepared.iter().all(|&n| n > 0), "{prepared:?}");
    // Every shader of every op (all variants and passes) goes into the one pool.
    let runnable = |entry: &kernel_runtime::registry::OpEntry| {
        entry
            .shaders
            .shaders()
            .iter()
            .filter(|s| s.features.iter().all(|f| ctx.caps().has_feature(f)))
            .count()
    };
    let expected = [
        runnable(&kernels::bias_softmax::ENTRY),
        runnable(&kernels::gated_relative_position_bias::ENTRY),
        runnable(&kernels::mrotary_embedding::ENTRY),
    ];
    assert_eq!(prepared, expected);
    let pipelines = ctx.pipeline_cache_len();
    assert!(pipelines > 0);
    // Twice is a no-op for the cache.
    kernels::mrotary_embedding::precompile(&ctx).unwrap();
    assert_eq!(ctx.pipeline_cache_len(), pipelines);

    let case = cases::all()
        .unwrap()
        .into_iter()
        .find(|c| c.op == "com.microsoft.MRotaryEmbedding" && c.unsupported(ctx.caps()).is_none())
        .unwrap();
    let entry = case.entry().unwrap();
    let inputs = case.upload(&ctx).unwrap();
    let refs: Vec<&AnyTensor> = inputs.iter().collect();
    let run = entry.run(&ctx, &refs, &case.attrs).unwrap();
    let got = run.outputs[0].to_f64_vec(&ctx).unwrap();
    assert!(compare(&got, &case.want, case.tolerance).passed());
}

#[test]
fn prepare_creates_exactly_the_pipelines_of_the_planned_shapes() {
    let ctx = test_support::context();
    // BiasSoftmax's pipelines take shape-dependent overrides, which `precompile` cannot know.
    let runnable: Vec<_> = cases::all()
        .unwrap()
        .into_iter()
        .filter(|c| c.op == "com.microsoft.BiasSoftmax" && c.unsupported(ctx.caps()).is_none())
        .collect();
    assert!(runnable.len() >= 2);
    let uploaded: Vec<_> = runnable.iter().map(|c| c.upload(&ctx).unwrap()).collect();
    let plans: Vec<_> = runnable
        .iter()
        .zip(&uploaded)
        .map(|(case, inputs)| {
            let refs: Vec<&AnyTensor> = inputs.iter().collect();
            case.entry()
                .unwrap()
                .plan(&ctx, &refs, &case.attrs)
                .unwrap()
        })
        .collect();
    let plan_refs: Vec<_> = plans.iter().collect();
    let distinct = ctx.prepare(&plan_refs).unwrap();
    assert!(distinct >= runnable.len(), "{distinct} pipelines");
    assert_eq!(ctx.pipeline_cache_len(), distinct);
    // Preparing again, and then running, creates nothing new; the runs still match.
    assert_eq!(ctx.prepare(&plan_refs).unwrap(), distinct);
    for (case, inputs) in runnable.iter().zip(&uploaded) {
        let refs: Vec<&AnyTensor> = inputs.iter().collect();
        let run = case.entry().unwrap().run(&ctx, &refs, &case.attrs).unwrap();
        let got = run.outputs[0].to_f64_vec(&ctx).unwrap();
        assert!(
            compare(&got, &case.want, case.tolerance).passed(),
            "{}",
            case.name
        );
    }
    assert_eq!(ctx.pipeline_cache_len(), distinct);
}
