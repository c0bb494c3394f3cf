//! `precompile` of every generated op on a real adapter: it compiles every shader the device
//! can run (on several threads natively), the pipelines land in the context's cache, and a
//! run afterwards still matches the reference.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use examples::cases;
use examples::data::compare;
use kernel_runtime::{AnyTensor, Context};

#[test]
fn precompile_prepares_every_runnable_shader_and_runs_still_match() {
    let ctx = Context::new().expect("an adapter (CI installs Mesa lavapipe)");
    let prepared = [
        kernels::bias_softmax::precompile(&ctx).unwrap(),
        kernels::gated_relative_position_bias::precompile(&ctx).unwrap(),
        kernels::mrotary_embedding::precompile(&ctx).unwrap(),
    ];
    assert!(prepared.iter().all(|&n| n > 0), "{prepared:?}");
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
