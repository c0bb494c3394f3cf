//! Reading and comparing `test.json` suites: small suites written here, and the Hub's own
//! suite for `ai.onnx.Add` where `../shared/hub` (or `$KERNEL_HUB_DIR`) has it.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use super::*;

fn suite(cases: &str) -> Result<Suite, SuiteError> {
    parse(&format!(
        r##"{{"fixtureArrays": {{"ramp": [0, 1, 2, 3]}}, "cases": [{cases}]}}"##
    ))
}

#[test]
fn values_refs_and_fills_are_resolved_and_rounded() {
    let suite = suite(
        r##"{"name": "a", "inputs": {
             "x": {"dtype": "float16", "shape": [2], "data": {"kind": "values", "values": [0.1, 65519]}},
             "r": {"dtype": "int8", "shape": [2, 2], "data": {"kind": "values", "values": {"$ref": "#/fixtureArrays/ramp"}}},
             "f": {"dtype": "float32", "shape": [3], "data": {"kind": "fillFloat32", "sinStep": 0.5, "cosStep": 0.25, "scale": 2}}
           },
           "outputs": {"y": {"dtype": "float32", "shape": [2], "tolerance": 0.001}},
           "skipGpu": {"category": "todo", "reason": "why"}}"##,
    )
    .unwrap();
    let case = &suite.cases[0];
    assert_eq!(
        case.inputs[0].values,
        [half::f16::from_f64(0.1).to_f64(), 65504.0]
    );
    assert_eq!(case.inputs[1].values, [0.0, 1.0, 2.0, 3.0]);
    let fill: Vec<f64> = (0..3)
        .map(|i| {
            let i = f64::from(i);
            f64::from((2.0 * ((i * 0.5).sin() + (i * 0.25).cos())) as f32)
        })
        .collect();
    assert_eq!(case.inputs[2].values, fill);
    assert_eq!(case.outputs[0].tolerance, 0.001);
    assert_eq!(case.skip_gpu.as_deref(), Some("todo: why"));
}

#[test]
fn bad_suites_are_refused_at_their_path() {
    let error = |cases: &str| suite(cases).unwrap_err().to_string();
    assert!(
        error(r##"{"name": "a", "inputs": {}, "outputs": {}, "expected": 1}"##)
            .starts_with("cases[0].expected: unknown field `expected`"),
    );
    assert_eq!(
        error(
            r##"{"name": "a", "inputs": {"x": {"dtype": "int8", "shape": [1], "data": {"kind": "values", "values": [200]}}}, "outputs": {}}"##
        ),
        "cases[0].inputs.x.data: value 0, 200, is not a int8"
    );
    assert_eq!(
        error(
            r##"{"name": "a", "inputs": {"x": {"dtype": "float32", "shape": [3], "data": {"kind": "values", "values": {"$ref": "#/fixtureArrays/ramp"}}}}, "outputs": {}}"##
        ),
        "cases[0].inputs.x.data: 4 values for a shape of 3 elements"
    );
    assert_eq!(
        error(
            r##"{"name": "a", "inputs": {"x": {"dtype": "bfloat16", "shape": [], "data": {"kind": "values", "values": [1]}}}, "outputs": {}}"##
        ),
        "cases[0].inputs.x.dtype: unknown dtype `bfloat16`"
    );
}

#[test]
fn comparison_follows_the_suite_rules() {
    let expected = |tolerance: f64, allow_nan: bool| Expected {
        key: "y".into(),
        dtype: "float32".into(),
        shape: vec![3],
        tolerance,
        values: None,
        allow_nan,
    };
    let inf = f64::INFINITY;
    assert!(
        expected(0.1, true)
            .compare(&[1.05, inf, f64::NAN], &[1.0, inf, f64::NAN])
            .is_ok()
    );
    assert!(
        expected(0.1, false)
            .compare(&[1.0, inf, f64::NAN], &[1.0, inf, f64::NAN])
            .is_err()
    );
    assert!(
        expected(0.0, true)
            .compare(&[1.0, -inf, 0.0], &[1.0, inf, 0.0])
            .is_err()
    );
    assert!(
        expected(0.0, true)
            .compare(&[f64::NAN, 0.0, 0.0], &[1.0, 0.0, 0.0])
            .is_err()
    );
    assert_eq!(
        expected(0.01, true).compare(&[1.0, 2.5, 3.0], &[1.0, 2.0, 3.0]),
        Err("`y`[1] is 2.5, expected 2 (tolerance 0.01)".to_owned())
    );
}

/// The Hub's suite for Add reads whole: 51 cases, 3 not run on GPUs, expected data in 3, and
/// the dtype and data-kind counts the package's study gives.
#[test]
fn the_hub_suite_for_add_reads() {
    let dir = std::env::var_os("KERNEL_HUB_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/hub"),
        std::path::PathBuf::from,
    );
    let Ok(text) = std::fs::read_to_string(dir.join("ai.onnx.Add.test.json")) else {
        eprintln!(
            "skipped: no ai.onnx.Add.test.json in {} (set KERNEL_HUB_DIR)",
            dir.display()
        );
        return;
    };
    let suite = parse(&text).unwrap();
    assert_eq!(suite.cases.len(), 51);
    assert_eq!(
        suite.cases.iter().filter(|c| c.skip_gpu.is_some()).count(),
        3
    );
    let with_data = suite
        .cases
        .iter()
        .filter(|c| c.outputs.iter().any(|o| o.values.is_some()));
    assert_eq!(with_data.count(), 3);
    let mut dtypes: IndexMap<&str, usize> = IndexMap::new();
    for input in suite.cases.iter().flat_map(|c| &c.inputs) {
        *dtypes.entry(input.dtype.as_str()).or_default() += 1;
    }
    dtypes.sort_keys();
    let expected = [
        ("float16", 6),
        ("float32", 64),
        ("int16", 2),
        ("int32", 12),
        ("int8", 8),
        ("uint32", 4),
        ("uint8", 6),
    ];
    assert_eq!(dtypes.into_iter().collect::<Vec<_>>(), expected);
}

