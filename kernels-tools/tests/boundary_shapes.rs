//! The boundary-shape matrix of the seed ops and the Hub's Add, Softmax and MatMul: each op
//! through its registry entry on a zero in each dimension, ones, odd sizes and launches past
//! 65,535 workgroups, its outputs poisoned first, against the float64 references of
//! `kernels_tools::reference`. Every cell is a right result or a typed error; the cells ONNX
//! defines (MatMul with K = 0, Softmax over an empty axis, every empty output) must be
//! right. The matrix is printed (`cargo test -p kernels-tools --test boundary_shapes --
//! --nocapture`); ranks above 8 are refused with the limit named. Add folds its launch only
//! past 67 million elements (four a thread, 256 threads a workgroup), which
//! `examples/hub/tests/add.rs` runs on its own.

use kernel_runtime::support::AttrValue;
use kernel_runtime::{Context, DType};
use kernels_tools::reference::by_op;
use test_support::boundary::{self, Input, Matrix, Outcome};

/// f32 results against float64 (sums of up to a few hundred products, exponentials).
const F32_TOLERANCE: f64 = 1e-4;
/// f16 results, rounded once or twice to 11 bits.
const F16_TOLERANCE: f64 = 2e-2;

/// What a cell must give.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// The right result.
    Right,
    /// A typed error whose message holds this text.
    Refused(&'static str),
    /// Either: the matrix records which.
    Any,
}

/// One cell: its label, inputs (dtype applied per run), attributes, and what it must give.
struct Cell {
    shapes: String,
    inputs: Vec<Input>,
    attrs: Vec<(String, AttrValue)>,
    want: Want,
}

fn ints(name: &str, values: &[i64]) -> (String, AttrValue) {
    (name.to_owned(), AttrValue::Ints(values.to_vec()))
}

fn int(name: &str, value: i64) -> (String, AttrValue) {
    (name.to_owned(), AttrValue::Int(value))
}

/// A cell of float inputs of `shapes`, labelled by them joined with `sep`.
fn floats(dtype: DType, shapes: &[&[usize]], sep: &str, want: Want) -> Cell {
    let label: Vec<String> = shapes.iter().map(|s| format!("{s:?}")).collect();
    Cell {
        shapes: label.join(sep),
        inputs: shapes
            .iter()
            .enumerate()
            .map(|(i, s)| Input::random(dtype, s, 11 + i as u64))
            .collect(),
        attrs: Vec::new(),
        want,
    }
}

fn add_cells(dtype: DType) -> Vec<Cell> {
    let nine = [1usize; 9];
    let mut cells: Vec<Cell> = [
        (&[0][..], &[0][..], Want::Right),
        (&[3, 0], &[1], Want::Right),
        (&[0, 5], &[5], Want::Right),
        (&[2, 0, 3], &[3], Want::Right),
        (&[4, 5], &[0, 1, 5], Want::Right),
        (&[], &[], Want::Right),
        (&[1], &[1], Want::Right),
        (&[1, 1, 1], &[1], Want::Right),
        (&[7, 13], &[13], Want::Right),
        (&[3, 1, 5], &[1, 4, 1], Want::Right),
        (&[5, 7, 9], &[5, 7, 9], Want::Right),
        (
            &nine,
            &[1],
            Want::Refused("rank 9 reaches the shader, which holds at most 8 axes"),
        ),
    ]
    .into_iter()
    .map(|(a, b, want)| floats(dtype, &[a, b], " + ", want))
    .collect();
    cells.push(floats(dtype, &[&[2; 8], &[2]], " + ", Want::Right));
    cells
}

fn softmax_cells(dtype: DType) -> Vec<Cell> {
    let cases: [(&[usize], i64, Want); 13] = [
        (&[5, 0], -1, Want::Right),
        (&[2, 3, 0], -1, Want::Right),
        (&[0], -1, Want::Right),
        (&[0, 5], -1, Want::Right),
        (&[0, 5], 0, Want::Right),
        (&[4, 0, 3], 1, Want::Right),
        (&[1], -1, Want::Right),
        (&[1, 1], 0, Want::Right),
        (&[7, 13], -1, Want::Right),
        (&[3, 5, 7], 1, Want::Right),
        // Rows of one element, one row a workgroup: the launch folds into y.
        (&[65_544, 1], -1, Want::Right),
        (
            &[1, 1, 1, 1, 1, 1, 1, 1, 2],
            0,
            Want::Refused("rank 9 reaches the shader, which holds at most 8 axes"),
        ),
        (&[2, 1, 1, 1, 1, 1, 1, 3], 0, Want::Right),
    ];
    cases
        .into_iter()
        .map(|(shape, axis, want)| Cell {
            shapes: format!("{shape:?} axis {axis}"),
            inputs: vec![Input::random(dtype, shape, 21)],
            attrs: vec![int("axis", axis)],
            want,
        })
        .collect()
}

