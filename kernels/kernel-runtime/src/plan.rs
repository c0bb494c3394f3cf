//! GPU-free plans: what generated code computes from inputs and attributes, and what a
//! [`crate::Context`] records. Also the dispatch rules that turn a manifest's dispatch form
//! into workgroup counts.

use crate::dtype::DType;
use crate::error::RuntimeError;

/// One pre-rendered, validated WGSL shader of a generated crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernel {
    /// A readable name (op, variant and static values), used in labels and errors.
    pub label: &'static str,
    /// The WGSL text.
    pub source: &'static str,
    /// The compute entry point.
    pub entry_point: &'static str,
    /// Hex content digest of `source`; part of the pipeline cache key, so two kernels with the
    /// same digest share shader modules and pipelines.
    pub digest: &'static str,
    /// `enable` directives a browser needs in front of `source` and naga refuses
    /// (`enable subgroups;`); the runtime prepends them on the web backend only.
    pub web_enables: &'static str,
    /// Per `@group(0) @binding(i)`, the least bytes a buffer bound there must hold (one
    /// element of the runtime-sized array the shader declares); 0, or past the end, where the
    /// generator gives none. The recorder widens a smaller argument range to it, into the
    /// buffer's room, or refuses the call, before wgpu sees the binding.
    pub least_sizes: &'static [u32],
}

/// What one `@group(0) @binding(i)` of a pass is bound to; `i` is the position in
/// [`PlannedPass::bindings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    /// An argument buffer of the op: inputs in manifest order, then outputs.
    Arg(usize),
    /// An intermediate of the plan, by index into [`Plan::intermediates`].
    Intermediate(usize),
    /// The pass's uniform `Params` ([`PlannedPass::params`]).
    Params,
}

/// How many workgroups a pass runs, in the forms the manifests use.
///
/// See [`Dispatch::workgroups`] for the rules the WGSL templates rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dispatch {
    /// `threads` + `workgroupSize`: one invocation per thread, rounded up to whole workgroups.
    Threads {
        /// Invocations needed.
        threads: u64,
        /// Invocations per workgroup (the shader's `@workgroup_size`).
        workgroup_size: u32,
    },
    /// `workgroups`: exactly this many workgroups.
    Workgroups(u64),
    /// `x`/`y`/`z`: a grid of workgroups, never split.
    Grid {
        /// Workgroups along x.
        x: u64,
        /// Workgroups along y.
        y: u64,
        /// Workgroups along z.
        z: u64,
    },
    /// `gridStride` + `workgroupSize`: as many workgroups as useful, at most one dimension's
    /// worth; the shader loops with stride `num_workgroups.x * workgroup_size`.
    GridStride {
        /// Items to cover.
        items: u64,
        /// Invocations per workgroup.
        workgroup_size: u32,
    },
}

impl Dispatch {
    /// The `[x, y, z]` workgroup counts on a device allowing `max_per_dim` per dimension.
    ///
    /// - `Threads`: `n = ceil(threads / workgroup_size)`, then split like `Workgroups(n)`.
    /// - `Workgroups(n)`: `[n, 1, 1]` when `n <= max_per_dim`; otherwise
    ///   `[max_per_dim, ceil(n / max_per_dim), 1]`, which overshoots: the shader linearises
    ///   `wid.x + wid.y * num_workgroups.x` and returns past the end.
    /// - `Grid { x, y, z }`: `[x, y, z]`; each at most `max_per_dim`.
    /// - `GridStride`: `[min(ceil(items / workgroup_size), max_per_dim), 1, 1]`.
    ///
    /// No work gives `[0, 0, 0]`: the pass is skipped (empty tensors dispatch nothing).
    /// Counts that do not fit are [`RuntimeError::TooManyWorkgroups`] labelled `dispatch`;
    /// [`PlannedPass::workgroups`] labels them with the pass id.
    pub fn workgroups(&self, max_per_dim: u32) -> Result<[u32; 3], RuntimeError> {
        self.workgroups_labelled(max_per_dim, "dispatch")
    }

