//! The runtime from several threads at once: every op of the main job's cases (small shapes)
//! planned, run and read back by several threads on one shared context, on contexts of their
//! own (which share the process's device), and on dedicated devices, with precompiling,
//! `prepare` and pipeline-cache saving going on beside them. Every result must be bit for bit
//! the single-threaded run's.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Barrier};

use kernel_runtime::{AnyTensor, Context, ContextOptions};
use kernels_tools::cases::{self, Case};

/// Threads per scenario: more than CI's two cores, so threads interleave inside the runtime.
const THREADS: usize = 4;
/// How often each thread runs the whole set.
const ROUNDS: usize = 2;
/// Cases whose output has more elements are left out, to keep lavapipe quick.
const MAX_ELEMENTS: usize = 1 << 19;

/// The cases this adapter can run, small enough for a software adapter.
fn small_cases(ctx: &Context) -> Vec<Case> {
    cases::all()
        .unwrap()
        .into_iter()
        .filter(|c| c.shape.iter().product::<usize>() <= MAX_ELEMENTS)
        .filter(|c| c.unsupported(ctx.caps()).is_none())
        .collect()
}

/// Runs every case on `ctx` in the order `order` gives, returning the first output's bits
/// per case (in case order).
fn run_all(ctx: &Context, cases: &[Case], order: &[usize]) -> Vec<Vec<u64>> {
    let mut out = vec![Vec::new(); cases.len()];
    for &i in order {
        let case = &cases[i];
        let entry = case.entry().unwrap();
        let inputs = case.upload(ctx).unwrap();
        let refs: Vec<&AnyTensor> = inputs.iter().collect();
        let run = entry
            .run(ctx, &refs, &case.attrs)
            .unwrap_or_else(|e| panic!("{} {}: {e}", case.op, case.name));
        let values = run.outputs[0].to_f64_vec(ctx).unwrap();
        out[i] = values.iter().map(|v| v.to_bits()).collect();
    }
    out
}

/// Case order for thread `t`: rotated and, for odd threads, reversed, so threads run
/// different ops at the same moment.
fn order(t: usize, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).map(|i| (i + t) % n).collect();
    if t % 2 == 1 {
        order.reverse();
    }
    order
}

/// Each of [`THREADS`] threads runs every case [`ROUNDS`] times on the context `context`
/// gives it, starting together; every result must equal `baseline`.
fn scenario(
    name: &str,
    cases: &[Case],
    baseline: &[Vec<u64>],
    context: impl Fn(usize) -> Arc<Context> + Sync,
) {
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (barrier, context) = (&barrier, &context);
            scope.spawn(move || {
                let ctx = context(t);
                barrier.wait();
                for round in 0..ROUNDS {
                    let got = run_all(&ctx, cases, &order(t + round, cases.len()));
                    for (i, (got, want)) in got.iter().zip(baseline).enumerate() {
                        assert!(
                            got == want,
                            "{name}: thread {t}, round {round}: {} {} differs from the single-threaded run",
                            cases[i].op,
                            cases[i].name
                        );
                    }
                }
            });
        }
    });
}

#[test]
fn threads_on_shared_and_separate_contexts_match_the_single_threaded_run() {
    let shared = Arc::new(test_support::context());
    let cases = small_cases(&shared);
    assert!(cases.len() >= 6, "too few cases: {}", cases.len());
    let baseline = run_all(&shared, &cases, &order(0, cases.len()));

    // One context, used by every thread.
    scenario("one shared context", &cases, &baseline, |_| {
        Arc::clone(&shared)
    });
    // A context per thread, made inside the thread (on the process's shared device).
    scenario("a context per thread", &cases, &baseline, |_| {
        Arc::new(Context::new().unwrap())
    });
    // A dedicated device per thread, made up front and kept until the end of the test.
    let opts = ContextOptions {
        dedicated_device: true,
        ..ContextOptions::default()
    };
    let dedicated: Vec<Arc<Context>> = (0..THREADS)
        .map(|_| Arc::new(Context::with_options(&opts).unwrap()))
        .collect();
    for (i, a) in dedicated.iter().enumerate() {
        assert!(
            dedicated[i + 1..].iter().all(|b| a.device() != b.device()),
            "dedicated devices are distinct"
        );
        assert!(
            a.device() != shared.device(),
            "a dedicated device is not the shared one"
        );
    }
    scenario("a dedicated device per thread", &cases, &baseline, |t| {
        Arc::clone(&dedicated[t])
    });
}

#[test]
fn contexts_on_the_same_adapter_share_its_device() {
    let a = test_support::context();
    let b = Context::new().unwrap();
    assert!(a.device() == b.device(), "one device for both");
    // Tensors of one are inputs of the other.
    let cases = small_cases(&a);
    let case = &cases[0];
    let inputs = case.upload(&a).unwrap();
    let refs: Vec<&AnyTensor> = inputs.iter().collect();
    let run = case.entry().unwrap().run(&b, &refs, &case.attrs).unwrap();
    assert_eq!(
        run.outputs[0].to_f64_vec(&a).unwrap().len(),
        case.want.len()
    );
    // Other features, another device.
    let opts = ContextOptions {
        disable_features: vec!["timestamp-query"],
        ..ContextOptions::default()
    };
    let c = Context::with_options(&opts).unwrap();
    if a.caps().timestamp_query {
        assert!(a.device() != c.device(), "a device without timestamps");
    }
}

#[test]
fn compiling_and_saving_the_pipeline_cache_beside_running_threads() {
    let ctx = test_support::context();
    let cases = small_cases(&ctx);
    let baseline = run_all(&ctx, &cases, &order(0, cases.len()));
    let cache =
        std::env::temp_dir().join(format!("kernels-concurrency-{}.bin", std::process::id()));
    let _ = std::fs::remove_file(&cache);
    // Where the device has no pipeline cache (lavapipe), saving is a no-op that must still
    // be safe beside the runs.
    match ctx.use_pipeline_cache(&cache) {
        Ok(_) | Err(kernel_runtime::RuntimeError::MissingFeature(_)) => {}
        Err(e) => panic!("{e}"),
    }
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for entry in kernels::OPS {
                kernel_runtime::support::precompile(&ctx, entry.shaders).unwrap();
                ctx.save_pipeline_cache().unwrap();
            }
            // The exact pipelines of every case, as an application that knows its shapes.
            for case in cases.iter() {
                let inputs = case.upload(&ctx).unwrap();
                let refs: Vec<&AnyTensor> = inputs.iter().collect();
                let plan = case
                    .entry()
                    .unwrap()
                    .plan(&ctx, &refs, &case.attrs)
                    .unwrap();
                ctx.prepare(&[&plan]).unwrap();
            }
            ctx.save_pipeline_cache().unwrap();
        });
        for round in 0..ROUNDS {
            let got = run_all(&ctx, &cases, &order(round, cases.len()));
            assert!(got == baseline, "round {round} differs");
        }
    });
    let _ = std::fs::remove_file(&cache);
}
