//! The build-time generated BiasSoftmax runs on a real adapter and matches a float64 softmax.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use build_script::kernels::{self, bias_softmax};
use build_script::runtime::Tensor;

#[test]
fn generated_module_lists_every_package() {
    let names: Vec<&str> = kernels::OPS.iter().map(|e| e.name).collect();
    assert_eq!(
        names,
        [
            "BiasSoftmax",
            "GatedRelativePositionBias",
            "MRotaryEmbedding",
            "MatMul"
        ]
    );
}

#[test]
fn build_time_bias_softmax_matches_the_reference() {
    let ctx = test_support::context();
    let (rows, cols) = (6usize, 40usize);
    let data: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 13.0)
        .collect();
    let bias: Vec<f32> = (0..cols).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
    let data_t = Tensor::from_slice(&ctx, &[1, rows, cols], &data).unwrap();
    let bias_t = Tensor::from_slice(&ctx, &[1, 1, cols], &bias).unwrap();
    let attrs = bias_softmax::Attrs {
        axis: 2,
        ..bias_softmax::Attrs::new(bias_softmax::RequiredAttrs {
            is_inner_broadcast: true,
        })
    };
    let inputs = bias_softmax::Inputs {
        data: &data_t,
        bias: &bias_t,
    };
    let out = bias_softmax::run(&ctx, &inputs, &attrs).unwrap();
    let got = out.output.to_vec(&ctx).unwrap();
    for r in 0..rows {
        let row: Vec<f64> = (0..cols)
            .map(|c| f64::from(data[r * cols + c]) + f64::from(bias[c]))
            .collect();
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        for c in 0..cols {
            let want = (row[c] - max).exp() / sum;
            let err = (f64::from(got[r * cols + c]) - want).abs();
            assert!(
                err < 1e-6,
                "row {r}, column {c}: {} against {want}",
                got[r * cols + c]
            );
        }
    }
}
