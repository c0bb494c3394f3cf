//! Each construct package runs on a real adapter and matches a float64 reference on random
//! data, in every class of the values its template tests.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use dialect::kernels::{accumulate, row_means, row_sums, scale_rows};
use dialect::runtime::Tensor;

/// A `rows × cols` matrix of seeded values in [-4, 4), and its tensor.
fn matrix(
    ctx: &dialect::runtime::Context,
    rows: usize,
    cols: usize,
    seed: u64,
) -> (Vec<f32>, Tensor<f32>) {
    let x: Vec<f32> = test_support::data(rows * cols, seed)
        .into_iter()
        .map(|v| v * 4.0)
        .collect();
    let tensor = Tensor::from_slice(ctx, &[rows, cols], &x).unwrap();
    (x, tensor)
}

/// `ScaleRows`: `x * scale`, times 2 for rows wider than 16 and 3 for rows of 16, plus 1 for
/// rows of 5 or 7, raised to `floor` where the optional arg is given and non-zero.
fn scale_rows_reference(x: &[f32], cols: usize, scale: f32, floor: Option<u32>) -> Vec<f64> {
    let band = match cols {
        17.. => 2.0,
        16 => 3.0,
        _ => 1.0,
    };
    let offset = if matches!(cols, 5 | 7) { 1.0 } else { 0.0 };
    x.iter()
        .map(|&v| {
            let scaled = f64::from(v) * f64::from(scale) * band + offset;
            match floor {
                Some(f) if f != 0 => scaled.max(f64::from(f)),
                _ => scaled,
            }
        })
        .collect()
}

/// The sum of each row of a `? × cols` matrix, in float64.
fn row_sums_reference(x: &[f32], cols: usize) -> Vec<f64> {
    x.chunks(cols)
        .map(|row| row.iter().map(|&v| f64::from(v)).sum())
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
    let (x, x_t) = matrix(&ctx, rows, cols, 11);
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
        test_support::assert_close(&got, &want, 5e-7, &format!("floor {floor:?}"));
    }
    assert_eq!(kernels[0], kernels[1], "absent and 0 are the same class");
    assert_ne!(kernels[0], kernels[2], "3 is the other class");
}

/// `cols`, compared with 16 and tested for membership in `[5, 7]` by the template and never
/// printed, is built per class (below 5, 5, 6, 7, 8 to 15, 16, above): every width of a class
/// shares its shader, and each matches the reference.
#[test]
fn comparison_and_membership_classes() {
    let ctx = test_support::context();
    let mut kernels = Vec::new();
    let widths = [
        (3usize, 15usize),
        (3, 16),
        (5, 17),
        (2, 300),
        (4, 1),
        (2, 5),
        (3, 7),
        (2, 9),
    ];
    for (rows, cols) in widths {
        let (x, x_t) = matrix(&ctx, rows, cols, cols as u64);
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
        test_support::assert_close(&got, &want, 5e-7, &format!("cols {cols}"));
    }
    let [below, at, above, far_above, far_below, five, seven, nine] = kernels[..] else {
        unreachable!()
    };
    assert_eq!(above, far_above);
    assert_eq!(below, far_below);
    assert_eq!(below, nine);
    assert_eq!(five, seven, "5 and 7 render alike");
    assert!(below != at && at != above && below != above && five != below);
}

/// `RowMeans` stages each row in a workgroup array of `args.cols / 4` vec4s, a double in the
/// engine and an integer override here: widths that are multiples of 4 match the reference,
/// one that is not is refused by the value's name before anything runs.
#[test]
fn division_sizes_a_workgroup_array() {
    let ctx = test_support::context();
    for (rows, cols) in [(5usize, 36usize), (3, 4), (2, 1024)] {
        let (x, x_t) = matrix(&ctx, rows, cols, cols as u64 + 1);
        let inputs = row_means::Inputs { x: &x_t };
        let attrs = row_means::Attrs::new(row_means::RequiredAttrs {
            rows: rows as u32,
            cols: cols as u32,
        });
        let got = row_means::run(&ctx, &inputs, &attrs)
            .unwrap()
            .y
            .to_vec(&ctx)
            .unwrap();
        let want: Vec<f64> = row_sums_reference(&x, cols)
            .into_iter()
            .map(|sum| sum / cols as f64)
            .collect();
        test_support::assert_close(&got, &want, 5e-6, &format!("{rows}x{cols}"));
    }
    let (rows, cols) = (2usize, 10usize);
    let (_, x_t) = matrix(&ctx, rows, cols, 3);
    let inputs = row_means::Inputs { x: &x_t };
    let attrs = row_means::Attrs::new(row_means::RequiredAttrs {
        rows: rows as u32,
        cols: cols as u32,
    });
    let error = row_means::run(&ctx, &inputs, &attrs)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("QUARTER") && error.contains("whole number"),
        "{error}"
    );
}

