//! Helpers of the BiasSoftmax GPU tests: one shared context per test binary, extra contexts
//! with a feature switched off, and a BiasSoftmax case (shapes, seeded data, attributes) that
//! can be planned without a GPU, run on one, and checked against the float64 reference; also
//! the variant ids, a shape per variant, masked and padded cases, and an independent
//! numpy-style Add + Softmax for comparison.

// Each test binary compiles this module on its own and may not use every helper; a panic
// is the failure report of a test.
#![allow(dead_code, clippy::unwrap_used)]

use kernel_runtime::{Context, DType, DeviceCaps, Float, OpError, Plan, Tensor};
use kernels::bias_softmax::{self as op, Attrs, DTypes, Inputs, RequiredAttrs, Shapes};
use kernels_tools::data::{self, DataRng, Tolerance, compare};
use kernels_tools::reference::bias_softmax::bias_softmax as reference;

/// Variant ids.
pub const ADAPTIVE: &str = "adaptive_row";
pub const PACKED: &str = "packed_rows";
pub const LONGROW: &str = "longrow_split";
pub const ALL_VARIANTS: [&str; 3] = [LONGROW, PACKED, ADAPTIVE];

/// The context every test of the binary shares (creating a lavapipe device is slow).
pub fn ctx() -> &'static Context {
    test_support::shared()
}

/// A second device on the same adapter without the WebGPU feature `feature`, to exercise the
/// fallback a device lacking it would get.
/// adaptive_row's workgroup count: one subgroup per row, `256 / subgroup size` rows per
/// workgroup, where the adapter has a single subgroup size and the row fits its registers
/// (the hints' `rowPerSubgroup`); one workgroup per row otherwise.
pub fn adaptive_workgroups(caps: &DeviceCaps, rows: u64, cols: u64) -> u64 {
    let size = u64::from(caps.subgroup_min_size);
    let fixed = caps.subgroups
        && size >= 4
        && caps.subgroup_min_size == caps.subgroup_max_size
        && size <= 256;
    if fixed && cols <= size * 32 {
        rows.div_ceil(256 / size)
    } else {
        rows
    }
}

pub fn context_without(feature: &'static str) -> Context {
    test_support::context_without(&[feature])
}

/// Attributes with `axis` and the broadcast mode set.
pub fn attrs(axis: i64, inner: bool) -> Attrs {
    let mut a = Attrs::new(RequiredAttrs {
        is_inner_broadcast: inner,
    });
    a.axis = axis;
    a
}

/// One BiasSoftmax invocation: shapes, float64 data and attributes.
///
/// Shapes are stored separately from data so contract tests can build inconsistent cases;
/// the data always has as many elements as its shape holds.
#[derive(Debug, Clone)]
pub struct Case {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
    pub bias_shape: Vec<usize>,
    pub bias: Vec<f64>,
    pub attrs: Attrs,
}

impl Case {
    /// Random data in `[-3, 3)` and bias in `[-2, 2)` (never zero) for any shapes.
    pub fn random(
        seed: u64,
        shape: &[usize],
        bias_shape: &[usize],
        axis: i64,
        inner: bool,
    ) -> Case {
        let mut rng = DataRng::new(seed);
        Case {
            shape: shape.to_vec(),
            data: rng.uniform(shape.iter().product(), -3.0, 3.0),
            bias_shape: bias_shape.to_vec(),
            bias: rng.uniform(bias_shape.iter().product(), -2.0, 2.0),
            attrs: attrs(axis, inner),
        }
    }

    /// Long rows of random logits give probabilities near 1/C, far below the f16 tolerance
    /// of 2e-3 where any output would pass. 16 large logits per bias row, at columns that
    /// differ between bias rows, take most of the mass, so a wrong bias row or row sum
    /// shows at the f16 tolerance too. Rows shorter than 1024 are left as they are.
    pub fn with_peaks(mut self) -> Case {
        let cols = self.shape.iter().product::<usize>() / self.rows().max(1);
        if cols < 1024 {
            return self;
        }
        for q in 0..self.bias.len() / cols.max(1) {
            for p in 0..16 {
                let c = (q * 7919 + p * 4099 + 13) % cols;
                self.bias[q * cols + c] = 12.0 + p as f64 / 8.0;
            }
        }
        self
    }

    /// Data rows `Rw` (product of the dims before the normalised axis).
    pub fn rows(&self) -> usize {
        let rank = self.shape.len() as i64;
        let axis = if self.attrs.axis < 0 {
            self.attrs.axis + rank
        } else {
            self.attrs.axis
        };
        self.shape[..axis as usize].iter().product()
    }

