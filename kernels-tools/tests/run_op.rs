//! End-to-end tests of the `run-op` command: real safetensors files in, real files out, exit
//! status 2 with a one-line error for contract violations and bad files, never a panic.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernels_tools::data::{DataRng, Tolerance, compare, round_to};
use kernels_tools::reference::mrotary_embedding::{mrotary_embedding, rope_caches};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};

// Inputs drawn by shape (`--random`) instead of read from a file.
#[path = "run_op/random.rs"]
mod random;

/// A scratch folder unique to one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("run-op-tests-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    dir
}

fn f32_bytes(values: &[f64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| (*v as f32).to_le_bytes())
        .collect()
}

fn i64_bytes(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Writes a safetensors file from (name, dtype, shape, bytes).
fn write_file(path: &Path, tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(name, dtype, shape, bytes)| {
            (
                (*name).to_owned(),
                TensorView::new(*dtype, shape.clone(), bytes).expect("consistent test tensor"),
            )
        })
        .collect();
    let bytes =
        safetensors::serialize(views, None::<HashMap<String, String>>).expect("serializable");
    std::fs::write(path, bytes).expect("file is writable");
}

fn run_op(args: &[&str]) -> Output {
    test_support::bound();
    Command::new(env!("CARGO_BIN_EXE_run-op"))
        .args(args)
        .output()
        .expect("run-op starts")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The last stderr line: `run-op`'s own message (drivers may print before it).
fn error_line(output: &Output) -> String {
    stderr(output)
        .lines()
        .rfind(|l| l.starts_with("run-op:"))
        .unwrap_or_default()
        .to_owned()
}

struct Problem {
    x: Vec<f64>,
    positions: Vec<i64>,
    cos: Vec<f64>,
    sin: Vec<f64>,
}

const SHAPE: [usize; 3] = [2, 3, 2 * 8];
const MAX_POSITIONS: usize = 16;

fn problem() -> Problem {
    let mut rng = DataRng::new(11);
    let x = round_to::<f32>(&rng.uniform(SHAPE.iter().product(), -1.0, 1.0));
    let positions = rng.indices(3 * SHAPE[0] * SHAPE[1], MAX_POSITIONS as i64);
    let (cos, sin) = rope_caches(MAX_POSITIONS, 4, 10000.0);
    Problem {
        x,
        positions,
        cos: round_to::<f32>(&cos),
        sin: round_to::<f32>(&sin),
    }
}

fn write_problem(path: &Path, p: &Problem, positions: &[i64]) {
    write_file(
        path,
        &[
            ("input", Dtype::F32, SHAPE.to_vec(), f32_bytes(&p.x)),
            (
                "position_ids",
                Dtype::I64,
                vec![3, SHAPE[0], SHAPE[1]],
                i64_bytes(positions),
            ),
            (
                "cos_cache",
                Dtype::F32,
                vec![MAX_POSITIONS, 4],
                f32_bytes(&p.cos),
            ),
            (
                "sin_cache",
                Dtype::F32,
                vec![MAX_POSITIONS, 4],
                f32_bytes(&p.sin),
            ),
        ],
    );
}

#[test]
fn runs_mrotary_embedding_from_files_and_matches_the_reference() {
    let dir = scratch("ok");
    let (inputs, outputs) = (dir.join("in.safetensors"), dir.join("out.safetensors"));
    let p = problem();
    write_problem(&inputs, &p, &p.positions);
    let mut args = mrope_call(
        inputs.to_str().expect("utf-8 path"),
        outputs.to_str().expect("utf-8 path"),
        &["num_heads=2", "mrope_section=2,1,1", "scale=0.5"],
    );
    args.extend(["--repeat", "3"]);
    let output = run_op(&args);
    assert!(
        output.status.success(),
        "run-op failed: {}",
        stderr(&output)
    );
    let line = String::from_utf8_lossy(&output.stdout);
    assert!(
        line.contains("com.microsoft.MRotaryEmbedding") && line.contains("variant rank3"),
        "{line}"
    );
    assert!(line.contains("GPU time"), "{line}");

    let bytes = std::fs::read(&outputs).expect("output written");
    let file = SafeTensors::deserialize(&bytes).expect("output is safetensors");
    let view = file
        .tensor("output")
        .expect("output tensor named by its role");
    assert_eq!(view.dtype(), Dtype::F32);
    assert_eq!(view.shape(), SHAPE);
    let got: Vec<f64> = view
        .data()
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    let mut attrs =
        kernels::mrotary_embedding::Attrs::new(kernels::mrotary_embedding::RequiredAttrs {
            mrope_section: vec![2, 1, 1],
        });
    attrs.num_heads = 2;
    attrs.scale = 0.5;
    let want = mrotary_embedding(
        &p.x,
        &SHAPE,
        &p.positions,
        &p.cos,
        &p.sin,
        MAX_POSITIONS,
        &attrs,
    )
    .expect("reference");
    let comparison = compare(&got, &want, Tolerance::mrope(kernel_runtime::DType::F32));
    assert!(comparison.passed(), "{comparison}");
}

fn expect_usage_error(args: &[&str], needle: &str) {
    let output = run_op(args);
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
    let line = error_line(&output);
    assert!(line.contains(needle), "expected `{needle}` in: {line}");
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
}

/// `run-op MRotaryEmbedding --inputs INPUTS --output OUTPUT`, with `--attr` before each of
/// `attrs`.
fn mrope_call<'a>(inputs: &'a str, output: &'a str, attrs: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["MRotaryEmbedding", "--inputs", inputs, "--output", output];
    for attr in attrs {
        args.extend(["--attr", attr]);
    }
    args
}