fn matmul_cells(dtype: DType) -> Vec<Cell> {
    let cases: [(&[usize], &[usize], Want); 16] = [
        (&[1, 0], &[0, 8], Want::Right),
        (&[0], &[0, 8], Want::Right),
        (&[8, 0], &[0], Want::Right),
        (&[5, 0], &[0], Want::Right),
        (&[3, 0], &[0, 5], Want::Right),
        (&[2, 4, 0], &[0, 4], Want::Right),
        (&[0, 4], &[4, 8], Want::Right),
        (&[4, 8], &[8, 0], Want::Right),
        (&[0, 3, 4], &[4, 5], Want::Right),
        (&[1], &[1], Want::Right),
        (&[1, 1], &[1, 1], Want::Right),
        (&[7, 13], &[13, 5], Want::Right),
        (&[2, 3, 5], &[5, 7], Want::Right),
        (&[33, 17], &[17, 9], Want::Right),
        // One row a workgroup: past 65,535 rows the launch folds into y.
        (&[65_540, 1], &[1], Want::Right),
        (&[1, 1, 1, 1, 1, 1, 1, 2, 3], &[3, 2], Want::Any),
    ];
    cases
        .into_iter()
        .map(|(a, b, want)| floats(dtype, &[a, b], " x ", want))
        .collect()
}

fn bias_softmax_cells(dtype: DType) -> Vec<Cell> {
    let cases: [(&[usize], &[usize], i64, Want); 8] = [
        (&[4, 0], &[4, 0], -1, Want::Any),
        // More bias rows than data rows: the manifest's bias contract refuses it.
        (
            &[0, 6],
            &[1, 6],
            -1,
            Want::Refused("biasBlockCount <= batchCount"),
        ),
        (&[2, 0, 3], &[2, 0, 3], -1, Want::Right),
        (&[1, 1], &[1, 1], -1, Want::Right),
        (&[3, 7], &[1, 7], -1, Want::Right),
        (&[5, 3, 9], &[3, 9], -1, Want::Right),
        (&[2, 2, 3], &[2, 3], 1, Want::Right),
        (&[65_537, 1], &[1, 1], -1, Want::Right),
    ];
    cases
        .into_iter()
        .map(|(data, bias, axis, want)| Cell {
            shapes: format!("{data:?} + {bias:?} axis {axis}"),
            inputs: vec![
                Input::random(dtype, data, 31),
                Input::random(dtype, bias, 32),
            ],
            attrs: vec![int("axis", axis), int("is_inner_broadcast", 0)],
            want,
        })
        .collect()
}

fn mrotary_cells(dtype: DType) -> Vec<Cell> {
    // (batch, heads, seq, head dim), with caches of 4 positions × half the head dim.
    let cases: [([usize; 4], Want); 6] = [
        ([1, 1, 2, 8], Want::Right),
        ([1, 1, 0, 8], Want::Right),
        ([0, 1, 2, 8], Want::Right),
        ([1, 0, 2, 8], Want::Any),
        ([1, 1, 1, 8], Want::Right),
        ([3, 5, 7, 8], Want::Right),
    ];
    cases
        .into_iter()
        .map(|([b, h, s, d], want)| {
            let positions: Vec<f64> = (0..3 * b * s).map(|i| (i % 4) as f64).collect();
            Cell {
                shapes: format!("{:?} positions {:?}", [b, h, s, d], [3, b, s]),
                inputs: vec![
                    Input::random(dtype, &[b, h, s, d], 41),
                    Input::of(DType::I64, &[3, b, s], positions),
                    Input::random(dtype, &[4, d / 2], 42),
                    Input::random(dtype, &[4, d / 2], 43),
                ],
                attrs: vec![ints("mrope_section", &[2, 1, 1])],
                want,
            }
        })
        .collect()
}

fn gated_bias_cells(dtype: DType) -> Vec<Cell> {
    // (batch, seq, heads, head size, proj).
    let cases: [([usize; 5], Want); 5] = [
        ([1, 3, 2, 8, 4], Want::Right),
        ([0, 3, 2, 8, 4], Want::Any),
        ([1, 0, 2, 8, 4], Want::Any),
        ([1, 1, 1, 8, 4], Want::Right),
        ([2, 5, 3, 8, 2], Want::Right),
    ];
    cases
        .into_iter()
        .map(|([b, s, n, h, d], want)| {
            let shapes: [Vec<usize>; 6] = [
                vec![b, s, n * h],
                vec![n * h],
                vec![1, n, s, s],
                vec![h, d],
                vec![d],
                vec![1, n, 1, 1],
            ];
            Cell {
                shapes: format!("B={b} S={s} N={n} H={h} D={d}"),
                inputs: shapes
                    .iter()
                    .enumerate()
                    .map(|(i, shape)| Input::random(dtype, shape, 51 + i as u64))
                    .collect(),
                attrs: vec![int("num_heads", n as i64)],
                want,
            }
        })
        .collect()
}

