//! Helpers of the GatedRelativePositionBias GPU tests: the shared contexts (default, and one
//! without `subgroups` so that `row_head_tree` is selected), a `Case` (shapes, seeded data,
//! `num_heads`) that can run on the GPU, be planned without one, and be checked against the
//! float64 reference of SEMANTICS.md §3.2, and the expected-variant rule of the kernel card.

// Each test binary compiles this module on its own and may not use every helper; a panic
// is the failure report of a test.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::OnceLock;

use kernel_runtime::{Context, DeviceCaps, Float, OpError, Plan, Tensor};
use kernels::gated_relative_position_bias::{
    self as op, Attrs, DTypes, Inputs, RequiredAttrs, Shapes,
};
use kernels_tools::data::{self, Comparison, DataRng, Tolerance, compare};
use kernels_tools::reference::gated_relative_position_bias::{G1, Problem, Sizes};

/// Variant ids, highest priority first.
pub const SUBGROUPS: &str = "row_head_subgroups";
pub const TREE: &str = "row_head_tree";
pub const ROW: &str = "row";
pub const ALL_VARIANTS: [&str; 3] = [SUBGROUPS, TREE, ROW];

/// The manifest's `LONG_ROW` tunable (the card's "long rows" for the variable-subgroup rule).
pub const LONG_ROW: usize = 256;

/// A context without the listed features (a fresh device on the same adapter).
pub fn context_without(features: &[&'static str]) -> Context {
    test_support::context_without(features)
}

/// The context most tests of the binary share (creating a lavapipe device is slow).
pub fn ctx() -> &'static Context {
    test_support::shared()
}

/// A shared context without `subgroups`: the adapter still reports its subgroup sizes, so
/// the selection rule is unchanged, but `row_head_subgroups` cannot be chosen and
/// head-parallel requests fall to `row_head_tree`.
pub fn tree_ctx() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| context_without(&["subgroups"]))
}

/// `(B, S, N, H, D)` as the reference names them.
pub fn sizes(batch: usize, seq: usize, heads: usize, head_size: usize, proj: usize) -> Sizes {
    Sizes {
        batch,
        seq,
        heads,
        head_size,
        proj,
    }
}

/// Whether the card's rule spreads the head over the workgroup, transcribed from the kernel
/// card (not from the manifest) so that the tests check the manifest against the card: on
/// adapters reporting one subgroup size when `H >= 4 D`; otherwise only for long vec4-aligned
/// rows with `H >= 8 D`.
pub fn head_parallel(caps: &DeviceCaps, s: Sizes) -> bool {
    let fixed = caps.subgroup_min_size > 0 && caps.subgroup_min_size == caps.subgroup_max_size;
    if fixed {
        s.head_size >= 4 * s.proj
    } else {
        s.seq.is_multiple_of(4) && s.seq >= LONG_ROW && s.head_size >= 8 * s.proj
    }
}

/// The variant the card says a device with `caps` runs for a valid problem of size `s`.
pub fn expected_variant(caps: &DeviceCaps, s: Sizes) -> &'static str {
    match (head_parallel(caps, s), caps.subgroups) {
        (false, _) => ROW,
        (true, true) => SUBGROUPS,
        (true, false) => TREE,
    }
}

/// The six input shapes of one call, in manifest order; separate from the data so contract
/// tests can build inconsistent cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseShapes {
    pub query_layer: Vec<usize>,
    pub query_bias: Vec<usize>,
    pub rel_pos: Vec<usize>,
    pub weight: Vec<usize>,
    pub bias: Vec<usize>,
    pub eco_a: Vec<usize>,
}

impl CaseShapes {
    /// The shapes SEMANTICS.md §3.1 requires for sizes `s`.
    pub fn valid(s: Sizes) -> CaseShapes {
        let hidden = s.heads * s.head_size;
        CaseShapes {
            query_layer: vec![s.batch, s.seq, hidden],
            query_bias: vec![hidden],
            rel_pos: vec![1, s.heads, s.seq, s.seq],
            weight: vec![s.head_size, s.proj],
            bias: vec![s.proj],
            eco_a: vec![1, s.heads, 1, 1],
        }
    }
}

