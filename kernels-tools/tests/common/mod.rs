//! Helpers shared by the GPU integration tests: one context per test binary, and an
//! MRotaryEmbedding case (shapes, seeded data, attributes) that can run on the GPU, be
//! planned without one, and be checked against the float64 reference.

// Each test binary compiles this module on its own and may not use every helper; a panic
// is the failure report of a test.
#![allow(dead_code, clippy::unwrap_used)]

use kernel_runtime::{Context, DeviceCaps, Float, IndexTensor, OpError, Plan, Tensor};
use kernels::mrotary_embedding::{self as op, Attrs, DTypes, Inputs, RequiredAttrs, Shapes};
use kernels_tools::data::{self, DataRng, Tolerance, compare};
use kernels_tools::reference::mrotary_embedding::{Dims, mrotary_embedding as reference};

/// The context every test of the binary shares (creating a lavapipe device is slow).
pub fn ctx() -> &'static Context {
    test_support::shared()
}

/// One MRotaryEmbedding invocation: shapes, float64 data and attributes.
///
/// Shapes are stored separately from data so contract tests can build inconsistent cases;
/// the data always has as many elements as its shape holds.
#[derive(Debug, Clone)]
pub struct Case {
    pub input_shape: Vec<usize>,
    pub input: Vec<f64>,
    pub pos_shape: Vec<usize>,
    pub positions: Vec<i64>,
    pub cos_shape: Vec<usize>,
    pub cos: Vec<f64>,
    pub sin_shape: Vec<usize>,
    pub sin: Vec<f64>,
    pub attrs: Attrs,
}

impl Case {
    /// Random data for arbitrary (possibly contract-violating) shapes; positions are drawn
    /// in `[0, cos_shape[0])`.
    pub fn with_shapes(
        seed: u64,
        input_shape: &[usize],
        pos_shape: &[usize],
        cos_shape: &[usize],
        sin_shape: &[usize],
        attrs: Attrs,
    ) -> Case {
        let mut rng = DataRng::new(seed);
        let numel = |s: &[usize]| s.iter().product::<usize>();
        let rows = cos_shape.first().copied().unwrap_or(1) as i64;
        Case {
            input_shape: input_shape.to_vec(),
            input: rng.uniform(numel(input_shape), -2.0, 2.0),
            pos_shape: pos_shape.to_vec(),
            positions: rng.indices(numel(pos_shape), rows),
            cos_shape: cos_shape.to_vec(),
            cos: rng.uniform(numel(cos_shape), -1.0, 1.0),
            sin_shape: sin_shape.to_vec(),
            sin: rng.uniform(numel(sin_shape), -1.0, 1.0),
            attrs,
        }
    }

    /// A valid case: `position_ids` `(3, B, S)` and caches `(max_positions, R/2)` derived
    /// from the input shape and attributes as SEMANTICS.md §1.2 does.
    pub fn random(seed: u64, input_shape: &[usize], attrs: Attrs, max_positions: usize) -> Case {
        let dims = Dims::new(input_shape, &attrs).expect("a valid case shape");
        let cache = [max_positions, dims.rotary_dim / 2];
        let pos = [3, dims.batch, dims.seq];
        Case::with_shapes(seed, input_shape, &pos, &cache, &cache, attrs)
    }

    /// Rows of the caches (`M`).
    pub fn max_positions(&self) -> usize {
        self.cos_shape.first().copied().unwrap_or(0)
    }

