//! Each construct package runs on a real adapter and matches a float64 reference on random
//! data, in every class of the values its template tests.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use dialect::kernels::{
    accumulate, add_ints, add_row_norms, half_words, hub_operands, partial_corner, row_means,
    row_sums, scale_rows,
};
use dialect::runtime::half::f16;
use dialect::runtime::{AllocatingOp, AnyTensor, DType, Element, Integer, OpError, Tensor};

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

/// `AddRowNorms`, an op that writes `Hidden` in place and allocates `MeanSq`: its allocating
/// `run` takes the in-place tensor as `InPlace` beside the inputs, and matches the float64
/// reference, the trait's `run` and `run_into` into a provided output; a wrong in-place shape
/// is refused before anything is allocated or written.
#[test]
fn run_allocates_beside_a_tensor_written_in_place() {
    let ctx = test_support::context();
    let (rows, cols) = (130usize, 37usize);
    let (h0, _) = matrix(&ctx, rows, cols, 24);
    let (x, x_t) = matrix(&ctx, rows, cols, 25);
    let sums: Vec<f64> = h0.iter().zip(&x).map(|(h, v)| f64::from(*h + *v)).collect();
    let mean_sq: Vec<f64> = sums
        .chunks(cols)
        .map(|row| row.iter().map(|v| v * v).sum::<f64>() / cols as f64)
        .collect();
    let inputs = add_row_norms::Inputs { x: &x_t };
    let attrs = add_row_norms::Attrs::new(add_row_norms::RequiredAttrs {
        rows: rows as u32,
        cols: cols as u32,
    });
    let mut hidden = Tensor::from_slice(&ctx, &[rows, cols], &h0).unwrap();
    let in_place = add_row_norms::InPlace {
        hidden: &mut hidden,
    };
    let outputs = add_row_norms::run(&ctx, &inputs, in_place, &attrs).unwrap();
    assert_eq!(outputs.mean_sq.shape(), [rows]);
    let got = outputs.mean_sq.to_vec(&ctx).unwrap();
    test_support::assert_close(&hidden.to_vec(&ctx).unwrap(), &sums, 1e-6, "Hidden");
    test_support::assert_close(&got, &mean_sq, 1e-5, "MeanSq");

    let mut again = Tensor::from_slice(&ctx, &[rows, cols], &h0).unwrap();
    let in_place = add_row_norms::InPlace { hidden: &mut again };
    let through_trait =
        <add_row_norms::Op as AllocatingOp>::run(&ctx, &inputs, in_place, &attrs).unwrap();
    assert_eq!(through_trait.mean_sq.to_vec(&ctx).unwrap(), got);
    let mut provided_hidden = Tensor::from_slice(&ctx, &[rows, cols], &h0).unwrap();
    let mut provided = Tensor::<f32>::zeros(&ctx, &[rows]).unwrap();
    let outputs = add_row_norms::OutputsMut {
        hidden: &mut provided_hidden,
        mean_sq: &mut provided,
    };
    add_row_norms::run_into(&ctx, &inputs, outputs, &attrs).unwrap();
    assert_eq!(provided.to_vec(&ctx).unwrap(), got);
    assert_eq!(
        provided_hidden.to_vec(&ctx).unwrap(),
        again.to_vec(&ctx).unwrap()
    );

    let mut wrong = Tensor::from_slice(&ctx, &[rows, cols - 1], &h0[..rows * (cols - 1)]).unwrap();
    let in_place = add_row_norms::InPlace { hidden: &mut wrong };
    let err = add_row_norms::run(&ctx, &inputs, in_place, &attrs).unwrap_err();
    assert!(matches!(err, OpError::NoVariant { .. }), "{err}");
    assert_eq!(wrong.to_vec(&ctx).unwrap(), h0[..rows * (cols - 1)]);
}

