//! The edge cases run: their typed APIs hold what the manifests say, and an op whose names
//! were all changed computes what the original computes, on a real adapter.

use edge_cases::{attribute_kinds, largest_rank, odd_key_values, odd_names};
use kernel_runtime::Tensor;

#[test]
fn every_attribute_kind_keeps_its_default() {
    let attrs = attribute_kinds::mrotary_embedding::Attrs::new(
        attribute_kinds::mrotary_embedding::RequiredAttrs {
            mrope_section: vec![1, 2, 1],
        },
    );
    assert_eq!(attrs.scale, 3.4e38_f32);
    assert_eq!(attrs.tiny, -1e-45_f32);
    assert_eq!(attrs.mode, "fast");
    assert_eq!(attrs.levels, 3);
    assert_eq!(attrs.widths, vec![1, -2, i64::MAX]);
    assert!(!attrs.interleaved);
}

/// Deterministic values in [-1, 1).
fn values(n: usize, salt: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(salt) % 2000) as f32 / 1000.0 - 1.0
        })
        .collect()
}

#[test]
fn renamed_ops_compute_what_the_original_computes() {
    let ctx = test_support::context();
    let shapes: [&[usize]; 6] = [
        &[2, 5, 8],
        &[8],
        &[1, 2, 5, 5],
        &[4, 4],
        &[4],
        &[1, 2, 1, 1],
    ];
    let tensors: Vec<Tensor<f32>> = shapes
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            let data = values(shape.iter().product(), i as u32);
            Tensor::from_slice(&ctx, shape, &data).expect("upload")
        })
        .collect();
    // The same call through each generated module of the op (its types are the module's own).
    macro_rules! run {
        ($module:path, $attrs:expr) => {{
            use $module::{Attrs, Inputs, run};
            let inputs = Inputs {
                query_layer: &tensors[0],
                query_bias: &tensors[1],
                rel_pos: &tensors[2],
                weight: &tensors[3],
                bias: &tensors[4],
                eco_a: &tensors[5],
            };
            let attrs: Attrs = $attrs;
            let out = run(&ctx, &inputs, &attrs).expect("runs");
            out.output.to_vec(&ctx).expect("reads back")
        }};
    }
    let want = run!(
        kernels::gated_relative_position_bias,
        Attrs { num_heads: 2 }
    );
    let got = run!(
        odd_names::gated_relative_position_bias,
        Attrs {
            num_heads: 2,
            r#type: 7,
        }
    );
    assert_eq!(got, want);
    let odd = run!(
        odd_key_values::gated_relative_position_bias,
        Attrs { num_heads: 2 }
    );
    assert_eq!(odd, want);
}

/// Each element type selects the shader rendered with its own text, whatever the text holds.
#[test]
fn key_values_with_any_text_select_their_shaders() {
    use odd_key_values::gated_relative_position_bias::{Attrs, DTypes, Shapes, plan};
    let shapes = Shapes {
        query_layer: &[2, 5, 8],
        query_bias: &[8],
        rel_pos: &[1, 2, 5, 5],
        weight: &[4, 4],
        bias: &[4],
        eco_a: &[1, 2, 1, 1],
    };
    let mut caps = kernel_runtime::DeviceCaps::portable();
    caps.shader_f16 = true;
    for subgroups in [false, true] {
        caps.subgroups = subgroups;
        (caps.subgroup_min_size, caps.subgroup_max_size) =
            if subgroups { (32, 32) } else { (0, 0) };
        for (dtype, note) in [
            (
                kernel_runtime::DType::F32,
                "// a \"q\" # b  c ü x[i] + 1.0\n",
            ),
            (kernel_runtime::DType::F16, "// x[i]+1.0 #key\n"),
        ] {
            let plan = plan(
                &caps,
                &shapes,
                &DTypes { t: dtype },
                &Attrs { num_heads: 2 },
            )
            .unwrap_or_else(|e| panic!("{dtype:?}: {e}"));
            let source = plan.passes[0].kernel.source;
            assert!(
                source.contains(note),
                "{dtype:?}, variant `{}`: {note:?} is not in the shader",
                plan.variant
            );
        }
    }
}

#[test]
fn the_largest_rank_is_checked_not_truncated() {
    use largest_rank::gated_relative_position_bias::{Attrs, Inputs, run};
    let ctx = test_support::context();
    let t = |shape: &[usize]| {
        Tensor::<f32>::from_slice(&ctx, shape, &values(shape.iter().product(), 1)).expect("upload")
    };
    let (q, qb, rel, w, b, eco) = (
        t(&[2, 5, 8]),
        t(&[8]),
        t(&[1, 2, 5, 5]),
        t(&[4, 4]),
        t(&[4]),
        t(&[1, 2, 1, 1]),
    );
    let inputs = Inputs {
        query_layer: &q,
        query_bias: &qb,
        rel_pos: &rel,
        weight: &w,
        bias: &b,
        eco_a: &eco,
    };
    let Err(err) = run(&ctx, &inputs, &Attrs { num_heads: 2 }) else {
        panic!("a rank-2 weight is refused");
    };
    assert!(err.to_string().contains("4294967295"), "{err}");
}