/// Attributes every check of [`problem`] passes with.
const MROPE_ATTRS: [&str; 2] = ["num_heads=2", "mrope_section=2,1,1"];

#[test]
fn contract_violations_and_bad_files_exit_with_status_2() {
    let dir = scratch("errors");
    let (good, out) = (dir.join("good.safetensors"), dir.join("out.safetensors"));
    let p = problem();
    write_problem(&good, &p, &p.positions);
    let good = good.to_str().expect("utf-8 path");
    let out = out.to_str().expect("utf-8 path");

    // Attributes, on good inputs: each case's `--attr` values and what its error names.
    let attribute_cases: &[(&[&str], &str)] = &[
        // A contract clause: the sections must sum to R/2 = 4.
        (&["num_heads=2", "mrope_section=2,2,2"], "sectionsValid"),
        // A value outside the attribute's allowed set.
        (
            &["num_heads=2", "mrope_section=2,1,1", "interleaved=2"],
            "interleaved",
        ),
        // A required attribute left out.
        (&["num_heads=2"], "mrope_section"),
        // An unknown attribute.
        (&["mrope_section=2,1,1", "heads=2"], "unknown attribute"),
        // An attribute given twice is an error, not the last one winning.
        (
            &["num_heads=2", "num_heads=3", "mrope_section=2,1,1"],
            "`num_heads` is given twice",
        ),
        // A float beyond f32's range (or not finite) is refused rather than made infinite.
        (
            &["num_heads=2", "mrope_section=2,1,1", "scale=1e39"],
            "a finite float within f32's range",
        ),
        (
            &["num_heads=2", "mrope_section=2,1,1", "scale=inf"],
            "a finite float within f32's range",
        ),
        (
            &["num_heads=2", "mrope_section=2,1,1", "scale=nan"],
            "a finite float within f32's range",
        ),
    ];
    for (attrs, needle) in attribute_cases {
        expect_usage_error(&mrope_call(good, out, attrs), needle);
    }
    expect_usage_error(
        &["NoSuchOp", "--inputs", good, "--output", out],
        "unknown op",
    );
    // `--repeat` is bounded: 0 and counts that would exhaust memory are refused by the parser.
    for repeat in ["0", "18446744073709551615", "1099511627776", "100001"] {
        let mut args = mrope_call(good, out, &[]);
        args.extend(["--repeat", repeat]);
        let output = run_op(&args);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "--repeat {repeat}: {text}");
        assert!(text.contains("--repeat"), "--repeat {repeat}: {text}");
        assert!(!text.contains("panicked"), "--repeat {repeat}: {text}");
    }

    // Inputs, with attributes the good inputs pass: each case's file and what its error names.
    // A position past the cache, caught on the host with stream, batch and token.
    let mut positions = p.positions.clone();
    positions[SHAPE[0] * SHAPE[1] + SHAPE[1] + 2] = MAX_POSITIONS as i64;
    let far = dir.join("far.safetensors");
    write_problem(&far, &p, &positions);
    // A negative position fails the checked narrowing.
    positions[0] = -1;
    let negative = dir.join("negative.safetensors");
    write_problem(&negative, &p, &positions);
    // Bad files: missing tensor, wrong dtype, not safetensors at all.
    let missing = dir.join("missing.safetensors");
    write_file(
        &missing,
        &[("input", Dtype::F32, SHAPE.to_vec(), f32_bytes(&p.x))],
    );
    let wrong_dtype = dir.join("wrong.safetensors");
    write_file(
        &wrong_dtype,
        &[
            ("input", Dtype::F32, SHAPE.to_vec(), f32_bytes(&p.x)),
            (
                "position_ids",
                Dtype::F32,
                vec![3, SHAPE[0], SHAPE[1]],
                f32_bytes(&vec![0.0; 3 * SHAPE[0] * SHAPE[1]]),
            ),
            (
                "cos_cache",
                Dtype::F32,
                vec![MAX_POSITIONS, 4],
                f32_bytes(&p.cos),
            ),
            (
                "sin_cache",
                Dtype::F32,
                vec![MAX_POSITIONS, 4],
                f32_bytes(&p.sin),
            ),
        ],
    );
    let garbage = dir.join("garbage.safetensors");
    std::fs::write(&garbage, b"not a tensor file").expect("writable");
    let file_cases = [
        (&far, "stream 1 (height), batch 1, token 2"),
        (&negative, "position_ids"),
        (&missing, "no tensor `position_ids`"),
        (&wrong_dtype, "expected I64"),
        (&garbage, "not a safetensors file"),
    ];
    for (file, needle) in file_cases {
        let file = file.to_str().expect("utf-8");
        expect_usage_error(&mrope_call(file, out, &MROPE_ATTRS), needle);
    }
}