/// `count` seeded integers in `min..=max`, 46 random bits each (two draws of the sequence),
/// then pairs of operands that reach and overflow the ends of the range.
fn integer_operands(count: usize, seed: u64, min: i64, max: i64) -> (Vec<i64>, Vec<i64>) {
    let bits = |seed| -> Vec<u64> {
        test_support::data(2 * count, seed)
            .into_iter()
            .map(|v| ((f64::from(v) + 1.0) * f64::from(1u32 << 22)) as u64)
            .collect()
    };
    let span = (max - min) as u64 + 1;
    let draw = |seed| -> Vec<i64> {
        bits(seed)
            .chunks_exact(2)
            .map(|p| min + ((p[0] << 23 | p[1]) % span) as i64)
            .collect()
    };
    let (mut a, mut b) = (draw(seed), draw(seed + 1));
    for (x, y) in [
        (max, 1),
        (max, max),
        (min, -1),
        (min, min),
        (min, max),
        (0, 0),
        (max, 0),
        (min, 0),
    ] {
        // An operand outside the range (-1 of an unsigned type) becomes its largest value,
        // which overflows as much.
        let fit = |v: i64| if v < min { max } else { v };
        a.push(x);
        b.push(fit(y));
    }
    (a, b)
}

/// `a + b` computed exactly (in float64, where every sum here is exact), wrapped to `T`: the
/// value modulo 2^bits, in the type's range.
fn wrapped_sums<T: Element>(a: &[i64], b: &[i64]) -> Vec<f64> {
    let bits = T::DTYPE.size_bytes() as u32 * 8;
    let (min, _) = T::DTYPE.integer_range().unwrap();
    let modulus = 2f64.powi(bits as i32);
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let sum = x as f64 + y as f64;
            (sum - min as f64).rem_euclid(modulus) + min as f64
        })
        .collect()
}

/// Runs `AddInts` for `T` through the typed API on seeded operands with every overflow at the
/// ends of the range, and compares with the float64 reference; returns the shader it ran.
fn add_ints_matches_the_reference<T: Integer>(ctx: &dialect::runtime::Context) -> &'static str {
    let (min, max) = T::DTYPE.integer_range().unwrap();
    let (a, b) = integer_operands(1000, u64::from(T::DTYPE.size_bytes() as u32) + 40, min, max);
    let exact = |v: &[i64]| -> Vec<T> { v.iter().map(|&x| T::from_f64(x as f64)).collect() };
    let (a_host, b_host) = (exact(&a), exact(&b));
    // The operands are uploaded as drawn: no value needed wrapping to fit the type.
    let back: Vec<i64> = a_host.iter().map(|v| v.to_f64() as i64).collect();
    assert_eq!(back, a, "{} operands", T::DTYPE);
    let shape = [a.len()];
    let a_t = Tensor::from_slice(ctx, &shape, &a_host).unwrap();
    let b_t = Tensor::from_slice(ctx, &shape, &b_host).unwrap();
    let inputs = add_ints::Inputs { a: &a_t, b: &b_t };
    let attrs = add_ints::Attrs::new();
    let plan = add_ints::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
    assert_eq!(plan.outputs[0].dtype, T::DTYPE);
    let out = add_ints::run(ctx, &inputs, &attrs).unwrap();
    let got: Vec<f64> = out
        .c
        .to_vec(ctx)
        .unwrap()
        .into_iter()
        .map(Element::to_f64)
        .collect();
    let want = wrapped_sums::<T>(&a, &b);
    let wrong = got.iter().zip(&want).position(|(g, w)| g != w);
    assert_eq!(
        wrong.map(|i| (a[i], b[i], got[i], want[i])),
        None,
        "{}: (a, b, got, want) at the first difference",
        T::DTYPE
    );
    plan.passes[0].kernel.digest
}

/// Integer tensors of each dtype `T ∈ {int32, uint32, int8, uint8}` allows, the 8-bit ones
/// stored widened: sums wrap as the dtype does (the template wraps 8-bit sums itself), and
/// `int8` and `int32`, one WGSL scalar, still get shaders of their own.
#[test]
fn integer_dtypes_add_and_wrap() {
    let ctx = test_support::context();
    let i32_shader = add_ints_matches_the_reference::<i32>(&ctx);
    let u32_shader = add_ints_matches_the_reference::<u32>(&ctx);
    let i8_shader = add_ints_matches_the_reference::<i8>(&ctx);
    let u8_shader = add_ints_matches_the_reference::<u8>(&ctx);
    assert_ne!(i32_shader, i8_shader, "int8 wraps, int32 does not");
    assert_ne!(u32_shader, u8_shader, "uint8 wraps, uint32 does not");
}

