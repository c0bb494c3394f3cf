//! `run-op --random`: inputs drawn by shape from a seed, alone or beside a file's; the usage
//! errors of a bad `--random`; the seed reproducing a run byte for byte.

use kernels_tools::data::{DataRng, round_to};
use safetensors::{Dtype, SafeTensors};

use super::{expect_usage_error, f32_bytes, run_op, scratch, stderr, stderr_lines, write_file};

/// The MRotaryEmbedding arguments of a call whose every input is drawn at random (its index
/// input `position_ids` in 0..=3, rows of the 4-row caches), then `extra`.
fn mrope_random_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "MRotaryEmbedding",
        "--random",
        "input=float32:2x3x16",
        "--random",
        "position_ids=int64:3x2x3",
        "--random",
        "cos_cache=float32:4x4",
        "--random",
        "sin_cache=float32:4x4",
        "--attr",
        "num_heads=2",
        "--attr",
        "mrope_section=2,1,1",
    ];
    args.extend_from_slice(extra);
    args
}

/// `--random` alone: every input drawn by shape, no file read, no output written, and the
/// summary line printed as for files.
#[test]
fn random_inputs_run_without_files() {
    let output = run_op(&mrope_random_args(&[]));
    assert!(
        output.status.success(),
        "run-op failed: {}",
        stderr(&output)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(
        lines[0].starts_with("com.microsoft.MRotaryEmbedding: adapter ")
            && lines[0].contains("variant rank3")
            && lines[0].contains("GPU time"),
        "{stdout}"
    );
}

/// `--inputs` and `--random` together: the file gives one input, `--random` the other, and the
/// output is softmax rows (each sums to 1) of the two.
#[test]
fn random_inputs_join_the_inputs_of_a_file() {
    let dir = scratch("random_and_file");
    let (inputs, out) = (dir.join("in.safetensors"), dir.join("out.safetensors"));
    let data = round_to::<f32>(&DataRng::new(5).uniform(2 * 3 * 10, -3.0, 3.0));
    write_file(
        &inputs,
        &[("data", Dtype::F32, vec![2, 3, 10], f32_bytes(&data))],
    );
    let output = run_op(&[
        "BiasSoftmax",
        "--inputs",
        inputs.to_str().expect("utf-8"),
        "--random",
        "bias=float32:2x1x10",
        "--output",
        out.to_str().expect("utf-8"),
        "--attr",
        "axis=-1",
        "--attr",
        "is_inner_broadcast=1",
    ]);
    assert!(
        output.status.success(),
        "run-op failed: {}",
        stderr(&output)
    );
    let bytes = std::fs::read(&out).expect("output written");
    let file = SafeTensors::deserialize(&bytes).expect("output is safetensors");
    let view = file.tensor("output").expect("the output by its role");
    assert_eq!(view.shape(), [2, 3, 10]);
    let got: Vec<f32> = (view.data().chunks_exact(4))
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for row in got.chunks_exact(10) {
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-4, "a row sums to {sum}: {row:?}");
    }
}

/// An empty dimension (`0`) draws nothing and writes the op's empty answer; no sizes at all
/// is a rank-0 tensor, which reaches the op's contract as rank 0.
#[test]
fn random_inputs_take_empty_dimensions_and_rank_0() {
    let dir = scratch("random_empty");
    let out = dir.join("out.safetensors");
    let attrs = ["--attr", "axis=-1", "--attr", "is_inner_broadcast=1"];
    let mut args = vec![
        "BiasSoftmax",
        "--random",
        "data=float32:2x0x8",
        "--random",
        "bias=float32:1x0x8",
        "--output",
        out.to_str().expect("utf-8"),
    ];
    args.extend(attrs);
    let output = run_op(&args);
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("com.microsoft.BiasSoftmax"));
    let bytes = std::fs::read(&out).expect("output written");
    let file = SafeTensors::deserialize(&bytes).expect("output is safetensors");
    let view = file.tensor("output").expect("the output by its role");
    assert_eq!(view.shape(), [2, 0, 8]);
    assert!(view.data().is_empty());

    let mut args = vec![
        "BiasSoftmax",
        "--random",
        "data=float32:",
        "--random",
        "bias=float32:",
    ];
    args.extend(attrs);
    expect_usage_error(&args, "ranks.data = 0");
}