    /// The same data and bias with the other broadcast mode.
    pub fn with_inner(&self, inner: bool) -> Case {
        let mut c = self.clone();
        c.attrs.is_inner_broadcast = inner;
        c
    }

    /// The shapes, for GPU-free planning.
    pub fn shapes(&self) -> Shapes<'_> {
        Shapes {
            data: &self.shape,
            bias: &self.bias_shape,
        }
    }

    /// Plans the case for element type `T` on `caps`.
    pub fn plan<T: Float>(&self, caps: &DeviceCaps) -> Result<Plan, OpError> {
        op::plan(caps, &self.shapes(), &DTypes { t: T::DTYPE }, &self.attrs)
    }

    /// Uploads data and bias rounded to `T`.
    pub fn upload<T: Float>(&self, ctx: &Context) -> Result<Uploaded<T>, OpError> {
        Ok(Uploaded {
            data: Tensor::from_slice(ctx, &self.shape, &data::to_elem::<T>(&self.data))?,
            bias: Tensor::from_slice(ctx, &self.bias_shape, &data::to_elem::<T>(&self.bias))?,
        })
    }

    /// Runs the op through the typed `run`; returns the selected variant and the output.
    pub fn run<T: Float>(&self, ctx: &Context) -> Result<(&'static str, Vec<f64>), OpError> {
        let up = self.upload::<T>(ctx)?;
        let inputs = up.inputs();
        let variant = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &self.attrs)?;
        let out = op::run(ctx, &inputs, &self.attrs)?;
        assert_eq!(out.output.shape(), self.shape.as_slice(), "output shape");
        Ok((variant.variant, data::from_elem(&out.output.to_vec(ctx)?)))
    }

    /// The float64 flat-row reference (SEMANTICS.md B1–B6) on the inputs rounded to `T`
    /// (SEMANTICS.md §5).
    pub fn reference<T: Float>(&self) -> Vec<f64> {
        // The reference divides by its 0 bias rows when rows have length 0 (e.g. data (3, 0));
        // an empty tensor has nothing to compare anyway.
        if self.data.is_empty() {
            return Vec::new();
        }
        reference(
            &data::round_to::<T>(&self.data),
            &self.shape,
            &data::round_to::<T>(&self.bias),
            self.attrs.axis,
            self.attrs.is_inner_broadcast,
        )
        .expect("the reference accepts a valid case")
    }

    /// A readable name of the case for failure messages.
    pub fn describe<T: Float>(&self, label: &str) -> String {
        format!(
            "{label} [{} data {:?}, bias {:?}, axis {}, inner {}]",
            T::DTYPE,
            self.shape,
            self.bias_shape,
            self.attrs.axis,
            self.attrs.is_inner_broadcast
        )
    }

    /// Compares `got` with `want` at the SEMANTICS.md §5 tolerance of `T`; the error names the case
    /// and the worst element with its coordinates.
    pub fn compare_with<T: Float>(
        &self,
        label: &str,
        got: &[f64],
        want: &[f64],
    ) -> Result<(), String> {
        let cmp = compare(got, want, Tolerance::bias_softmax(T::DTYPE));
        if cmp.passed() {
            return Ok(());
        }
        let at = cmp
            .worst
            .map(|w| format!(" at {:?}", data::unravel(w.index, &self.shape)))
            .unwrap_or_default();
        Err(format!("{}: {cmp}{at}", self.describe::<T>(label)))
    }

    /// Runs on the GPU, checks the variant and compares with the reference; returns the
    /// output for further checks.
    pub fn check<T: Float>(
        &self,
        ctx: &Context,
        label: &str,
        variant: &str,
    ) -> Result<Vec<f64>, String> {
        let (got_variant, got) = self
            .run::<T>(ctx)
            .map_err(|e| format!("{}: run failed: {e}", self.describe::<T>(label)))?;
        if got_variant != variant {
            return Err(format!(
                "{}: selected variant `{got_variant}`, expected `{variant}`",
                self.describe::<T>(label)
            ));
        }
        self.compare_with::<T>(label, &got, &self.reference::<T>())?;
        Ok(got)
    }
}

/// A case's tensors on the GPU.
pub struct Uploaded<T: Float> {
    pub data: Tensor<T>,
    pub bias: Tensor<T>,
}

impl<T: Float> Uploaded<T> {
    /// The typed inputs of the op.
    pub fn inputs(&self) -> Inputs<'_, T> {
        Inputs {
            data: &self.data,
            bias: &self.bias,
        }
    }
}