    /// Total workgroups the dispatch runs, overshoot included (0 when skipped).
    pub fn total_workgroups(&self, max_per_dim: u32) -> Result<u64, RuntimeError> {
        let [x, y, z] = self.workgroups(max_per_dim)?;
        Ok(u64::from(x) * u64::from(y) * u64::from(z))
    }

    fn workgroups_labelled(&self, max: u32, label: &str) -> Result<[u32; 3], RuntimeError> {
        let invalid = |reason: &str| RuntimeError::InvalidPlan {
            label: label.to_owned(),
            reason: reason.to_owned(),
        };
        let too_many = |count: u64, limit: u64| RuntimeError::TooManyWorkgroups {
            label: label.to_owned(),
            count,
            limit,
        };
        match *self {
            Dispatch::Threads {
                threads,
                workgroup_size,
            } => {
                if workgroup_size == 0 {
                    return Err(invalid("threads dispatch with a workgroup size of 0"));
                }
                split_linear(threads.div_ceil(u64::from(workgroup_size)), max, too_many)
            }
            Dispatch::Workgroups(n) => split_linear(n, max, too_many),
            Dispatch::Grid { x, y, z } => {
                if x == 0 || y == 0 || z == 0 {
                    return Ok([0; 3]);
                }
                let worst = x.max(y).max(z);
                match (u32::try_from(x), u32::try_from(y), u32::try_from(z)) {
                    (Ok(x), Ok(y), Ok(z)) if x <= max && y <= max && z <= max => Ok([x, y, z]),
                    _ => Err(too_many(worst, u64::from(max))),
                }
            }
            Dispatch::GridStride {
                items,
                workgroup_size,
            } => {
                if workgroup_size == 0 {
                    return Err(invalid("grid-stride dispatch with a workgroup size of 0"));
                }
                let n = items.div_ceil(u64::from(workgroup_size));
                if n == 0 {
                    return Ok([0; 3]);
                }
                if max == 0 {
                    return Err(too_many(n, 0));
                }
                // A grid-stride loop covers any count, so clamping never loses work.
                let x = n.min(u64::from(max)) as u32;
                Ok([x, 1, 1])
            }
        }
    }
}

/// Splits `n` workgroups into `[x, y, 1]` with `x * y >= n`, both within `max`.
fn split_linear(
    n: u64,
    max: u32,
    too_many: impl Fn(u64, u64) -> RuntimeError,
) -> Result<[u32; 3], RuntimeError> {
    if n == 0 {
        return Ok([0; 3]);
    }
    let max64 = u64::from(max);
    if max == 0 {
        return Err(too_many(n, 0));
    }
    if n <= max64 {
        return Ok([n as u32, 1, 1]);
    }
    let y = n.div_ceil(max64);
    if y > max64 {
        return Err(too_many(n, max64 * max64));
    }
    Ok([max, y as u32, 1])
}

/// One compute dispatch of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedPass {
    /// The pass id from the manifest; used as the label of errors.
    pub id: &'static str,
    /// The shader it runs.
    pub kernel: &'static Kernel,
    /// Values of the shader's `override` constants (dynamic template inputs). Part of the
    /// pipeline cache key.
    pub overrides: Vec<(&'static str, f64)>,
    /// What each `@group(0) @binding(i)` is bound to; `i` is the position.
    pub bindings: Vec<Binding>,
    /// The bytes of the uniform `Params` struct when a [`Binding::Params`] is present.
    pub params: Vec<u8>,
    /// How many workgroups to run.
    pub dispatch: Dispatch,
}

impl PlannedPass {
    /// [`Dispatch::workgroups`] with errors labelled by this pass's id.
    pub fn workgroups(&self, max_per_dim: u32) -> Result<[u32; 3], RuntimeError> {
        self.dispatch.workgroups_labelled(max_per_dim, self.id)
    }
}

/// A buffer a plan needs between its passes, allocated by the runtime and zeroed before use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntermediateSpec {
    /// The intermediate's id from the manifest.
    pub id: &'static str,
    /// Its element type.
    pub dtype: DType,
    /// Its length in elements.
    pub len: u64,
}