/// One GatedRelativePositionBias invocation: shapes, float64 data and attributes. The data
/// always has as many elements as its shape holds.
#[derive(Debug, Clone)]
pub struct Case {
    pub shapes: CaseShapes,
    pub query: Vec<f64>,
    pub query_bias: Vec<f64>,
    pub rel_pos: Vec<f64>,
    pub weight: Vec<f64>,
    pub bias: Vec<f64>,
    pub eco_a: Vec<f64>,
    pub attrs: Attrs,
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

impl Case {
    /// Random data for arbitrary (possibly contract-violating) shapes. The weight is scaled by
    /// `2 / sqrt(H)` so that the gate half-sums stay O(1): saturated logistics would hide
    /// errors in the projection. `eco_a` is positive (in [0.5, 1.5]) so that the gate stays
    /// away from 0 and a relative tolerance can judge every element.
    pub fn with_shapes(seed: u64, shapes: CaseShapes, num_heads: i64) -> Case {
        let mut rng = DataRng::new(seed);
        let rows = shapes.weight.first().copied().unwrap_or(1).max(1);
        let scale = 2.0 / (rows as f64).sqrt();
        let weight = rng.uniform(numel(&shapes.weight), -1.0, 1.0);
        Case {
            query: rng.uniform(numel(&shapes.query_layer), -1.0, 1.0),
            query_bias: rng.uniform(numel(&shapes.query_bias), -0.5, 0.5),
            rel_pos: rng.uniform(numel(&shapes.rel_pos), -2.0, 2.0),
            weight: weight.iter().map(|w| w * scale).collect(),
            bias: rng.uniform(numel(&shapes.bias), -0.5, 0.5),
            eco_a: rng.uniform(numel(&shapes.eco_a), 0.5, 1.5),
            shapes,
            attrs: Attrs::new(RequiredAttrs { num_heads }),
        }
    }

    /// A valid case of sizes `s`.
    pub fn random(seed: u64, s: Sizes) -> Case {
        Case::with_shapes(seed, CaseShapes::valid(s), s.heads as i64)
    }

    /// The sizes of a valid case (read from the shapes and `num_heads`).
    pub fn sizes(&self) -> Sizes {
        let q = &self.shapes.query_layer;
        let heads = usize::try_from(self.attrs.num_heads).expect("positive num_heads");
        sizes(q[0], q[1], heads, q[2] / heads, self.shapes.weight[1])
    }

    /// The output shape `(B, N, S, S)` of a valid case.
    pub fn output_shape(&self) -> Vec<usize> {
        let s = self.sizes();
        vec![s.batch, s.heads, s.seq, s.seq]
    }

    /// The shapes, for GPU-free planning.
    pub fn shapes(&self) -> Shapes<'_> {
        Shapes {
            query_layer: &self.shapes.query_layer,
            query_bias: &self.shapes.query_bias,
            rel_pos: &self.shapes.rel_pos,
            weight: &self.shapes.weight,
            bias: &self.shapes.bias,
            eco_a: &self.shapes.eco_a,
        }
    }

    /// Plans the case for element type `T` on `caps`.
    pub fn plan<T: Float>(&self, caps: &DeviceCaps) -> Result<Plan, OpError> {
        op::plan(caps, &self.shapes(), &DTypes { t: T::DTYPE }, &self.attrs)
    }

    /// Uploads the data rounded to `T`.
    pub fn upload<T: Float>(&self, ctx: &Context) -> Result<Uploaded<T>, OpError> {
        let up = |shape: &[usize], values: &[f64]| {
            Tensor::from_slice(ctx, shape, &data::to_elem::<T>(values))
        };
        Ok(Uploaded {
            query_layer: up(&self.shapes.query_layer, &self.query)?,
            query_bias: up(&self.shapes.query_bias, &self.query_bias)?,
            rel_pos: up(&self.shapes.rel_pos, &self.rel_pos)?,
            weight: up(&self.shapes.weight, &self.weight)?,
            bias: up(&self.shapes.bias, &self.bias)?,
            eco_a: up(&self.shapes.eco_a, &self.eco_a)?,
        })
    }