/// Runs every cell of `op` in `dtype` into `matrix`; a cell that gives something other than
/// it must is returned as a failure line.
fn run_op(
    ctx: &Context,
    matrix: &mut Matrix,
    op: &str,
    entry: &kernel_runtime::registry::OpEntry,
    dtype: DType,
    cells: Vec<Cell>,
) -> Vec<String> {
    let tolerance = if dtype == DType::F16 {
        F16_TOLERANCE
    } else {
        F32_TOLERANCE
    };
    let mut wrong = Vec::new();
    for cell in cells {
        let reference = |inputs: &[Input]| {
            let owned: Vec<(String, Vec<usize>, Vec<f64>)> = entry
                .inputs
                .iter()
                .zip(inputs)
                .map(|(role, i)| (role.role.to_owned(), i.shape.clone(), i.values.clone()))
                .collect();
            by_op(op, &owned, &cell.attrs)
                .map(|out| vec![out])
                .map_err(|e| format!("{e:#}"))
        };
        let outcome = boundary::run(ctx, entry, &cell.inputs, &cell.attrs, &reference, tolerance);
        let fits = match (&outcome, cell.want) {
            (Outcome::Failed(_), _) => false,
            (Outcome::Right { .. }, Want::Right | Want::Any) => true,
            (Outcome::Refused { message, .. }, Want::Refused(text)) => message.contains(text),
            (Outcome::Refused { .. }, Want::Any) => true,
            _ => false,
        };
        if !fits {
            wrong.push(format!(
                "{op} {} {dtype}: want {:?}, got {outcome:?}",
                cell.shapes, cell.want
            ));
        }
        matrix.push(op, &cell.shapes, dtype, outcome);
    }
    wrong
}

fn entry(op: &str) -> &'static kernel_runtime::registry::OpEntry {
    kernels::OPS
        .iter()
        .chain(hub::ops())
        .find(|e| e.matches(op))
        .unwrap_or_else(|| panic!("{op} is generated"))
}

#[test]
fn every_op_answers_every_boundary_shape() {
    let ctx = test_support::context();
    let dtypes: Vec<DType> = [DType::F32, DType::F16]
        .into_iter()
        .filter(|&d| d == DType::F32 || ctx.caps().has_feature("shader-f16"))
        .collect();
    let mut matrix = Matrix::default();
    let mut wrong = Vec::new();
    type Cells = fn(DType) -> Vec<Cell>;
    let mut ops: Vec<(&str, Cells)> = vec![
        ("com.microsoft.BiasSoftmax", bias_softmax_cells),
        ("com.microsoft.MRotaryEmbedding", mrotary_cells),
        ("com.microsoft.GatedRelativePositionBias", gated_bias_cells),
    ];
    if hub::ops().is_empty() {
        eprintln!("no Hub manifests: the matrix covers the seed ops only");
    } else {
        ops.extend([
            ("ai.onnx.Add", add_cells as Cells),
            ("ai.onnx.Softmax", softmax_cells),
            ("ai.onnx.MatMul", matmul_cells),
        ]);
    }
    for (op, cells) in ops {
        for &dtype in &dtypes {
            wrong.extend(run_op(
                &ctx,
                &mut matrix,
                op,
                entry(op),
                dtype,
                cells(dtype),
            ));
        }
    }
    println!("{matrix}");
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    assert!(matrix.failures().is_empty());
}

/// A view of the application's buffer too small for the element a shader reads it as is a
/// typed error before any wgpu call; with room after it in the buffer, the binding is widened
/// and the op gives its zeros.
#[test]
fn an_empty_view_read_as_vec4_is_widened_or_refused() {
    use kernel_runtime::{AnyTensor, RuntimeError, Tensor};
    if hub::ops().is_empty() {
        eprintln!("no Hub manifests: skipped");
        return;
    }
    let ctx = test_support::context();
    let align = u64::from(ctx.caps().limits.min_storage_buffer_offset_alignment);
    let matmul = entry("ai.onnx.MatMul");
    let a = AnyTensor::from_f64(&ctx, DType::F32, &[1, 0], &[]).expect("a");
    // `b` of [0, 8], 4 bytes, which `vector_matrix_vec4` reads as `vec4<f32>`.
    let view = |room: u64| {
        let buffer = ctx
            .device()
            .create_buffer(&kernel_runtime::wgpu::BufferDescriptor {
                label: Some("application buffer"),
                size: align + room,
                usage: kernel_runtime::wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
        AnyTensor::F32(Tensor::from_buffer(&ctx, &buffer, align, &[0, 8]).expect("view"))
    };
    let err = matmul
        .run(&ctx, &[&a, &view(4)], &[])
        .expect_err("4 bytes read as vec4<f32>");
    assert!(
        matches!(
            &err,
            kernel_runtime::OpError::Runtime(RuntimeError::BindingTooSmall {
                role: "b",
                needed: 16,
                available: 4,
                ..
            })
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("reads `b` in elements of 16 bytes, but its buffer has 4"),
        "{err}"
    );
    let run = matmul.run(&ctx, &[&a, &view(16)], &[]).expect("widened");
    assert_eq!(run.variant, "vector_matrix_vec4");
    let y = run.outputs[0].to_f64_vec(&ctx).expect("read y");
    assert_eq!(y, vec![0.0; 8], "{}", run.variant);
}