impl IntermediateSpec {
    /// Bytes the intermediate occupies on the GPU ([`DType::storage_bytes`] per element: one
    /// 32-bit word for `I64`, `I8` and `U8`).
    pub fn byte_len(&self) -> Option<u64> {
        self.len.checked_mul(self.dtype.storage_bytes() as u64)
    }
}

/// The shape and dtype of one output, which the caller (or generated code) allocates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OutputSpec {
    /// The output's role from the manifest.
    pub role: &'static str,
    /// Its element type.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<usize>,
}

/// Everything needed to run one op on one set of shapes, decided without a GPU.
///
/// The default is an empty plan, to plan into (`plan_into` of a generated op module reuses a
/// plan's storage).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// The op name.
    pub op: &'static str,
    /// The variant chosen.
    pub variant: &'static str,
    /// The dispatches, in order.
    pub passes: Vec<PlannedPass>,
    /// Buffers used between passes.
    pub intermediates: Vec<IntermediateSpec>,
    /// The outputs, in manifest order (they follow the inputs in the argument list).
    pub outputs: Vec<OutputSpec>,
}

impl Plan {
    /// `op/variant`, the label of the plan's compute pass.
    pub fn label(&self) -> String {
        format!("{}/{}", self.op, self.variant)
    }

    /// The passes that dispatch work on a device with this per-dimension limit, in order, with
    /// their workgroup counts; passes with no workgroups are skipped (empty tensors).
    pub fn active_passes(
        &self,
        max_per_dim: u32,
    ) -> Result<Vec<(&PlannedPass, [u32; 3])>, RuntimeError> {
        let mut active = Vec::with_capacity(self.passes.len());
        for pass in &self.passes {
            let workgroups = pass.workgroups(max_per_dim)?;
            if workgroups.iter().all(|&n| n != 0) {
                active.push((pass, workgroups));
            }
        }
        Ok(active)
    }