    /// The shapes, for GPU-free planning.
    pub fn shapes(&self) -> Shapes<'_> {
        Shapes {
            input: &self.input_shape,
            position_ids: &self.pos_shape,
            cos_cache: &self.cos_shape,
            sin_cache: &self.sin_shape,
        }
    }

    /// Plans the case for element type `T` on `caps`.
    pub fn plan<T: Float>(&self, caps: &DeviceCaps) -> Result<Plan, OpError> {
        let dtypes = DTypes { t: T::DTYPE };
        op::plan(caps, &self.shapes(), &dtypes, &self.attrs)
    }

    /// Uploads the data rounded to `T` (position ids through the checked narrowing).
    pub fn upload<T: Float>(&self, ctx: &Context) -> Result<Uploaded<T>, OpError> {
        Ok(Uploaded {
            input: Tensor::from_slice(ctx, &self.input_shape, &data::to_elem::<T>(&self.input))?,
            positions: IndexTensor::from_i64(ctx, &self.pos_shape, &self.positions)?,
            cos: Tensor::from_slice(ctx, &self.cos_shape, &data::to_elem::<T>(&self.cos))?,
            sin: Tensor::from_slice(ctx, &self.sin_shape, &data::to_elem::<T>(&self.sin))?,
        })
    }

    /// Runs the op through the typed `run`; returns the selected variant and the output.
    pub fn run<T: Float>(&self, ctx: &Context) -> Result<(&'static str, Vec<f64>), OpError> {
        let up = self.upload::<T>(ctx)?;
        let variant = op::plan(
            ctx.caps(),
            &up.inputs().shapes(),
            &up.inputs().dtypes(),
            &self.attrs,
        )?
        .variant;
        let out = op::run(ctx, &up.inputs(), &self.attrs)?;
        assert_eq!(
            out.output.shape(),
            self.input_shape.as_slice(),
            "output shape"
        );
        Ok((variant, data::from_elem(&out.output.to_vec(ctx)?)))
    }

    /// The float64 reference on the inputs rounded to `T` (SEMANTICS.md §5).
    pub fn reference<T: Float>(&self) -> Vec<f64> {
        reference(
            &data::round_to::<T>(&self.input),
            &self.input_shape,
            &self.positions,
            &data::round_to::<T>(&self.cos),
            &data::round_to::<T>(&self.sin),
            self.max_positions(),
            &self.attrs,
        )
        .expect("the reference accepts a valid case")
    }

    /// Compares `got` with the reference for `T`; the error names `label` and the worst
    /// element with its coordinates.
    pub fn compare<T: Float>(&self, label: &str, got: &[f64]) -> Result<(), String> {
        let want = self.reference::<T>();
        let cmp = compare(got, &want, Tolerance::mrope(T::DTYPE));
        if cmp.passed() {
            return Ok(());
        }
        let at = cmp
            .worst
            .map(|w| format!(" at {:?}", data::unravel(w.index, &self.input_shape)))
            .unwrap_or_default();
        Err(format!(
            "{label} [{} {:?}, attrs {:?}]: {cmp}{at}",
            T::DTYPE,
            self.input_shape,
            self.attrs
        ))
    }

    /// Runs on the GPU, checks the variant and compares with the reference.
    pub fn check<T: Float>(&self, ctx: &Context, label: &str, variant: &str) -> Result<(), String> {
        let (got_variant, got) = self
            .run::<T>(ctx)
            .map_err(|e| format!("{label} [{}]: run failed: {e}", T::DTYPE))?;
        if got_variant != variant {
            return Err(format!(
                "{label} [{}]: selected variant `{got_variant}`, expected `{variant}`",
                T::DTYPE
            ));
        }
        self.compare::<T>(label, &got)
    }
}

/// A case's tensors on the GPU.
pub struct Uploaded<T: Float> {
    pub input: Tensor<T>,
    pub positions: IndexTensor,
    pub cos: Tensor<T>,
    pub sin: Tensor<T>,
}

impl<T: Float> Uploaded<T> {
    /// The typed inputs of the op.
    pub fn inputs(&self) -> Inputs<'_, T> {
        Inputs {
            input: &self.input,
            position_ids: &self.positions,
            cos_cache: &self.cos,
            sin_cache: &self.sin,
        }
    }
}

/// Asserts `result` is [`OpError::NoVariant`] and that the rejection of `variant` names
/// `fragment` in its failing condition; returns that condition.
pub fn expect_rejection<T>(result: Result<T, OpError>, variant: &str, fragment: &str) -> String {
    let err = match result {
        Ok(_) => panic!("expected a rejection naming `{fragment}`, but the op was accepted"),
        Err(e) => e,
    };
    let OpError::NoVariant { rejections, .. } = &err else {
        panic!("expected OpError::NoVariant naming `{fragment}`, got: {err:?}");
    };
    let rejection = rejections
        .iter()
        .find(|r| r.variant == variant)
        .unwrap_or_else(|| panic!("no rejection for variant `{variant}` in: {err}"));
    assert!(
        rejection.condition.contains(fragment),
        "variant `{variant}` was rejected by `{}`, expected a condition naming `{fragment}`; full error:\n{err}",
        rejection.condition
    );
    rejection.condition.clone()
}

/// Attributes with `num_heads`, pairing and layout set; everything else default.
pub fn attrs(sections: &[i64], num_heads: i64, interleaved: bool, layout: bool) -> Attrs {
    let mut a = Attrs::new(RequiredAttrs {
        mrope_section: sections.to_vec(),
    });
    a.num_heads = num_heads;
    a.interleaved = interleaved;
    a.mrope_layout = layout;
    a
}