/// Asserts `result` is [`OpError::NoVariant`] and that the rejection of each of `variants`
/// names `fragment` in its failing condition; returns the conditions.
pub fn expect_rejection<T>(
    result: Result<T, OpError>,
    variants: &[&str],
    fragment: &str,
) -> Vec<String> {
    let err = match result {
        Ok(_) => panic!("expected a rejection naming `{fragment}`, but the op was accepted"),
        Err(e) => e,
    };
    let OpError::NoVariant { rejections, .. } = &err else {
        panic!("expected OpError::NoVariant naming `{fragment}`, got: {err:?}");
    };
    let mut conditions = Vec::new();
    for &variant in variants {
        let rejection = rejections
            .iter()
            .find(|r| r.variant == variant)
            .unwrap_or_else(|| panic!("no rejection for variant `{variant}` in: {err}"));
        assert!(
            rejection.condition.contains(fragment),
            "variant `{variant}` was rejected by `{}`, expected a condition naming `{fragment}`; \
             full error:\n{err}",
            rejection.condition
        );
        conditions.push(rejection.condition.clone());
    }
    conditions
}

/// Fails with every message at once, so one run shows all failing combinations.
pub fn assert_all(failures: Vec<String>) {
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Every row of `got` (rows of `cols` elements) sums to 1 within `tol`; NaN rows are skipped
/// (fully masked rows are checked separately).
pub fn rows_sum_to_one(label: &str, got: &[f64], cols: usize, tol: f64) -> Vec<String> {
    got.chunks(cols)
        .enumerate()
        .filter(|(_, row)| !row.iter().any(|v| v.is_nan()))
        .filter_map(|(r, row)| {
            let sum: f64 = row.iter().sum();
            ((sum - 1.0).abs() > tol).then(|| format!("{label}: row {r} sums to {sum}"))
        })
        .collect()
}

/// `softmax(scores + mask)` over the last axis with numpy broadcasting of `mask` against
/// `scores` (shapes aligned on the right, mask dims of size 1 repeated). Written
/// independently of the flat-row reference, so agreement shows the row rule of SEMANTICS.md B4
/// reproduces what a model's `Add` + `Softmax` computes for the attention mask shapes.
pub fn add_then_softmax(
    scores: &[f64],
    shape: &[usize],
    mask: &[f64],
    mask_shape: &[usize],
) -> Vec<f64> {
    assert!(
        mask_shape.len() <= shape.len(),
        "mask rank above scores rank"
    );
    let pad = shape.len() - mask_shape.len();
    // Element strides of the mask per scores axis; 0 where the mask broadcasts.
    let mut strides = vec![0; shape.len()];
    let mut stride = 1;
    for (i, &d) in mask_shape.iter().enumerate().rev() {
        let axis = pad + i;
        assert!(
            d == 1 || d == shape[axis],
            "mask {mask_shape:?} does not broadcast to {shape:?}"
        );
        strides[axis] = if d == 1 { 0 } else { stride };
        stride *= d;
    }
    let z: Vec<f64> = (0..scores.len())
        .map(|flat| {
            let index = data::unravel(flat, shape);
            let m: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
            scores[flat] + mask[m]
        })
        .collect();
    let cols = *shape.last().expect("rank >= 1");
    z.chunks(cols)
        .flat_map(|row| {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = row.iter().map(|v| (v - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / sum)
        })
        .collect()
}

/// Wherever the reference is exactly 0 (an `exp` that underflows, or a `-inf` logit), the
/// kernel must write exactly 0 too: masked keys may not leak probability.
pub fn exact_zeros(label: &str, got: &[f64], want: &[f64]) -> Vec<String> {
    let leaks: Vec<usize> = (0..want.len().min(got.len()))
        .filter(|&i| want[i] == 0.0 && got[i] != 0.0)
        .collect();
    match leaks.first() {
        None => Vec::new(),
        Some(&i) => vec![format!(
            "{label}: {} masked elements are not exactly 0, first [{i}] = {}",
            leaks.len(),
            got[i]
        )],
    }
}

/// A shape that selects `variant`, with bias layouts for inner and outer broadcast that map
/// rows differently (so a kernel using the wrong rule fails).
pub struct VariantShape {
    pub variant: &'static str,
    pub shape: Vec<usize>,
    pub axis: i64,
    pub inner_bias: Vec<usize>,
    pub outer_bias: Vec<usize>,
}

pub fn variant_shapes() -> [VariantShape; 4] {
    let v =
        |variant, shape: &[usize], axis, inner_bias: &[usize], outer_bias: &[usize]| VariantShape {
            variant,
            shape: shape.to_vec(),
            axis,
            inner_bias: inner_bias.to_vec(),
            outer_bias: outer_bias.to_vec(),
        };
    [
        // Rw = 12, C = 300 > the 256 lanes, so lanes loop over the row.
        v(ADAPTIVE, &[3, 4, 300], -1, &[3, 1, 300], &[4, 300]),
        // Rw = 128, C = 7.
        v(PACKED, &[4, 32, 7], 2, &[4, 1, 7], &[32, 7]),
        // Rw = 128, C = 4: rows of one vec4 word.
        v(PACKED, &[4, 32, 4], -1, &[4, 1, 4], &[32, 4]),
        // Rw = 4, C = 70000 = 34 full blocks of 2048 and a partial one of 368.
        v(LONGROW, &[4, 70_000], 1, &[2, 70_000], &[2, 70_000]),
    ]
}

/// Scores `(B,N,S,S)` and a padding mask `(B,1,1,S)`: batch `b` has `valid[b]` keys, the rest
/// masked with -10000; valid keys get small random biases.
pub fn padding_case(seed: u64, b: usize, n: usize, s: usize, valid: &[usize]) -> Case {
    let mut rng = DataRng::new(seed);
    let scores = rng.uniform(b * n * s * s, -4.0, 4.0);
    let mut mask = rng.uniform(b * s, -1.0, 1.0);
    for (batch, &len) in valid.iter().enumerate() {
        mask[batch * s + len..(batch + 1) * s].fill(-10000.0);
    }
    Case {
        shape: vec![b, n, s, s],
        data: scores,
        bias_shape: vec![b, 1, 1, s],
        bias: mask,
        attrs: attrs(-1, true),
    }
}

/// Runs `case` on the GPU and compares with numpy-style Add + Softmax on the rounded inputs.
pub fn check_against_add_softmax<T: Float>(case: &Case, label: &str, variant: &str) -> Vec<String> {
    let (got_variant, got) = case.run::<T>(ctx()).unwrap();
    let want = add_then_softmax(
        &data::round_to::<T>(&case.data),
        &case.shape,
        &data::round_to::<T>(&case.bias),
        &case.bias_shape,
    );
    let mut failures = Vec::new();
    if got_variant != variant {
        failures.push(format!(
            "{}: variant {got_variant}, expected {variant}",
            case.describe::<T>(label)
        ));
    }
    failures.extend(case.compare_with::<T>(label, &got, &want).err());
    failures.extend(exact_zeros(&case.describe::<T>(label), &got, &want));
    failures
}

/// One shape per variant for the masking tests: variant, data, bias (axis -1), mode.
pub fn masking_shapes() -> [(&'static str, Vec<usize>, Vec<usize>, bool); 5] {
    [
        (ADAPTIVE, vec![6, 20], vec![3, 20], true),
        // Rows of 3000 = 750 words: more words than the workgroup keeps in registers.
        (ADAPTIVE, vec![6, 3000], vec![3, 3000], false),
        (PACKED, vec![64, 6], vec![8, 6], false),
        // Rows of two vec4 words.
        (PACKED, vec![64, 8], vec![8, 8], false),
        // Rw = 4 rows of 32 blocks; the masked third of row 0 spans whole blocks.
        (LONGROW, vec![4, 65_536], vec![2, 65_536], true),
    ]
}

/// Masks with `value` in data and bias: the first third of row 0 in data; the second half
/// of the bias row `q` of the last row (so every row sharing it is half masked). With
/// `fully`, row 1 is masked entirely in data and the last row's first half in data too, so
/// the last row is masked as a whole only through the sum of data and bias. Without it,
/// row 1 keeps its last key, which must then get probability exactly 1.
pub fn masked_case(
    seed: u64,
    shape: &[usize],
    bias_shape: &[usize],
    inner: bool,
    value: f64,
    fully: bool,
) -> Case {
    let mut case = Case::random(seed, shape, bias_shape, -1, inner);
    let cols = *shape.last().unwrap();
    let rows = case.data.len() / cols;
    let k = case.bias.len() / cols;
    let bias_row = |r: usize| if inner { r / (rows / k) } else { r % k };
    let (last, q) = (rows - 1, bias_row(rows - 1));
    assert_ne!(bias_row(1), q, "row 1 must not share the masked bias row");
    case.data[..cols / 3].fill(value);
    case.bias[q * cols + cols / 2..(q + 1) * cols].fill(value);
    if fully {
        case.data[cols..2 * cols].fill(value);
        case.data[last * cols..last * cols + cols / 2].fill(value);
    } else {
        case.data[cols..2 * cols - 1].fill(value);
    }
    case
}

/// The row-sum tolerance: f16 outputs are rounded one by one, tiny ones as subnormals.
pub fn sum_tolerance<T: Float>() -> f64 {
    if T::DTYPE == DType::F16 { 1e-2 } else { 1e-5 }
}