    /// Whether no pass dispatches anything on a device with this per-dimension limit (for
    /// example because a tensor is empty). Dispatch errors count as work: recording reports
    /// them.
    pub fn is_empty(&self, max_per_dim: u32) -> bool {
        self.passes.iter().all(|p| {
            matches!(
                p.workgroups(max_per_dim),
                Ok([0, _, _] | [_, 0, _] | [_, _, 0])
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads(threads: u64, workgroup_size: u32) -> Dispatch {
        Dispatch::Threads {
            threads,
            workgroup_size,
        }
    }

    #[test]
    fn threads_round_up_and_split() {
        assert_eq!(threads(1, 64).workgroups(65535).unwrap(), [1, 1, 1]);
        assert_eq!(threads(64, 64).workgroups(65535).unwrap(), [1, 1, 1]);
        assert_eq!(threads(65, 64).workgroups(65535).unwrap(), [2, 1, 1]);
        assert_eq!(threads(1000, 64).workgroups(16).unwrap(), [16, 1, 1]);
        // 16 workgroups on a limit of 5: 5 x 4 = 20, the shader guards the 4 extra.
        assert_eq!(threads(1000, 64).workgroups(5).unwrap(), [5, 4, 1]);
        assert_eq!(threads(0, 64).workgroups(5).unwrap(), [0, 0, 0]);
        let big = 65535u64 * 65535 * 256;
        assert_eq!(
            threads(big, 256).workgroups(65535).unwrap(),
            [65535, 65535, 1]
        );
    }

    #[test]
    fn workgroups_split_and_limit() {
        assert_eq!(Dispatch::Workgroups(7).workgroups(7).unwrap(), [7, 1, 1]);
        assert_eq!(Dispatch::Workgroups(8).workgroups(7).unwrap(), [7, 2, 1]);
        assert_eq!(Dispatch::Workgroups(49).workgroups(7).unwrap(), [7, 7, 1]);
        assert_eq!(
            Dispatch::Workgroups(50).workgroups(7),
            Err(RuntimeError::TooManyWorkgroups {
                label: "dispatch".into(),
                count: 50,
                limit: 49
            })
        );
        assert_eq!(Dispatch::Workgroups(0).workgroups(7).unwrap(), [0, 0, 0]);
        assert_eq!(Dispatch::Workgroups(8).total_workgroups(7).unwrap(), 14);
    }

    #[test]
    fn grid_is_never_split() {
        assert_eq!(
            Dispatch::Grid { x: 3, y: 4, z: 2 }.workgroups(4).unwrap(),
            [3, 4, 2]
        );
        assert_eq!(
            Dispatch::Grid { x: 3, y: 4, z: 0 }.workgroups(4).unwrap(),
            [0, 0, 0]
        );
        assert!(matches!(
            Dispatch::Grid { x: 3, y: 1, z: 5 }.workgroups(4),
            Err(RuntimeError::TooManyWorkgroups {
                count: 5,
                limit: 4,
                ..
            })
        ));
        assert!(
            Dispatch::Grid {
                x: 1 << 40,
                y: 1,
                z: 1
            }
            .workgroups(u32::MAX)
            .is_err()
        );
    }

    #[test]
    fn grid_stride_clamps() {
        let d = |items| Dispatch::GridStride {
            items,
            workgroup_size: 256,
        };
        assert_eq!(d(1).workgroups(1024).unwrap(), [1, 1, 1]);
        assert_eq!(d(256 * 10).workgroups(1024).unwrap(), [10, 1, 1]);
        assert_eq!(d(1 << 40).workgroups(1024).unwrap(), [1024, 1, 1]);
        assert_eq!(d(0).workgroups(1024).unwrap(), [0, 0, 0]);
    }

    #[test]
    fn zero_workgroup_size_and_zero_limit_are_errors() {
        assert!(matches!(
            threads(10, 0).workgroups(10),
            Err(RuntimeError::InvalidPlan { .. })
        ));
        let gs = Dispatch::GridStride {
            items: 10,
            workgroup_size: 0,
        };
        assert!(matches!(
            gs.workgroups(10),
            Err(RuntimeError::InvalidPlan { .. })
        ));
        assert!(matches!(
            Dispatch::Workgroups(1).workgroups(0),
            Err(RuntimeError::TooManyWorkgroups { .. })
        ));
    }

    #[test]
    fn pass_labels_errors_and_plan_emptiness() {
        static K: Kernel = Kernel {
            label: "k",
            source: "",
            entry_point: "main",
            digest: "0",
            web_enables: "",
            least_sizes: &[],
        };
        let pass = |dispatch| PlannedPass {
            id: "softmax",
            kernel: &K,
            overrides: vec![],
            bindings: vec![],
            params: vec![],
            dispatch,
        };
        let err = pass(Dispatch::Workgroups(100)).workgroups(5).unwrap_err();
        assert_eq!(
            err.to_string(),
            "softmax: 100 workgroups exceed the device limit of 25"
        );
        let mut plan = Plan {
            op: "Op",
            variant: "v",
            passes: vec![
                pass(threads(0, 64)),
                pass(Dispatch::Grid { x: 0, y: 0, z: 1 }),
            ],
            intermediates: vec![],
            outputs: vec![],
        };
        assert!(plan.is_empty(65535));
        assert_eq!(plan.label(), "Op/v");
        plan.passes.push(pass(Dispatch::Workgroups(1)));
        assert!(!plan.is_empty(65535));
    }

    #[test]
    fn intermediate_sizes() {
        let s = IntermediateSpec {
            id: "t",
            dtype: DType::I64,
            len: 10,
        };
        assert_eq!(s.byte_len(), Some(40));
        for (dtype, bytes) in [
            (DType::I8, 40),
            (DType::U8, 40),
            (DType::I32, 40),
            (DType::F16, 20),
        ] {
            assert_eq!(
                IntermediateSpec { dtype, ..s }.byte_len(),
                Some(bytes),
                "{dtype}"
            );
        }
        let s = IntermediateSpec {
            dtype: DType::F16,
            len: u64::MAX,
            ..s
        };
        assert_eq!(s.byte_len(), None);
    }
}
