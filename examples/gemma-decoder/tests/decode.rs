//! The decoder against the float64 reference of `test_support::decode`, token by token: every
//! stage's output after every token matches the reference applied to that stage's own GPU
//! inputs, within the per-op tolerance, and the greedy tokens of a whole run equal those of
//! the reference decoding on its own.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn every_stage_and_every_greedy_token_match_the_reference() {
    if !gemma_decoder::PRESENT {
        eprintln!("skipped: no package corpus (set KERNEL_CORPUS_DIR)");
        return;
    }
    #[cfg(corpus)]
    gpu::check(gemma_decoder::Precision::Quantized, 32);
}

#[test]
fn the_dense_form_matches_the_reference() {
    if !gemma_decoder::PRESENT {
        eprintln!("skipped: no package corpus (set KERNEL_CORPUS_DIR)");
        return;
    }
    #[cfg(corpus)]
    gpu::check(gemma_decoder::Precision::Dense, 8);
}

#[cfg(corpus)]
mod gpu {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use gemma_decoder::weights::{Linear, QuantMatrix};
    use gemma_decoder::{At, Config, Decoder, Precision, Probe, Recording, Stage, Weights};
    use kernel_runtime::{Context, wgpu};
    use test_support::decode::{self as reference, Dims, Layer, Model, Normed, Weight, ops};

    /// Per-op tolerance, relative to `1 + |want|`: the corpus tests hold the ops to 1e-5 on
    /// rows of up to 320; these rows are up to 3,072 long and attention's scores reach tens.
    const TOLERANCE: f64 = 1e-4;