/// Runs `run-op` on `tensors` and returns the `output` tensor and the printed line.
fn run_to_output(
    test: &str,
    op: &str,
    tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)],
    attrs: &[&str],
) -> (Vec<f64>, String) {
    let dir = scratch(test);
    let (inputs, outputs) = (dir.join("in.safetensors"), dir.join("out.safetensors"));
    write_file(&inputs, tensors);
    let mut args = vec![
        op,
        "--inputs",
        inputs.to_str().expect("utf-8"),
        "--output",
        outputs.to_str().expect("utf-8"),
    ];
    for attr in attrs {
        args.extend(["--attr", attr]);
    }
    let output = run_op(&args);
    assert!(
        output.status.success(),
        "run-op {op} failed: {}",
        stderr(&output)
    );
    let bytes = std::fs::read(&outputs).expect("output written");
    let file = SafeTensors::deserialize(&bytes).expect("output is safetensors");
    let view = file
        .tensor("output")
        .expect("output tensor named by its role");
    let got = view
        .data()
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    (got, String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn runs_bias_softmax_with_data_and_bias_roles() {
    let mut rng = DataRng::new(21);
    let data = round_to::<f32>(&rng.uniform(6 * 10, -3.0, 3.0));
    let bias = round_to::<f32>(&rng.uniform(2 * 10, -3.0, 3.0));
    let tensors = [
        ("data", Dtype::F32, vec![2, 3, 10], f32_bytes(&data)),
        ("bias", Dtype::F32, vec![2, 1, 10], f32_bytes(&bias)),
    ];
    let (got, line) = run_to_output(
        "softmax",
        "com.microsoft.BiasSoftmax",
        &tensors,
        &["axis=-1", "is_inner_broadcast=1"],
    );
    assert!(line.contains("variant adaptive_row"), "{line}");
    let want =
        kernels_tools::reference::bias_softmax::bias_softmax(&data, &[2, 3, 10], &bias, -1, true)
            .expect("reference");
    let comparison = compare(
        &got,
        &want,
        Tolerance::bias_softmax(kernel_runtime::DType::F32),
    );
    assert!(comparison.passed(), "{comparison}");
    // The required attribute is named in the error when left out.
    let dir = scratch("softmax-missing");
    let path = dir.join("in.safetensors");
    write_file(&path, &tensors);
    let out = dir.join("out.safetensors");
    expect_usage_error(
        &[
            "BiasSoftmax",
            "--inputs",
            path.to_str().expect("utf-8"),
            "--output",
            out.to_str().expect("utf-8"),
            "--attr",
            "axis=-1",
        ],
        "is_inner_broadcast",
    );
}

#[test]
fn runs_gated_relative_position_bias_with_its_roles() {
    use kernels_tools::reference::gated_relative_position_bias::{Problem, Sizes};
    let sizes = Sizes {
        batch: 2,
        seq: 5,
        heads: 2,
        head_size: 4,
        proj: 4,
    };
    let mut rng = DataRng::new(22);
    let mut draw = |n: usize, lo: f64, hi: f64| round_to::<f32>(&rng.uniform(n, lo, hi));
    let query = draw(2 * 5 * 8, -1.0, 1.0);
    let query_bias = draw(8, -0.5, 0.5);
    let rel_pos = draw(2 * 5 * 5, -2.0, 2.0);
    let weight = draw(4 * 4, -0.5, 0.5);
    let bias = draw(4, -0.5, 0.5);
    let eco_a = draw(2, 0.5, 1.5);
    let tensors = [
        ("query_layer", Dtype::F32, vec![2, 5, 8], f32_bytes(&query)),
        ("query_bias", Dtype::F32, vec![8], f32_bytes(&query_bias)),
        ("rel_pos", Dtype::F32, vec![1, 2, 5, 5], f32_bytes(&rel_pos)),
        ("weight", Dtype::F32, vec![4, 4], f32_bytes(&weight)),
        ("bias", Dtype::F32, vec![4], f32_bytes(&bias)),
        ("eco_a", Dtype::F32, vec![1, 2, 1, 1], f32_bytes(&eco_a)),
    ];
    let (got, line) = run_to_output(
        "gated",
        "com.microsoft.GatedRelativePositionBias",
        &tensors,
        &["num_heads=2"],
    );
    assert!(line.contains("variant row"), "{line}");
    let problem = Problem {
        sizes,
        query: &query,
        query_bias: &query_bias,
        rel_pos: &rel_pos,
        weight: &weight,
        bias: &bias,
        eco_a: &eco_a,
    };
    let want = problem.output().expect("reference");
    let comparison = compare(
        &got,
        &want,
        Tolerance::gated_bias(kernel_runtime::DType::F32),
    );
    assert!(comparison.passed(), "{comparison}");
}

/// The outputs are written beside the destination and renamed: a write that fails (here the
/// destination is a folder) leaves neither a partial file nor an empty one.
#[test]
fn a_failed_write_leaves_no_file() {
    let dir = scratch("failed_write");
    let inputs = dir.join("in.safetensors");
    let taken = dir.join("taken");
    std::fs::create_dir_all(&taken).expect("scratch folder");
    let p = problem();
    write_problem(&inputs, &p, &p.positions);
    let output = run_op(&mrope_args(
        inputs.to_str().expect("utf-8 path"),
        taken.to_str().expect("utf-8 path"),
    ));
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
    assert!(
        error_line(&output).contains("is a folder"),
        "{}",
        stderr(&output)
    );
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .expect("scratch folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["in.safetensors", "taken"],
        "files left beside the output"
    );
    assert!(taken.is_dir(), "the folder in the way is untouched");
}

#[test]
fn malformed_lists_are_refused_by_name() {
    let dir = scratch("lists");
    let (good, out) = (dir.join("good.safetensors"), dir.join("out.safetensors"));
    let p = problem();
    write_problem(&good, &p, &p.positions);
    let (good, out) = (good.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    for list in ["[[2,1,1", "[2,1,1", "2,1,1]", "2,,1,1", "2,1,1,"] {
        let section = format!("mrope_section={list}");
        expect_usage_error(
            &mrope_call(good, out, &["num_heads=2", &section]),
            "mrope_section",
        );
    }
}

#[test]
fn a_file_whose_shape_disagrees_with_its_data_names_the_tensor() {
    // `bias` claims 2×1×10 floats over 60 bytes: the safetensors crate's own error names no
    // tensor.
    let dir = scratch("lying-shape");
    let (input, out) = (dir.join("in.safetensors"), dir.join("out.safetensors"));
    let mut header = r#"{"data":{"dtype":"F32","shape":[2,3,10],"data_offsets":[0,240]},"bias":{"dtype":"F32","shape":[2,1,10],"data_offsets":[240,300]}}"#.to_owned();
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend(std::iter::repeat_n(0u8, 300));
    std::fs::write(&input, file).expect("file is writable");
    let input = input.to_str().expect("utf-8 path");
    let out = out.to_str().expect("utf-8 path");
    let args = [
        "BiasSoftmax",
        "--inputs",
        input,
        "--output",
        out,
        "--attr",
        "axis=-1",
    ];
    expect_usage_error(
        &args,
        "tensor `bias`: shape [2, 1, 10] of F32 takes 80 bytes",
    );
}

/// An empty output is the op's whole answer: nothing is planned or dispatched, even where the
/// row count is beyond what a shader's u32 can hold (its plan would fail).
#[test]
fn an_empty_output_is_written_without_planning_a_dispatch() {
    let dir = scratch("huge-empty");
    let (input, out) = (dir.join("in.safetensors"), dir.join("out.safetensors"));
    write_file(
        &input,
        &[
            ("data", Dtype::F32, vec![1 << 40, 2, 0], Vec::new()),
            ("bias", Dtype::F32, vec![1, 2, 0], Vec::new()),
        ],
    );
    let output = run_op(&[
        "BiasSoftmax",
        "--inputs",
        input.to_str().expect("utf-8 path"),
        "--output",
        out.to_str().expect("utf-8 path"),
        "--attr",
        "axis=-1",
        "--attr",
        "is_inner_broadcast=1",
    ]);
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let bytes = std::fs::read(&out).expect("output written");
    let file = SafeTensors::deserialize(&bytes).expect("output is safetensors");
    let view = file.tensor("output").expect("the output by its role");
    assert_eq!(view.shape(), [1 << 40, 2, 0]);
    assert!(view.data().is_empty());
}

/// The MRotaryEmbedding arguments of a valid call, reading `inputs` and writing `output`.
fn mrope_args<'a>(inputs: &'a str, output: &'a str) -> Vec<&'a str> {
    mrope_call(inputs, output, &MROPE_ATTRS)
}

/// FUZZ R-1: the output replaces nothing but a regular file.
#[cfg(unix)]
#[test]
fn outputs_never_replace_special_files_links_or_inputs() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = scratch("special_outputs");
    let inputs = dir.join("in.safetensors");
    let p = problem();
    write_problem(&inputs, &p, &p.positions);
    let input_bytes = std::fs::read(&inputs).expect("input");
    let inputs_s = inputs.to_str().expect("utf-8 path");

    // A FIFO where the output goes (as a device node would be): refused, left in place.
    let fifo = dir.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    expect_usage_error(
        &mrope_args(inputs_s, fifo.to_str().expect("utf-8")),
        "is a FIFO",
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("still there")
            .file_type()
            .is_fifo()
    );

    // A dangling link: refused, the link stays.
    let link = dir.join("dangling");
    std::os::unix::fs::symlink(dir.join("nowhere"), &link).expect("link");
    expect_usage_error(
        &mrope_args(inputs_s, link.to_str().expect("utf-8")),
        "symbolic link",
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("still there")
            .file_type()
            .is_symlink()
    );

    // The input file itself: refused, the input unchanged.
    expect_usage_error(&mrope_args(inputs_s, inputs_s), "is the input file");
    assert_eq!(std::fs::read(&inputs).expect("input"), input_bytes);

    // A partial file someone left: not overwritten.
    let out = dir.join("out.safetensors");
    let partial = dir.join(".out.safetensors.partial");
    std::fs::write(&partial, "mine").expect("partial");
    expect_usage_error(
        &mrope_args(inputs_s, out.to_str().expect("utf-8")),
        "remove it first",
    );
    assert_eq!(std::fs::read_to_string(&partial).expect("kept"), "mine");
    assert!(!out.exists());

    // FUZZ R-3: a FIFO as input is refused, not waited on.
    expect_usage_error(
        &mrope_args(fifo.to_str().expect("utf-8"), out.to_str().expect("utf-8")),
        "a FIFO, not a regular file",
    );
}

/// FUZZ R-2: a header naming a tensor twice is refused (the last entry would win).
#[test]
fn a_header_naming_a_tensor_twice_is_refused() {
    let dir = scratch("repeated_tensor");
    let inputs = dir.join("in.safetensors");
    let p = problem();
    write_problem(&inputs, &p, &p.positions);
    let bytes = std::fs::read(&inputs).expect("input");
    let len = usize::try_from(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
        .expect("header length");
    let header = std::str::from_utf8(&bytes[8..8 + len]).expect("utf-8 header");
    // Repeat the `input` entry under its own name, keeping the header's length.
    let start = header.find("\"input\"").expect("an input entry");
    let end = start + header[start..].find('}').expect("entry end") + 1;
    let entry = &header[start..end];
    let repeated = format!("{{{entry},{}", &header[1..]);
    let mut file = (repeated.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(repeated.as_bytes());
    file.extend_from_slice(&bytes[8 + len..]);
    std::fs::write(&inputs, file).expect("write");
    let out = dir.join("out.safetensors");
    expect_usage_error(
        &mrope_args(
            inputs.to_str().expect("utf-8"),
            out.to_str().expect("utf-8"),
        ),
        "names tensor `input` twice",
    );
}

/// FUZZ R-4 and R-5: argument errors are one line; an integer beyond 64 bits says so.
#[test]
fn argument_errors_are_one_line() {
    let dir = scratch("one_line");
    let inputs = dir.join("in.safetensors");
    let p = problem();
    write_problem(&inputs, &p, &p.positions);
    let out = dir.join("out.safetensors");
    let (i, o) = (
        inputs.to_str().expect("utf-8"),
        out.to_str().expect("utf-8"),
    );
    for args in [
        vec![
            "MRotaryEmbedding",
            "--inputs",
            i,
            "--output",
            o,
            "--repeat",
            "100001",
        ],
        vec!["MRotaryEmbedding", "--output", o],
    ] {
        let output = run_op(&args);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let lines: Vec<&str> = stderr_lines(&output);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("run-op: "), "{lines:?}");
    }
    let mut args = mrope_args(i, o);
    args.extend(["--attr", "interleaved=9223372036854775808"]);
    expect_usage_error(
        &args,
        "9223372036854775808 is outside the 64-bit integer range",
    );
}

fn stderr_lines(output: &Output) -> Vec<&str> {
    std::str::from_utf8(&output.stderr)
        .expect("utf-8")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// FUZZ F-15: a file holding one input under both its bind key and its ONNX name was run
/// with one of them, saying nothing of the other.
#[test]
fn an_input_under_both_of_its_names_is_refused() {
    let named_twice = kernels_tools::ops().find_map(|entry| {
        let role = entry
            .inputs
            .iter()
            .find(|r| !r.onnx.is_empty() && r.onnx != r.role)?;
        Some((entry.qualified_name, role.role, role.onnx))
    });
    let Some((op, role, onnx)) = named_twice else {
        eprintln!("skipped: no op here names an input differently in ONNX (the Hub's ops)");
        return;
    };
    let dir = scratch("named_twice");
    let inputs = dir.join("in.safetensors");
    let values = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
    write_file(
        &inputs,
        &[
            (role, Dtype::F32, vec![4], values.clone()),
            (onnx, Dtype::F32, vec![4], values),
        ],
    );
    let out = dir.join("out.safetensors");
    let args = [
        op,
        "--inputs",
        inputs.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ];
    expect_usage_error(
        &args,
        &format!("as `{role}` (its bind key) and as `{onnx}` (its ONNX name)"),
    );
    assert_eq!(stderr_lines(&run_op(&args)).len(), 1);
}
