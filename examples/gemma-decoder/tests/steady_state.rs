//! A token step in the steady state, as an application runs it: after the first token nothing
//! is created (the runtime's counts of buffers, bind groups and pipelines stay flat) and the
//! decoder's own work per token (the position's updates, recording every call into the
//! token's compute pass) allocates nothing on the heap, counted by a global allocator of this
//! test binary's own: the updates none, recording none but the pass's command list on its
//! first command (recording the calls again into that pass allocates nothing). What wgpu
//! allocates around it (the encoder, the pass, the uniform upload, the submission) is measured
//! beside it and printed.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::alloc::System;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations made while `f` runs, and its result.
fn allocations<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let region = Region::new(GLOBAL);
    let r = f();
    (region.change().allocations, r)
}

#[test]
fn after_the_first_token_nothing_is_created_or_allocated() {
    if !gemma_decoder::PRESENT {
        eprintln!("skipped: no package corpus (set KERNEL_CORPUS_DIR)");
        return;
    }
    #[cfg(corpus)]
    steady_state();
}

#[cfg(corpus)]
fn steady_state() {
    use gemma_decoder::{Config, Decoder, Weights};
    use kernel_runtime::wgpu;

    let ctx = test_support::context();
    let config = Config::small();
    let weights = Weights::seeded(&config, 6);
    let mut decoder = Decoder::new(&ctx, &config, &weights).unwrap();
    decoder.start(&ctx, 1);
    // The first token creates what later ones reuse; the second shows it does.
    decoder.step(&ctx).unwrap();
    let after_first = ctx.counts();
    let tokens = 8;
    let (mut updates, mut recording, mut around) = (0, 0, 0);
    for _ in 0..tokens {
        let (n, updated) = allocations(|| decoder.update(&ctx));
        updated.unwrap();
        updates += n;
        let (n, mut encoder) = allocations(|| ctx.create_encoder());
        around += n;
        let (n, ()) = allocations(|| decoder.begin_token(&mut encoder));
        around += n;
        // The token's changed uniforms, uploaded in one write (recording would do it too).
        let (n, ()) = allocations(|| ctx.flush_uniforms());
        around += n;
        {
            let (n, mut pass) = allocations(|| {
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("decode step"),
                    timestamp_writes: None,
                })
            });
            around += n;
            let (n, ()) = allocations(|| decoder.record_pass(&mut pass));
            recording += n;
            let (n, ()) = allocations(|| drop(pass));
            around += n;
        }
        let (n, ()) = allocations(|| decoder.finish_token(&mut encoder));
        around += n;
        let (n, _) = allocations(|| ctx.queue().submit(Some(encoder.finish())));
        around += n;
    }
    let after_tokens = ctx.counts();
    // Recording the same calls again into a pass that already holds commands allocates
    // nothing: the one allocation of a token's recording is the pass's command list, made on
    // its first command (this encoder is dropped, not submitted).
    let mut encoder = ctx.create_encoder();
    let again = {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        decoder.record_pass(&mut pass);
        allocations(|| decoder.record_pass(&mut pass)).0
    };
    drop(encoder);
    let after_last = ctx.counts();
    let tokens_read = decoder.tokens(&ctx).unwrap();
    assert_eq!(tokens_read.len(), tokens + 1);
    eprintln!(
        "per token: {} heap allocations by the decoder's updates, {} while it records (the \
         pass's command list), {} by wgpu around them (encoder, pass, uniform upload, \
         submission); {} dispatches",
        updates / tokens,
        recording / tokens,
        around / tokens,
        (after_tokens.dispatches_recorded - after_first.dispatches_recorded) / tokens as u64
    );
    assert_eq!(updates, 0, "the decoder's updates allocated");
    assert_eq!(again, 0, "recording the calls into a pass allocated");
    assert!(
        recording <= tokens,
        "recording a token allocated {recording} times in {tokens} tokens: more than the \
         pass's command list"
    );
    assert_eq!(
        (
            after_last.buffers_created,
            after_last.bind_groups_created,
            after_last.pipelines_created
        ),
        (
            after_first.buffers_created,
            after_first.bind_groups_created,
            after_first.pipelines_created
        ),
        "buffers, bind groups or pipelines were created after the first token"
    );
}
