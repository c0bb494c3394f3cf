//! Each construct package runs on a real adapter and matches a float64 reference on random
//! data, in every class of the values its template tests.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use dialect::kernels::scale_rows;
use dialect::runtime::Tensor;

/// Uniform values in [-4, 4) from a fixed seed (a 64-bit LCG's high bits).
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f64 / (1u64 << 24) as f64 * 8.0 - 4.0) as f32
        })
        .collect()
}

/// `ScaleRows`: `x * scale`, times 2 for rows wider than 16 and 3 for rows of 16, raised to
/// `floor` where the optional arg is given and non-zero.
fn scale_rows_reference(x: &[f32], cols: usize, scale: f32, floor: Option<u32>) -> Vec<f64> {
    let band = match cols {
        17.. => 2.0,
        16 => 3.0,
        _ => 1.0,
    };
    x.iter()
        .map(|&v| {
            let scaled = f64::from(v) * f64::from(scale) * band;
            match floor {
                Some(f) if f != 0 => scaled.max(f64::from(f)),
                _ => scaled,
            }
        })
        .collect()
}

/// A uniform named by an arg the package does not declare, fields by arg name and by
/// expression, `constants.COUNT` in a later constant, a field and the dispatch (231 elements:
/// the last workgroup is partial), and `floor` tested only for truthiness: absent and 0 share
/// the shader without the clamp, 3 selects the other.
#[test]
fn uniform_by_arg_constants_and_truthiness_classes() {
    let ctx = test_support::context();
    let (rows, cols) = (7usize, 33usize);
    let x = random(rows * cols, 11);
    let x_t = Tensor::from_slice(&ctx, &[rows, cols], &x).unwrap();
    let inputs = scale_rows::Inputs { x: &x_t };
    let mut kernels = Vec::new();
    for floor in [None, Some(0), Some(3)] {
        let mut attrs = scale_rows::Attrs::new(scale_rows::RequiredAttrs {
            rows: rows as u32,
            cols: cols as u32,
            scale: -1.5,
        });
        attrs.floor = floor;
        let plan =
            scale_rows::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
        kernels.push(plan.passes[0].kernel.digest);
        let out = scale_rows::run(&ctx, &inputs, &attrs).unwrap();
        assert_eq!(out.y.shape(), [rows, cols]);
        let got = out.y.to_vec(&ctx).unwrap();
        let want = scale_rows_reference(&x, cols, -1.5, floor);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (f64::from(*g) - w).abs() <= 1e-6 * w.abs().max(1.0),
                "floor {floor:?}: element {i} is {g}, the reference {w}"
            );
        }
    }
    assert_eq!(kernels[0], kernels[1], "absent and 0 are the same class");
    assert_ne!(kernels[0], kernels[2], "3 is the other class");
}

/// `cols`, compared with 16 by the template and never printed, is built per class (below, at,
/// above 16): every width of a class shares its shader, and each matches the reference.
#[test]
fn comparison_classes() {
    let ctx = test_support::context();
    let mut kernels = Vec::new();
    for (rows, cols) in [(3usize, 15usize), (3, 16), (5, 17), (2, 300), (4, 1)] {
        let x = random(rows * cols, cols as u64);
        let x_t = Tensor::from_slice(&ctx, &[rows, cols], &x).unwrap();
        let inputs = scale_rows::Inputs { x: &x_t };
        let attrs = scale_rows::Attrs::new(scale_rows::RequiredAttrs {
            rows: rows as u32,
            cols: cols as u32,
            scale: 0.75,
        });
        let plan =
            scale_rows::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
        kernels.push(plan.passes[0].kernel.digest);
        let got = scale_rows::run(&ctx, &inputs, &attrs)
            .unwrap()
            .y
            .to_vec(&ctx)
            .unwrap();
        let want = scale_rows_reference(&x, cols, 0.75, None);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (f64::from(*g) - w).abs() <= 1e-6 * w.abs().max(1.0),
                "cols {cols}: element {i} is {g}, the reference {w}"
            );
        }
    }
    let [below, at, above, far_above, far_below] = kernels[..] else {
        unreachable!()
    };
    assert_eq!(above, far_above);
    assert_eq!(below, far_below);
    assert!(below != at && at != above && below != above);
}