/// Fails with every message at once, so one run shows all failing combinations.
pub fn assert_all(failures: Vec<String>) {
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// SEMANTICS.md §1.5 worked examples M1–M3: name, case, expected variant, expected output.
pub fn worked_examples() -> [(&'static str, Case, &'static str, Vec<f64>); 3] {
    // Common data: cos/sin (M = 4, half = 4), x for s = 0, 1, positions (3, 1, 2).
    let cos = [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.0, -0.1, -0.2, -0.3,
    ];
    let sin = [
        0.0, 0.0, 0.0, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 0.9, 0.8, 0.7,
    ];
    let x = [
        1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0,
    ];
    let case = |shape: &[usize], attrs: Attrs| Case {
        input_shape: shape.to_vec(),
        input: x.to_vec(),
        pos_shape: vec![3, 1, 2],
        positions: vec![1, 2, 3, 0, 2, 3],
        cos_shape: vec![4, 4],
        cos: cos.to_vec(),
        sin_shape: vec![4, 4],
        sin: sin.to_vec(),
        attrs,
    };
    let m1 = case(&[1, 2, 8], attrs(&[2, 1, 1], 1, false, false));
    let m1_want = vec![
        0.4, 0.4, -6.2, -5.6, 4.6, 5.2, 1.0, 4.8, 2.0, 1.0, 6.0, -2.2, 6.0, 5.4, 2.0, 3.2,
    ];
    let mut m2_attrs = attrs(&[2, 1, 1], 0, true, true);
    m2_attrs.scale = 0.5;
    let m2 = case(&[1, 1, 2, 8], m2_attrs);
    let m2_want = vec![
        0.35, 0.95, -1.95, 1.15, -1.35, 2.65, 0.5, 3.8, 0.25, 3.75, 3.0, 2.5, -1.6, 1.3, -0.2, 0.9,
    ];
    // M3: odd head, R = 4, caches = the first two columns of the tables.
    let mut m3_attrs = attrs(&[1, 1, 0], 1, false, false);
    m3_attrs.rotary_embedding_dim = 4;
    let two_columns =
        |t: &[f64]| -> Vec<f64> { t.chunks(4).flat_map(|r| r[..2].to_vec()).collect() };
    let m3 = Case {
        input_shape: vec![1, 1, 1, 5],
        input: vec![5.0, 6.0, 7.0, 8.0, 9.0],
        pos_shape: vec![3, 1, 1],
        positions: vec![2, 1, 0],
        cos_shape: vec![4, 2],
        cos: two_columns(&cos),
        sin_shape: vec![4, 2],
        sin: two_columns(&sin),
        attrs: m3_attrs,
    };
    let m3_want = vec![-1.0, 3.2, 6.0, 7.6, 9.0];
    [
        ("M1", m1, "rank3", m1_want),
        ("M2", m2, "rank4", m2_want),
        ("M3", m3, "rank4", m3_want),
    ]
}

/// Qwen2-VL-like grid: 2 text tokens, a 1 × 2 × 3 image, 3 text tokens (11 tokens).
pub fn vl_positions(batch: usize) -> Vec<i64> {
    let mut streams = [Vec::new(), Vec::new(), Vec::new()];
    for p in 0..2 {
        streams.iter_mut().for_each(|s| s.push(p));
    }
    for row in 0..2 {
        for col in 0..3 {
            streams[0].push(2);
            streams[1].push(2 + row);
            streams[2].push(2 + col);
        }
    }
    for i in 0..3 {
        streams.iter_mut().for_each(|s| s.push(5 + i));
    }
    streams
        .iter()
        .flat_map(|s| std::iter::repeat_n(s.clone(), batch).flatten())
        .collect()
}

/// Runs the op with position ids made on the GPU (an index tensor without host values), so
/// the host check of position ids is skipped and the shader's own bounds guard is what
/// handles positions `>= M`.
pub fn run_with_gpu_positions(case: &Case, positions: Vec<u32>) -> Vec<f64> {
    let ctx = ctx();
    let mut up = case.upload::<f32>(ctx).unwrap();
    let made = Tensor::<u32>::from_slice(ctx, &case.pos_shape, &positions).unwrap();
    up.positions = IndexTensor::from_tensor(made);
    assert_eq!(up.positions.values(), None);
    let out = op::run(ctx, &up.inputs(), &case.attrs).unwrap();
    data::from_elem(&out.output.to_vec(ctx).unwrap())
}

/// A rank-4 `(1, 1, 2, h)` case with caches `(4, half)` and the given attributes.
pub fn rank4(h: usize, half: usize, a: Attrs) -> Case {
    Case::with_shapes(12, &[1, 1, 2, h], &[3, 1, 2], &[4, half], &[4, half], a)
}

/// A rank-3 `(1, 2, hidden)` case with caches `(4, half)`.
pub fn rank3(hidden: usize, half: usize, a: Attrs) -> Case {
    Case::with_shapes(13, &[1, 2, hidden], &[3, 1, 2], &[4, half], &[4, half], a)
}

/// Runs a worked example of SEMANTICS.md §1.5; returns the failures (variant, values).
pub fn worked_example<T: Float>(
    name: &str,
    case: &Case,
    variant: &str,
    want: &[f64],
) -> Vec<String> {
    let (got_variant, got) = case.run::<T>(ctx()).unwrap();
    let mut failures = Vec::new();
    if got_variant != variant {
        failures.push(format!("{name} [{}]: variant {got_variant}", T::DTYPE));
    }
    let cmp = compare(&got, want, Tolerance::mrope(T::DTYPE));
    if !cmp.passed() {
        failures.push(format!("{name} [{}]: {cmp}", T::DTYPE));
    }
    failures
}