/// The untyped entry takes each integer dtype as `AnyTensor`s and checks them against the
/// type variable: both operands one dtype, and one `T` allows.
#[test]
fn integer_dtypes_through_the_untyped_entry() {
    let ctx = test_support::context();
    let entry = dialect::kernels::OPS
        .iter()
        .find(|e| e.matches("AddInts"))
        .unwrap();
    for (dtype, a, b, want) in [
        (
            DType::I8,
            [127.0, -128.0, 5.0],
            [1.0, -1.0, -7.0],
            [-128.0, 127.0, -2.0],
        ),
        (
            DType::U8,
            [255.0, 0.0, 200.0],
            [1.0, 0.0, 100.0],
            [0.0, 0.0, 44.0],
        ),
        (
            DType::I32,
            [2_147_483_647.0, -3.0, 0.0],
            [1.0, 1.0, 0.0],
            [-2_147_483_648.0, -2.0, 0.0],
        ),
        (
            DType::U32,
            [4_294_967_295.0, 1.0, 7.0],
            [2.0, 1.0, 0.0],
            [1.0, 2.0, 7.0],
        ),
    ] {
        let a = AnyTensor::from_f64(&ctx, dtype, &[3], &a).unwrap();
        let b = AnyTensor::from_f64(&ctx, dtype, &[3], &b).unwrap();
        let run = entry.run(&ctx, &[&a, &b], &[]).unwrap();
        assert_eq!(run.outputs[0].dtype(), dtype);
        assert_eq!(run.outputs[0].to_f64_vec(&ctx).unwrap(), want, "{dtype}");
    }
    let a = AnyTensor::from_f64(&ctx, DType::I8, &[1], &[1.0]).unwrap();
    let b = AnyTensor::from_f64(&ctx, DType::U8, &[1], &[1.0]).unwrap();
    match entry.run(&ctx, &[&a, &b], &[]) {
        Err(OpError::Input { input, rule, .. }) => {
            assert_eq!(input, "B");
            assert_eq!(rule, "is uint8 but `A` is int8; both have type `T`");
        }
        other => panic!("{other:?}"),
    }
    // The typed `plan` checks the dtype it is given against `T`'s too.
    let a = Tensor::from_slice(&ctx, &[1], &[1i32]).unwrap();
    let inputs = add_ints::Inputs { a: &a, b: &a };
    let dtypes = add_ints::DTypes { t: DType::F32 };
    match add_ints::plan(
        ctx.caps(),
        &inputs.shapes(),
        &dtypes,
        &add_ints::Attrs::new(),
    ) {
        Err(OpError::Input { input, rule, .. }) => {
            assert_eq!(input, "A");
            assert_eq!(
                rule,
                "its type variable `T` (also of B) must be one of int32, uint32, int8, uint8, got float32"
            );
        }
        other => panic!("{other:?}"),
    }
    let f = AnyTensor::from_f64(&ctx, DType::F32, &[1], &[1.0]).unwrap();
    match entry.run(&ctx, &[&f, &f], &[]) {
        Err(OpError::Input { input, rule, .. }) => {
            assert_eq!(input, "A");
            assert_eq!(
                rule,
                "is float32, which type `T` does not allow (allowed: int32, uint32, int8, uint8)"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// `HubOperands`: `x · gain + shift % period`, plus 1 in the first half of the elements, where
/// `gain` is `attrs.gain or 1.5`, `%` takes the dividend's sign and the half is `(count / 2) |
/// int`, as the Hub runtime computes them; with the attributes' defaults (gain 0, so 1.5;
/// -7 % 3, so -1) and with others (7 % -3 is 1 there, -2 with the divisor's sign).
#[test]
fn hub_operands_follow_the_hub_runtime() {
    let ctx = test_support::context();
    let (rows, cols) = (5usize, 13usize);
    let (x, x_t) = matrix(&ctx, rows, cols, 23);
    let inputs = hub_operands::Inputs { x: &x_t };
    let custom = hub_operands::Attrs {
        gain: 2,
        period: -3,
        shift: 7,
    };
    for (attrs, gain, phase) in [(hub_operands::Attrs::new(), 1.5, -1.0), (custom, 2.0, 1.0)] {
        let out = hub_operands::run(&ctx, &inputs, &attrs).unwrap();
        assert_eq!(out.y.shape(), [rows, cols]);
        let got = out.y.to_vec(&ctx).unwrap();
        let half = x.len() / 2;
        let want: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| f64::from(v) * gain + phase + if i < half { 1.0 } else { 0.0 })
            .collect();
        test_support::assert_close(&got, &want, 5e-7, &format!("{attrs:?}"));
    }
}

/// `PartialCorner`: the template calls a helper it defines only for `bits == 4` whenever
/// `floor` is given, so the combination of other widths with a floor does not validate. The
/// generator leaves that one out with a warning and builds the others, which run and match
/// the reference; a call that selects the left-out one gets `OpError::NotBuilt`, naming the
/// combination and the template error, and no shader.
#[test]
fn a_combination_that_does_not_validate_is_left_out_and_said() {
    let ctx = test_support::context();
    let count = 150usize;
    let x: Vec<f32> = test_support::data(count, 7)
        .into_iter()
        .map(|v| v * 4.0)
        .collect();
    let x_t = Tensor::from_slice(&ctx, &[count], &x).unwrap();
    let inputs = partial_corner::Inputs { x: &x_t };
    let run = |bits: u32, floor: Option<u32>| {
        let mut attrs = partial_corner::Attrs::new(partial_corner::RequiredAttrs {
            count: count as u32,
            bits,
        });
        attrs.floor = floor;
        partial_corner::run(&ctx, &inputs, &attrs).map(|out| out.y.to_vec(&ctx).unwrap())
    };
    for (bits, floor) in [(4, None), (4, Some(1)), (8, None), (2, Some(0))] {
        let factor = if bits == 4 { 0.25 } else { 0.5 };
        let want: Vec<f64> = (x.iter())
            .map(|&v| {
                let scaled = f64::from(v) * factor;
                match floor {
                    Some(f) if f != 0 => scaled.max(f64::from(f)),
                    _ => scaled,
                }
            })
            .collect();
        let got = run(bits, floor).unwrap();
        test_support::assert_close(&got, &want, 1e-7, &format!("bits {bits}, floor {floor:?}"));
    }
    for bits in [8, 2] {
        let error = run(bits, Some(1)).unwrap_err();
        let OpError::NotBuilt(not_built) = &error else {
            panic!("bits {bits}: expected NotBuilt, got {error}")
        };
        assert_eq!(not_built.op, "com.example.PartialCorner");
        assert_eq!((not_built.variant, not_built.pass), ("main", "main"));
        assert!(not_built.combination.contains("HAS_FLOOR = 1"), "{error}");
        assert!(
            not_built.reason.contains("partial-corner.wgsl.jinja")
                && not_built.reason.contains("clamp_low"),
            "{error}"
        );
    }
}

/// `HalfWords`: `y = −2 · x` in float16, which is exact, so every half must come back as the
/// reference computes it; a swapped pair of halves in a word or a misplaced word is a
/// mismatch. Counts that are multiples of 8 take the variant that reads float16 tensors as
/// `vec4<u32>` words and writes them as `u32` words; the others read and write `f16` (an
/// empty tensor dispatches nothing).
#[test]
fn float16_tensors_seen_as_u32_words() {
    let ctx = test_support::context();
    if !ctx.caps().has_feature("shader-f16") {
        eprintln!("skipped: the adapter has no shader-f16");
        return;
    }
    for (count, variant) in [
        (8usize, "words"),
        (4_096 + 8, "words"),
        (64 * 65_535 * 8 + 64, "words"),
        (0, "halves"),
        (1, "halves"),
        (7, "halves"),
        (1_001, "halves"),
    ] {
        let x: Vec<f16> = test_support::data(count, count as u64)
            .into_iter()
            .map(|v| f16::from_f32(v * 4.0))
            .collect();
        let x_t = Tensor::from_slice(&ctx, &[count], &x).unwrap();
        let inputs = half_words::Inputs { x: &x_t };
        let attrs = half_words::Attrs::new();
        let plan =
            half_words::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
        assert!(
            plan.label().contains(variant),
            "{count}: planned {}",
            plan.label()
        );
        let got = half_words::run(&ctx, &inputs, &attrs)
            .unwrap()
            .y
            .to_vec(&ctx)
            .unwrap();
        let first_wrong = (got.iter().zip(&x))
            .position(|(g, v)| g.to_bits() != f16::from_f32(-2.0 * v.to_f32()).to_bits());
        assert_eq!(first_wrong, None, "{count} elements ({variant})");
    }
}
