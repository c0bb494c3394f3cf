//! One surface for every generated op of the seed packages, the corpus and the dialect
//! constructs. Every module has the free `shapes` and `dtypes`, which take a call's tensors as
//! `Op::call_shapes` does; an op whose outputs all have shape expressions and are always
//! produced has the allocating `record` and `run` (with the tensors it writes in place as
//! `InPlace`, where it writes any), and no other op has them. The lists below are checked at
//! compile time against each module's functions, and here against the op models (each op in
//! the group its outputs and in-place tensors put it in) and the registries (every op listed).

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use kernel_runtime::{AllocatingOp, Context, Op, OpError, wgpu};

/// What a module offers besides `plan`, `record_into` and `run_into`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    /// No allocating `record`/`run`: an output without a shape expression, an optional
    /// output, or no output at all.
    PlanOnly,
    /// `record(ctx, encoder, inputs, attrs)` and `run(ctx, inputs, attrs)`.
    Allocating,
    /// `record(ctx, encoder, inputs, in_place, attrs)` and `run(ctx, inputs, in_place, attrs)`.
    InPlace,
}

// Each takes the module's function as a pointer of the signature generic code relies on, so
// a module whose function is missing or differs does not compile.
fn shapes<O: Op>(_: for<'a, 'b> fn(&'a O::Inputs<'b>, &'a O::OutputsMut<'b>) -> O::Shapes<'a>) {}

fn dtypes<O: Op>(_: for<'a> fn(&O::Inputs<'a>, &O::OutputsMut<'a>) -> O::DTypes) {}

type Allocated<O> = Result<<O as AllocatingOp>::Outputs, OpError>;
type Encoder = wgpu::CommandEncoder;
type Record<O> =
    for<'a> fn(&Context, &mut Encoder, &<O as Op>::Inputs<'a>, &<O as Op>::Attrs) -> Allocated<O>;
type Run<O> = for<'a> fn(&Context, &<O as Op>::Inputs<'a>, &<O as Op>::Attrs) -> Allocated<O>;
type InPlace<'a, O> = <O as AllocatingOp>::InPlace<'a>;
type RecordInPlace<O> = for<'a> fn(
    &Context,
    &mut Encoder,
    &<O as Op>::Inputs<'a>,
    InPlace<'a, O>,
    &<O as Op>::Attrs,
) -> Allocated<O>;
type RunInPlace<O> =
    for<'a> fn(&Context, &<O as Op>::Inputs<'a>, InPlace<'a, O>, &<O as Op>::Attrs) -> Allocated<O>;

fn allocating<O: for<'a> AllocatingOp<InPlace<'a> = ()>>(_: Record<O>, _: Run<O>) {}

fn in_place<O: AllocatingOp>(_: RecordInPlace<O>, _: RunInPlace<O>) {}

/// Checks the listed modules of `$root` and returns their groups by module name.
macro_rules! surface {
    ($root:ident {
        plan_only: [$($p:ident),* $(,)?],
        allocating: [$($a:ident),* $(,)?],
        in_place: [$($i:ident),* $(,)?] $(,)?
    }) => {{
        $( shapes::<$root::$p::Op>($root::$p::shapes); dtypes::<$root::$p::Op>($root::$p::dtypes); )*
        $( shapes::<$root::$a::Op>($root::$a::shapes); dtypes::<$root::$a::Op>($root::$a::dtypes); )*
        $( shapes::<$root::$i::Op>($root::$i::shapes); dtypes::<$root::$i::Op>($root::$i::dtypes); )*
        $( allocating::<$root::$a::Op>($root::$a::record, $root::$a::run); )*
        $( in_place::<$root::$i::Op>($root::$i::record, $root::$i::run); )*
        let mut groups = BTreeMap::new();
        $( groups.insert(stringify!($p).to_owned(), Group::PlanOnly); )*
        $( groups.insert(stringify!($a).to_owned(), Group::Allocating); )*
        $( groups.insert(stringify!($i).to_owned(), Group::InPlace); )*
        groups
    }};
}

