//! Helpers of the BiasSoftmax GPU tests: one shared context per test binary, extra contexts
//! with a feature switched off, and a BiasSoftmax case (shapes, seeded data, attributes) that
//! can be planned without a GPU, run on one, and checked against the float64 reference.

// A panic is the failure report of a test.
#![allow(clippy::unwrap_used)]

use std::sync::OnceLock;

use examples::data::{self, DataRng, Tolerance, compare};
use examples::reference::bias_softmax::bias_softmax as reference;
use kernel_runtime::{Context, ContextOptions, DeviceCaps, Float, OpError, Plan, Tensor};
use kernels::bias_softmax::{self as op, Attrs, DTypes, Inputs, Shapes};

/// The context every test of the binary shares (creating a lavapipe device is slow).
///
/// Copied from `common/mod.rs`, which this binary does not compile: panics with an
/// explanation when no adapter exists, because these tests need a real one.
pub fn ctx() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| match Context::new() {
        Ok(ctx) => ctx,
        Err(e) => panic!(
            "the GPU conformance tests need a WebGPU adapter and found none: {e}. \
             Install Mesa lavapipe (Debian/Ubuntu: mesa-vulkan-drivers) for a software \
             Vulkan device, or name an adapter with KERNELS_ADAPTER."
        ),
    })
}

/// A second device on the same adapter without the WebGPU feature `feature`, to exercise the
/// fallback a device lacking it would get.
pub fn context_without(feature: &'static str) -> Context {
    let opts = ContextOptions {
        disable_features: vec![feature],
        ..ContextOptions::default()
    };
    let ctx = Context::with_options(&opts).expect("a second device on the same adapter");
    assert!(
        !ctx.caps().has_feature(feature),
        "`{feature}` was disabled but the device still has it"
    );
    ctx
}

/// Attributes with `axis` and the broadcast mode set.
pub fn attrs(axis: i64, inner: bool) -> Attrs {
    let mut a = Attrs::new(inner);
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

    /// The float64 flat-row reference (spec B1–B6) on the inputs rounded to `T` (spec §5).
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

    /// Compares `got` with `want` at the spec §5 tolerance of `T`; the error names the case
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