/// Each bad `--random`, an input given twice and an input given by nothing are usage errors
/// (status 2) of one line naming the argument or the input.
#[test]
fn bad_random_arguments_are_usage_errors_naming_them() {
    let call = [
        "BiasSoftmax",
        "--attr",
        "axis=-1",
        "--attr",
        "is_inner_broadcast=1",
        "--random",
        "bias=float32:2x1x10",
    ];
    let cases = [
        (
            "foo=float32:2",
            "run-op: --random `foo=float32:2`: BiasSoftmax has no input `foo` (its inputs: data, bias)",
        ),
        (
            "data=float64:2",
            "run-op: --random `data=float64:2`: unknown dtype `float64` (one of float32, float16,",
        ),
        (
            "data=int32:2",
            "input `data` of BiasSoftmax takes float32 or float16, not int32",
        ),
        (
            "data=float32:2xax3",
            "size `a` of `2xax3` is not a whole number",
        ),
        ("data=float32:2xx3", "`2xx3` has an empty size"),
        (
            "data=float32:99999999999999999999",
            "size 99999999999999999999 of `99999999999999999999` is more than the largest size",
        ),
        (
            "data=float32:4294967296x4294967296",
            "shape [4294967296, 4294967296] of float32 has more bytes than an address can count",
        ),
        (
            "data=float32:100000x100000",
            "40000000000 bytes on the device, more than its storage buffer limit",
        ),
        ("data=float32", "`float32` is not DTYPE:DIMS"),
        ("data", "--random `data`: not ROLE=DTYPE:DIMS"),
        (
            "bias=float32:2",
            "--random `bias=float32:2`: input `bias` is already drawn by --random `bias=float32:2x1x10`",
        ),
    ];
    for (random, needle) in cases {
        let mut args = call.to_vec();
        args.extend(["--random", random]);
        expect_usage_error(&args, needle);
        // One line of run-op's own: drivers may print before it once a device is opened.
        let output = run_op(&args);
        let own = stderr_lines(&output)
            .into_iter()
            .filter(|l| l.starts_with("run-op:"));
        assert_eq!(own.count(), 1, "{random}");
    }
    // An input given by nothing.
    expect_usage_error(
        &call,
        "BiasSoftmax needs input `data` (its inputs: data, bias): give it with --inputs FILE or --random data=DTYPE:DIMS",
    );
    // An input given by the file and by `--random`.
    let dir = scratch("random_twice");
    let inputs = dir.join("in.safetensors");
    let values = f32_bytes(&[0.5; 20]);
    write_file(
        &inputs,
        &[
            ("data", Dtype::F32, vec![2, 1, 10], values.clone()),
            ("bias", Dtype::F32, vec![2, 1, 10], values),
        ],
    );
    let path = inputs.to_str().expect("utf-8");
    let mut args = call.to_vec();
    args.extend(["--inputs", path]);
    expect_usage_error(
        &args,
        &format!(
            "--random `bias=float32:2x1x10`: input `bias` is also in {path} (as `bias`); give it once"
        ),
    );
}

/// `--seed` fixes the drawn values: the same seed writes the same bytes, another seed others,
/// and no `--seed` is seed 0.
#[test]
fn the_seed_reproduces_random_inputs() {
    let dir = scratch("random_seed");
    let outputs = |seed: Option<&str>, name: &str| -> Vec<u8> {
        let out = dir.join(name);
        let mut args = mrope_random_args(&["--output", out.to_str().expect("utf-8")]);
        if let Some(seed) = seed {
            args.extend(["--seed", seed]);
        }
        let output = run_op(&args);
        assert!(
            output.status.success(),
            "run-op failed: {}",
            stderr(&output)
        );
        std::fs::read(&out).expect("output written")
    };
    let first = outputs(Some("7"), "a.safetensors");
    assert_eq!(first, outputs(Some("7"), "b.safetensors"));
    assert_ne!(first, outputs(Some("8"), "c.safetensors"));
    assert_eq!(
        outputs(None, "d.safetensors"),
        outputs(Some("0"), "e.safetensors")
    );
}