#[test]
fn int64_inputs_read_as_whole_numbers_a_double_holds() {
    let input = |values: &str| {
        suite(&format!(
            r##"{{"name": "a", "inputs": {{"p": {{"dtype": "int64", "shape": [2], "data": {{"kind": "values", "values": {values}}}}}}}, "outputs": {{}}}}"##
        ))
    };
    assert_eq!(
        input("[-3, 9007199254740992]").unwrap().cases[0].inputs[0].values,
        [-3.0, 9_007_199_254_740_992.0]
    );
    assert_eq!(
        input("[1, 1.5]").unwrap_err().to_string(),
        "cases[0].inputs.p.data: value 1, 1.5, is not a int64"
    );
    assert_eq!(
        input("[1, 1e17]").unwrap_err().to_string(),
        "cases[0].inputs.p.data: value 1, 100000000000000000, is not a int64"
    );
}

/// A reference's values as an output holds them: floats rounded, integers truncated and
/// wrapped to their width.
#[test]
fn reference_values_are_put_in_the_output_dtype() {
    assert_eq!(
        as_dtype(&[0.1, 65519.0], "float16"),
        Some(vec![half::f16::from_f64(0.1).to_f64(), 65504.0])
    );
    assert_eq!(as_dtype(&[0.1], "float32"), Some(vec![f64::from(0.1f32)]));
    assert_eq!(
        as_dtype(&[127.0, 128.0, -129.0, 300.0, 2.7, -2.7], "int8"),
        Some(vec![127.0, -128.0, 127.0, 44.0, 2.0, -2.0])
    );
    assert_eq!(as_dtype(&[256.0, -1.0], "uint8"), Some(vec![0.0, 255.0]));
    assert_eq!(
        as_dtype(&[4_294_967_296.0, -1.0], "uint32"),
        Some(vec![0.0, 4_294_967_295.0])
    );
    assert_eq!(as_dtype(&[1.0], "bfloat16"), None);
}

#[test]
fn mismatches_list_the_first_by_index_and_count_all() {
    let expected = Expected {
        key: "y".into(),
        dtype: "float32".into(),
        shape: vec![5],
        tolerance: 0.1,
        values: None,
        allow_nan: true,
    };
    let (first, count) =
        expected.mismatches(&[1.0, 9.0, 3.0, 9.0, 9.0], &[1.0, 2.0, 3.05, 4.0, 5.0], 2);
    assert_eq!(count, 3);
    assert_eq!(
        first,
        [
            Mismatch {
                index: 1,
                got: 9.0,
                want: 2.0
            },
            Mismatch {
                index: 3,
                got: 9.0,
                want: 4.0
            }
        ]
    );
    assert!(expected.agrees(f64::NAN, f64::NAN));
    assert!(!expected.agrees(f64::NAN, 1.0));
}