    fn codes(m: &QuantMatrix) -> Weight<'_> {
        Weight::Codes(ops::Codes {
            rows: m.rows,
            cols: m.cols,
            zero_point: f64::from(m.zero_point),
            scale: &m.scale,
            codes: (0..m.rows * m.cols)
                .map(|i| m.code(i / m.cols, i % m.cols) as u8)
                .collect(),
        })
    }

    fn linear(l: &Linear) -> Weight<'_> {
        match l {
            Linear::Quant(m) => codes(m),
            Linear::Dense(m) => Weight::Dense(ops::Dense {
                rows: m.rows,
                cols: m.cols,
                values: m.values.iter().map(|v| v.to_f64()).collect(),
            }),
        }
    }

    /// The reference's view of the decoder's weights.
    fn model<'w>(c: &Config, w: &'w Weights) -> Model<'w> {
        Model {
            dims: Dims {
                hidden: c.hidden,
                layers: c.layers,
                q_heads: c.q_heads,
                kv_heads: c.kv_heads,
                head_dim: c.head_dim,
                vocab: c.vocab,
                ple_dim: c.ple_dim,
                sliding_window: c.sliding_window,
                global_every: c.global_every,
                eps: f64::from(c.eps),
                theta_local: c.rope_theta_local,
                theta_global: c.rope_theta_global,
            },
            embed: Box::new(|id| w.embed.row(id)),
            ple_embed: Box::new(|id| w.ple_embed.row(id)),
            ple_model_projection: linear(&w.ple_model_projection),
            ple_projection_norm: &w.ple_projection_norm,
            layers: w
                .layers
                .iter()
                .map(|l| Layer {
                    q: codes(&l.q),
                    k: codes(&l.k),
                    v: codes(&l.v),
                    q_norm: &l.q_norm,
                    k_norm: &l.k_norm,
                    o: codes(&l.o),
                    post_attention_norm: &l.post_attention_norm,
                    pre_mlp_norm: &l.pre_mlp_norm,
                    gate: codes(&l.gate),
                    up: codes(&l.up),
                    down: codes(&l.down),
                    post_mlp_norm: &l.post_mlp_norm,
                    ple_gate: linear(&l.ple_gate),
                    ple_projection: linear(&l.ple_projection),
                    post_ple_norm: &l.post_ple_norm,
                    layer_scalar: f64::from(l.layer_scalar),
                    input_norm: &l.input_norm,
                })
                .collect(),
            final_norm: &w.final_norm,
            lm_head: linear(&w.lm_head),
        }
    }

    /// Copies every stage's outputs as the step records them.
    struct Capture<'c> {
        ctx: &'c Context,
        taken: Vec<(At, &'static str, wgpu::Buffer)>,
    }

    impl Probe for Capture<'_> {
        fn after(
            &mut self,
            encoder: &mut wgpu::CommandEncoder,
            at: At,
            outputs: &[(&'static str, wgpu::Buffer)],
        ) {
            for (name, buffer) in outputs {
                let copy = self.ctx.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(name),
                    size: buffer.size(),
                    usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                encoder.copy_buffer_to_buffer(buffer, 0, &copy, 0, buffer.size());
                self.taken.push((at, *name, copy));
            }
        }
    }

    /// What one token's stages wrote, by stage and name, as raw words.
    struct Captured(HashMap<(At, &'static str), Vec<u32>>);

    impl Captured {
        fn read(capture: Capture<'_>) -> Self {
            let ctx = capture.ctx;
            Captured(
                capture
                    .taken
                    .into_iter()
                    .map(|(at, name, buffer)| {
                        let bytes = ctx.read_buffer(&buffer, buffer.size()).unwrap();
                        let words = bytes
                            .chunks_exact(4)
                            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                            .collect();
                        ((at, name), words)
                    })
                    .collect(),
            )
        }

        fn words(&self, layer: Option<usize>, stage: Stage, name: &str) -> &[u32] {
            let at = At { layer, stage };
            self.0
                .iter()
                .find(|((a, n), _)| *a == at && *n == name)
                .map(|(_, w)| w.as_slice())
                .unwrap_or_else(|| panic!("{at}: nothing captured as `{name}`"))
        }

        /// The first `len` values of an f32 output.
        fn f32s(&self, layer: Option<usize>, stage: Stage, name: &str, len: usize) -> Vec<f32> {
            self.words(layer, stage, name)[..len]
                .iter()
                .map(|&w| f32::from_bits(w))
                .collect()
        }

        fn f64s(&self, layer: Option<usize>, stage: Stage, name: &str, len: usize) -> Vec<f64> {
            self.f32s(layer, stage, name, len)
                .into_iter()
                .map(f64::from)
                .collect()
        }
    }

    /// Checks `got` against `want`, keeping the worst error seen for `stage`.
    fn close(
        worst: &RefCell<HashMap<Stage, f64>>,
        what: &str,
        stage: Stage,
        got: &[f32],
        want: &[f64],
    ) {
        let (at, err) = test_support::worst(got, want);
        let mut worst = worst.borrow_mut();
        let w = worst.entry(stage).or_default();
        *w = w.max(err);
        assert!(
            err < TOLERANCE,
            "{what}: element {at}: {} against {} (relative error {err:e})",
            got[at],
            want[at]
        );
    }

    fn check_token(
        c: &Config,
        m: &Model<'_>,
        got: &Captured,
        token: usize,
        pos: usize,
        worst: &RefCell<HashMap<Stage, f64>>,
    ) -> usize {
        let d = &m.dims;
        let (h, kv, ple) = (c.hidden, c.kv_out(), c.ple_total());
        let what =
            |layer: Option<usize>, stage: Stage| format!("position {pos}, {}", At { layer, stage });
        let check = |layer, stage, name: &str, len, want: &[f64]| {
            let g = got.f32s(layer, stage, name, len);
            close(
                worst,
                &format!("{}: {name}", what(layer, stage)),
                stage,
                &g,
                want,
            );
        };

        let (hidden, x) = reference::embed(m, token);
        check(None, Stage::Embed, "hidden", h, &hidden);
        check(None, Stage::Embed, "x", h, &x.x);
        check(None, Stage::Embed, "x_sum", 1, &[x.sum]);
        check(
            None,
            Stage::PleGather,
            "ple_gathered",
            ple,
            &reference::ple_gather(m, token),
        );
        let hidden = got.f64s(None, Stage::Embed, "hidden", h);
        check(
            None,
            Stage::PleProject,
            "ple_projected",
            ple,
            &reference::ple_project(m, &hidden),
        );
        let projected = got.f64s(None, Stage::PleProject, "ple_projected", ple);
        check(
            None,
            Stage::PleNorm,
            "ple",
            ple,
            &reference::ple_norm(m, &projected),
        );
        let normed = got.f64s(None, Stage::PleNorm, "ple", ple);
        let gathered = got.f64s(None, Stage::PleGather, "ple_gathered", ple);
        check(
            None,
            Stage::PleCombine,
            "ple",
            ple,
            &reference::ple_combine(&normed, &gathered),
        );
        let ple_in = got.f64s(None, Stage::PleCombine, "ple", ple);

        // Each stage from the inputs the GPU gave it: the outputs of the stages before.
        let mut hidden = (None, Stage::Embed);
        let mut input = (None, Stage::Embed);
        for (layer, l) in m.layers.iter().enumerate() {
            let at = Some(layer);
            let x = got.f64s(input.0, input.1, "x", h);
            let x_sum = got.f64s(input.0, input.1, "x_sum", 1)[0];
            let [q, k, v] = reference::qkv(l, &x, x_sum);
            check(at, Stage::Qkv, "q", c.q_out(), &q);
            check(at, Stage::Qkv, "k", kv, &k);
            check(at, Stage::Qkv, "v", kv, &v);

            let k = got.f64s(at, Stage::Qkv, "k", kv);
            let v = got.f64s(at, Stage::Qkv, "v", kv);
            let rows = (pos + 1) * kv;
            let keys = got.f32s(at, Stage::KeyCache, "k_cache", rows);
            let values = got.f32s(at, Stage::ValueCache, "v_cache", rows);
            let key_row = reference::key_row(d, l, &k, layer, pos);
            close(
                worst,
                &what(at, Stage::KeyCache),
                Stage::KeyCache,
                &keys[pos * kv..],
                &key_row,
            );
            let value_row = reference::value_row(d, &v);
            close(
                worst,
                &what(at, Stage::ValueCache),
                Stage::ValueCache,
                &values[pos * kv..],
                &value_row,
            );

            let q = got.f64s(at, Stage::Qkv, "q", c.q_out());
            let keys: Vec<f64> = keys.iter().map(|&v| f64::from(v)).collect();
            let values: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
            let attended = reference::attention(d, l, &q, (&keys, &values), layer, pos);
            check(at, Stage::Attention, "attention", c.q_out(), &attended);

            let attended = got.f64s(at, Stage::Attention, "attention", c.q_out());
            let before = got.f64s(hidden.0, hidden.1, "hidden", h);
            let (after, mlp_in) = reference::out_projection(d, l, &attended, &before);
            check(at, Stage::OutProjection, "hidden", h, &after);
            check(at, Stage::OutProjection, "mlp_in", h, &mlp_in.x);
            check(at, Stage::OutProjection, "mlp_in_sum", 1, &[mlp_in.sum]);

            let mlp_in = got.f64s(at, Stage::OutProjection, "mlp_in", h);
            let mlp_sum = got.f64s(at, Stage::OutProjection, "mlp_in_sum", 1)[0];
            check(
                at,
                Stage::GateUp,
                "mlp",
                c.intermediate,
                &reference::gate_up(l, &mlp_in, mlp_sum),
            );

            let mlp = got.f64s(at, Stage::GateUp, "mlp", c.intermediate);
            let before = got.f64s(at, Stage::OutProjection, "hidden", h);
            check(
                at,
                Stage::Down,
                "hidden",
                h,
                &reference::down(d, l, &mlp, &before),
            );

            let after_down = got.f64s(at, Stage::Down, "hidden", h);
            let gated = reference::ple_gate(d, l, &after_down, &ple_in, layer);
            check(at, Stage::PleGate, "ple_gated", c.ple_dim, &gated);

            let gated = got.f64s(at, Stage::PleGate, "ple_gated", c.ple_dim);
            let next = reference::next_norm(m, layer);
            let (after, x) = reference::ple_projection(d, l, &gated, &after_down, next);
            check(at, Stage::PleProjection, "hidden", h, &after);
            check(at, Stage::PleProjection, "x", h, &x.x);
            check(at, Stage::PleProjection, "x_sum", 1, &[x.sum]);
            hidden = (at, Stage::PleProjection);
            input = hidden;
        }

        let x = Normed {
            x: got.f64s(input.0, input.1, "x", h),
            sum: got.f64s(input.0, input.1, "x_sum", 1)[0],
        };
        check(
            None,
            Stage::LmHead,
            "logits",
            c.vocab,
            &reference::lm_head(m, &x),
        );
        let logits = got.f64s(None, Stage::LmHead, "logits", c.vocab);
        let next = got.words(None, Stage::ArgMax, "ids")[0] as usize;
        assert_eq!(
            next,
            ops::first_max(&logits),
            "position {pos}: ArgMax is not the first largest logit"
        );
        next
    }

    pub fn check(precision: Precision, tokens: usize) {
        let ctx = test_support::context();
        if precision == Precision::Dense && !ctx.caps().has_feature("shader-f16") {
            eprintln!("skipped: the adapter has no shader-f16 for the float16 weights");
            return;
        }
        let config = Config::small().with_precision(precision);
        // A seed whose greedy run visits several tokens before it repeats itself.
        let weights = Weights::seeded(&config, 6);
        let m = model(&config, &weights);
        let mut decoder = Decoder::new(&ctx, &config, &weights).unwrap();
        let first = 1u32;
        decoder.start(&ctx, first);

        let worst = RefCell::new(HashMap::new());
        let mut token = first as usize;
        let mut decoded = Vec::new();
        for pos in 0..tokens {
            let mut capture = Capture {
                ctx: &ctx,
                taken: Vec::new(),
            };
            let mut encoder = ctx.create_encoder();
            decoder
                .record_next(&ctx, &mut encoder, Recording::PerStage(&mut capture))
                .unwrap();
            ctx.submit(encoder).unwrap();
            token = check_token(&config, &m, &Captured::read(capture), token, pos, &worst);
            decoded.push(token as u32);
        }
        assert_eq!(decoder.tokens(&ctx).unwrap(), decoded, "the token history");
        // As an application runs it: every call of a token in one compute pass.
        let one_pass = decoder.generate(&ctx, first, tokens).unwrap().tokens;
        assert_eq!(
            one_pass, decoded,
            "one compute pass per token against a pass per stage"
        );

        // The reference decoding on its own, from the same first token.
        let mut cache = reference::Cache::new(&m.dims);
        let mut want = Vec::new();
        let mut margins = Vec::new();
        let mut token = first as usize;
        for pos in 0..tokens {
            let out = reference::step(&m, &mut cache, token, pos);
            token = out.token;
            want.push(token as u32);
            margins.push(out.margin);
        }
        let mut worst: Vec<_> = worst.into_inner().into_iter().collect();
        worst.sort_by(|a, b| b.1.total_cmp(&a.1));
        eprintln!(
            "{precision}: worst relative error by stage: {}",
            worst
                .iter()
                .map(|(s, e)| format!("{s:?} {e:.1e}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let least = margins.iter().copied().fold(f64::INFINITY, f64::min);
        eprintln!(
            "{precision}: tokens {decoded:?}; the reference's least greedy margin {least:.2e}"
        );
        assert_eq!(decoded, want, "greedy tokens against the reference's");
    }
}