/// The group the op's model puts it in: allocating where it has outputs and every one has a
/// shape expression and is always produced.
fn group_of(op: &kernel_codegen::model::Op) -> Group {
    let allocates = !op.outputs.is_empty()
        && op
            .outputs
            .iter()
            .all(|t| t.is_computed_output() && !t.optional);
    match (allocates, op.inputs.iter().any(|t| t.in_place)) {
        (false, _) => Group::PlanOnly,
        (true, false) => Group::Allocating,
        (true, true) => Group::InPlace,
    }
}

/// The models of the packages `config` reads, by module, in their groups.
fn model_groups(config: &kernel_codegen::Config, what: &str) -> BTreeMap<String, Group> {
    let (inputs, _) = config
        .read_inputs()
        .unwrap_or_else(|e| panic!("reading {what}: {e}"));
    let ops = kernel_codegen::models(&inputs).unwrap_or_else(|d| panic!("{what}'s models: {d}"));
    ops.iter()
        .map(|op| (op.module.clone(), group_of(op)))
        .collect()
}

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_seed_ops_have_one_surface() {
    use kernels as seed;
    let listed = surface!(seed {
        plan_only: [],
        allocating: [
            bias_softmax,
            gated_relative_position_bias,
            mat_mul,
            mrotary_embedding
        ],
        in_place: [],
    });
    let mut config = kernel_codegen::Config::new();
    config
        .root(here().join("../.."))
        .packages_in("packages")
        .include_root("packages/_shared")
        .hints_dir("hints")
        .emit_rerun_if_changed(false);
    assert_eq!(listed, model_groups(&config, "the seed packages"));
    assert_eq!(listed.len(), kernels::OPS.len());
}

#[test]
fn the_dialect_constructs_have_one_surface() {
    use dialect::kernels as constructs;
    let listed = surface!(constructs {
        plan_only: [accumulate],
        allocating: [
            add_ints,
            half_words,
            hub_operands,
            partial_corner,
            row_means,
            row_sums,
            scale_rows
        ],
        in_place: [add_row_norms],
    });
    let dir = here().join("../dialect");
    let mut config = kernel_codegen::Config::new();
    config
        .root(&dir)
        .packages_in("packages")
        .hints_dir("hints")
        .emit_rerun_if_changed(false);
    assert_eq!(listed, model_groups(&config, "the dialect constructs"));
    assert_eq!(listed.len(), constructs::OPS.len());
}

#[test]
fn the_corpus_ops_have_one_surface() {
    if corpus::skip_without_corpus("the_corpus_ops_have_one_surface") {
        return;
    }
    #[cfg(corpus)]
    corpus_surface(&here());
}

#[cfg(corpus)]
fn corpus_surface(here: &std::path::Path) {
    use corpus::kernels as ops;
    let listed = surface!(ops {
        plan_only: [
            add_in_place,
            decode_attention,
            decode_down_norm_add,
            decode_norm_add,
            decode_norm_add_norm,
            decode_oproj_norm,
            decode_ple_gate,
            decode_ple_proj_norm,
            decode_qk_norm_rope,
            mul_broadcast,
            qat_embed_gather,
            qat_mat_mul,
            rope1d,
            strided_copy,
        ],
        allocating: [
            arg_max,
            attention,
            decode_gate_up_norm,
            decode_qkv_proj,
            decode_rms_srq,
            dense_gemv,
            ple_gate,
            rmsnorm,
            srq_quantize,
        ],
        in_place: [],
    });
    let corpus = std::env::var_os("KERNEL_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| here.join("../../../shared/corpus"));
    let collection = corpus.join("gemma-4");
    let mut config = kernel_codegen::Config::new();
    config
        .packages_in(&collection)
        .include_root(collection.join("_shared_assets"))
        .hints_dir(here.join("hints"))
        .emit_rerun_if_changed(false);
    assert_eq!(listed, model_groups(&config, "the corpus"));
    assert_eq!(listed.len(), ops::OPS.len());
}