/// `RowSums` builds with the hints file its error prints: a width of the printed set runs and
/// matches the reference, another is refused by the arg's name.
#[test]
fn printed_hints_build_and_run() {
    let ctx = test_support::context();
    let sums = |rows: usize, cols: usize| {
        let (x, x_t) = matrix(&ctx, rows, cols, cols as u64);
        let inputs = row_sums::Inputs { x: &x_t };
        let attrs = row_sums::Attrs::new(row_sums::RequiredAttrs {
            rows: rows as u32,
            cols: cols as u32,
        });
        let got = row_sums::run(&ctx, &inputs, &attrs).map(|out| out.y.to_vec(&ctx).unwrap());
        (x, got)
    };
    for (rows, cols) in [(6usize, 64usize), (2, 1), (3, 256)] {
        let (x, got) = sums(rows, cols);
        let want = row_sums_reference(&x, cols);
        test_support::assert_close(&got.unwrap(), &want, 5e-6, &format!("{rows}x{cols}"));
    }
    let error = sums(2, 48).1.unwrap_err().to_string();
    assert!(error.contains("(args.cols = 48)"), "{error}");
}

/// The hints file in `hints/` is, byte for byte, the one `RowSums`'s error suggests.
#[test]
fn the_hints_file_is_the_printed_one() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = kernel_codegen::Config::new();
    config
        .package(here.join("packages/com.example.RowSums"))
        .emit_rerun_if_changed(false)
        .out_dir(std::env::temp_dir().join("dialect-unused"));
    let (inputs, _) = config.read_inputs().unwrap();
    let errors = kernel_codegen::generate(&inputs).unwrap_err();
    let [(file, text)] = &errors.suggested_hints()[..] else {
        panic!("one hints file: {errors}")
    };
    let kept = std::fs::read_to_string(here.join("hints").join(file)).unwrap();
    assert_eq!(&kept, text);
}

/// `Accumulate`: an `inout` arg written in place, an optional `weights` tensor (`present` in
/// `when` and in a pass input), a `oneOf` string the template reads as `args.mode`, a float
/// tunable, a `bindingSets` entry, an intermediate between two passes, `elementType: "$ELEM"`,
/// a binding by semantic alone, a uniform field by arg name, a chained comparison in `when`
/// and `**` in a dispatch: `acc += reduce(x row) * 0.5 (+ bias)` over rows more than one
/// workgroup of the second pass holds.
#[test]
fn accumulates_rows_in_place() {
    let ctx = test_support::context();
    let (rows, cols) = (130usize, 37usize);
    let (x, x_t) = matrix(&ctx, rows, cols, 21);
    let (acc0, _) = matrix(&ctx, rows, 1, 22);
    let (bias, bias_t) = matrix(&ctx, rows, 1, 23);
    for mode in ["sum", "max"] {
        for with_bias in [false, true] {
            let mut acc = Tensor::from_slice(&ctx, &[rows], &acc0).unwrap();
            let inputs = accumulate::Inputs {
                x: &x_t,
                bias: with_bias.then_some(&bias_t),
            };
            let attrs = accumulate::Attrs::new(accumulate::RequiredAttrs {
                rows: rows as u32,
                cols: cols as u32,
                mode: mode.to_owned(),
            });
            let outputs = accumulate::OutputsMut { acc: &mut acc };
            accumulate::run_into(&ctx, &inputs, outputs, &attrs).unwrap();
            let got = acc.to_vec(&ctx).unwrap();
            let want: Vec<f64> = (0..rows)
                .map(|r| {
                    let row = x[r * cols..(r + 1) * cols].iter().map(|&v| f64::from(v));
                    let reduced = if mode == "max" {
                        row.fold(f64::NEG_INFINITY, f64::max)
                    } else {
                        row.sum()
                    };
                    let offset = if with_bias { f64::from(bias[r]) } else { 0.0 };
                    f64::from(acc0[r]) + reduced * 0.5 + offset
                })
                .collect();
            test_support::assert_close(&got, &want, 5e-6, &format!("{mode}, bias {with_bias}"));
        }
    }
}