    /// Runs the op through the typed `run`; returns the selected variant and the output.
    /// The output must have shape `(B, N, S, S)`.
    pub fn run<T: Float>(&self, ctx: &Context) -> Result<(&'static str, Vec<f64>), OpError> {
        let up = self.upload::<T>(ctx)?;
        let inputs = up.inputs();
        let variant =
            op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &self.attrs)?.variant;
        let out = op::run(ctx, &inputs, &self.attrs)?;
        assert_eq!(
            out.output.shape(),
            self.output_shape().as_slice(),
            "output shape of {:?}",
            self.shapes
        );
        Ok((variant, data::from_elem(&out.output.to_vec(ctx)?)))
    }

    /// The case with every input rounded to `T`: the data the kernel sees (SEMANTICS.md §5).
    pub fn rounded<T: Float>(&self) -> Case {
        Case {
            query: data::round_to::<T>(&self.query),
            query_bias: data::round_to::<T>(&self.query_bias),
            rel_pos: data::round_to::<T>(&self.rel_pos),
            weight: data::round_to::<T>(&self.weight),
            bias: data::round_to::<T>(&self.bias),
            eco_a: data::round_to::<T>(&self.eco_a),
            ..self.clone()
        }
    }

    /// The reference problem on this case's data as it is (round first with
    /// [`Case::rounded`]).
    pub fn problem(&self) -> Problem<'_> {
        Problem {
            sizes: self.sizes(),
            query: &self.query,
            query_bias: &self.query_bias,
            rel_pos: &self.rel_pos,
            weight: &self.weight,
            bias: &self.bias,
            eco_a: &self.eco_a,
        }
    }

    /// The float64 reference on the inputs rounded to `T`.
    pub fn reference<T: Float>(&self) -> Vec<f64> {
        self.rounded::<T>()
            .problem()
            .output()
            .expect("the reference accepts a valid case")
    }

    /// Compares `got` with `want` under `tolerance`; the error names `label` and the worst
    /// element as `(b, n, s, t)`.
    pub fn judge<T: Float>(
        &self,
        label: &str,
        got: &[f64],
        want: &[f64],
        tolerance: Tolerance,
    ) -> Result<(), String> {
        let cmp = compare(got, want, tolerance);
        if cmp.passed() {
            return Ok(());
        }
        Err(format!(
            "{label} [{} {:?}]: {cmp}{}",
            T::DTYPE,
            self.sizes(),
            self.worst_at(&cmp)
        ))
    }

    /// ` at (b, n, s, t)` of the worst element, or nothing.
    pub fn worst_at(&self, cmp: &Comparison) -> String {
        cmp.worst
            .map(|w| {
                let at = data::unravel(w.index, &self.output_shape());
                format!(" at (b, n, s, t) = {at:?}")
            })
            .unwrap_or_default()
    }

    /// Compares `got` with the reference under the SEMANTICS.md §5 tolerance for `T`.
    pub fn compare<T: Float>(&self, label: &str, got: &[f64]) -> Result<(), String> {
        let want = self.reference::<T>();
        self.judge::<T>(label, got, &want, Tolerance::gated_bias(T::DTYPE))
    }

    /// Runs on the GPU, checks the variant and compares with the reference.
    pub fn check<T: Float>(&self, ctx: &Context, label: &str, variant: &str) -> Result<(), String> {
        let (got_variant, got) = self
            .run::<T>(ctx)
            .map_err(|e| format!("{label} [{} {:?}]: run failed: {e}", T::DTYPE, self.shapes))?;
        if got_variant != variant {
            return Err(format!(
                "{label} [{} {:?}]: selected variant `{got_variant}`, expected `{variant}`",
                T::DTYPE,
                self.sizes()
            ));
        }
        self.compare::<T>(label, &got)
    }

    /// [`Case::compare`] row by row, without materialising the reference or a rounded copy
    /// of `rel_pos`: for full-length problems (36M outputs), where those copies would cost
    /// seconds in the unoptimised test build. Fails at the first row out of tolerance.
    pub fn compare_by_rows<T: Float>(&self, label: &str, got: &[f64]) -> Result<(), String> {
        let s = self.sizes();
        if got.len() != s.output_len() {
            return Err(format!(
                "{label} [{}]: {} outputs, want {}",
                T::DTYPE,
                got.len(),
                s.output_len()
            ));
        }
        let (query, query_bias, weight, bias, eco_a) = (
            data::round_to::<T>(&self.query),
            data::round_to::<T>(&self.query_bias),
            data::round_to::<T>(&self.weight),
            data::round_to::<T>(&self.bias),
            data::round_to::<T>(&self.eco_a),
        );
        // `gate` does not read rel_pos; the row loop below rounds it element by element.
        let problem = Problem {
            sizes: s,
            query: &query,
            query_bias: &query_bias,
            rel_pos: &self.rel_pos,
            weight: &weight,
            bias: &bias,
            eco_a: &eco_a,
        };
        let tolerance = Tolerance::gated_bias(T::DTYPE);
        for b in 0..s.batch {
            for n in 0..s.heads {
                for i in 0..s.seq {
                    let g = problem.gate(b, n, i);
                    let rel = &self.rel_pos[(n * s.seq + i) * s.seq..][..s.seq];
                    let start = ((b * s.heads + n) * s.seq + i) * s.seq;
                    let row = &got[start..start + s.seq];
                    // A plain loop first (this is the hot part in an unoptimised build);
                    // `compare` only to describe a failing row.
                    let ok = row.iter().zip(rel).all(|(&y, &r)| {
                        let w = g * T::from_f64(r).to_f64();
                        (y - w).abs() <= tolerance.budget(w)
                    });
                    if !ok {
                        let want: Vec<f64> =
                            rel.iter().map(|&r| g * T::from_f64(r).to_f64()).collect();
                        let cmp = compare(row, &want, tolerance);
                        return Err(format!(
                            "{label} [{} {s:?}]: row (b, n, s) = ({b}, {n}, {i}): {cmp}",
                            T::DTYPE
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// [`Case::check`] with the variant the card's rule expects on `ctx`.
    pub fn check_expected<T: Float>(&self, ctx: &Context, label: &str) -> Result<(), String> {
        let variant = expected_variant(ctx.caps(), self.sizes());
        self.check::<T>(ctx, label, variant)
    }
}

/// A case's tensors on the GPU.
pub struct Uploaded<T: Float> {
    pub query_layer: Tensor<T>,
    pub query_bias: Tensor<T>,
    pub rel_pos: Tensor<T>,
    pub weight: Tensor<T>,
    pub bias: Tensor<T>,
    pub eco_a: Tensor<T>,
}

impl<T: Float> Uploaded<T> {
    /// The typed inputs of the op.
    pub fn inputs(&self) -> Inputs<'_, T> {
        Inputs {
            query_layer: &self.query_layer,
            query_bias: &self.query_bias,
            rel_pos: &self.rel_pos,
            weight: &self.weight,
            bias: &self.bias,
            eco_a: &self.eco_a,
        }
    }
}

/// Asserts `result` is [`OpError::NoVariant`] and that every variant's rejection names
/// `fragment` in its failing condition (each variant's first `when` clause is `contract`, so
/// a contract violation must reject all three for the same reason); returns the condition
/// of the `row` variant, the one every device could otherwise select.
pub fn expect_rejection<T>(result: Result<T, OpError>, fragment: &str) -> String {
    let err = match result {
        Ok(_) => panic!("expected a rejection naming `{fragment}`, but the op was accepted"),
        Err(e) => e,
    };
    let OpError::NoVariant { rejections, .. } = &err else {
        panic!("expected OpError::NoVariant naming `{fragment}`, got: {err:?}");
    };
    let variants: Vec<_> = rejections.iter().map(|r| r.variant).collect();
    assert_eq!(variants, ALL_VARIANTS, "rejections: {err}");
    for r in rejections {
        assert!(
            r.condition.contains(fragment) && r.error.is_none(),
            "variant `{}` was rejected by `{}` ({:?}), expected a false condition naming \
             `{fragment}`; full error:\n{err}",
            r.variant,
            r.condition,
            r.error
        );
    }
    rejections[2].condition.clone()
}

/// Fails with every message at once, so one run shows all failing combinations.
pub fn assert_all(failures: Vec<String>) {
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

// ---- SEMANTICS.md §3.4 worked example G1 --------------------------------------------------------

/// G1 exactly as printed: B = 2, S = 2, N = 2, H = 2, D = 4.
pub fn g1() -> Case {
    Case {
        shapes: CaseShapes::valid(sizes(2, 2, 2, 2, 4)),
        query: G1.query.to_vec(),
        query_bias: G1.query_bias.to_vec(),
        rel_pos: G1.rel_pos.to_vec(),
        weight: G1.weight.to_vec(),
        bias: G1.bias.to_vec(),
        eco_a: G1.eco_a.to_vec(),
        attrs: Attrs::new(RequiredAttrs { num_heads: 2 }),
    }
}

/// G1 with the head padded to H = 16 (so `H >= 4 D` and the head-parallel variants run):
/// the padded query elements are random, their weight rows zero, so the projection, the
/// gates and the output are exactly those of G1.
pub fn g1_padded() -> Case {
    const H: usize = 16;
    let mut rng = DataRng::new(80);
    let g1 = g1();
    let pad = |head: &[f64], rng: &mut DataRng| {
        let mut v = head.to_vec();
        v.extend(rng.uniform(H - head.len(), -1.0, 1.0));
        v
    };
    let query = g1.query.chunks(2).flat_map(|h| pad(h, &mut rng)).collect();
    let query_bias = g1
        .query_bias
        .chunks(2)
        .flat_map(|h| pad(h, &mut rng))
        .collect();
    let mut weight = g1.weight.clone();
    weight.resize(H * 4, 0.0);
    Case {
        shapes: CaseShapes::valid(sizes(2, 2, 2, H, 4)),
        query,
        query_bias,
        weight,
        attrs: Attrs::new(RequiredAttrs { num_heads: 2 }),
        ..g1
    }
}
