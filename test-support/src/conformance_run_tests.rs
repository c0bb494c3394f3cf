//! The runner's GPU-free parts: keys paired with roles, attributes converted, failures
//! printed. Cases run on a GPU are tested in the `conformance` crate, which has ops.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::conformance::parse;

const ROLES: &[RoleInfo] = &[
    RoleInfo::float("input", "T", ""),
    RoleInfo::index("position_ids", ""),
    RoleInfo::float("cos_cache", "T", ""),
];

#[test]
fn keys_pair_with_roles_exactly_or_without_case_and_separators() {
    assert_eq!(role_of(ROLES, "cos_cache"), Ok(2));
    assert_eq!(role_of(ROLES, "positionIds"), Ok(1));
    assert_eq!(role_of(ROLES, "Position-IDs"), Ok(1));
    assert_eq!(
        role_of(ROLES, "x"),
        Err("`x` is none of the op's roles (input, position_ids, cos_cache)".to_owned())
    );
    let twins = [
        RoleInfo::float("a_b", "T", ""),
        RoleInfo::float("ab", "T", ""),
    ];
    assert_eq!(role_of(&twins, "ab"), Ok(1));
    assert!(role_of(&twins, "AB").unwrap_err().contains("several"));
}

#[test]
fn attributes_take_the_runtime_forms() {
    let value = |text: &str| attr_value(&serde_json::from_str(text).unwrap());
    assert_eq!(value("3"), Ok(AttrValue::Int(3)));
    assert_eq!(value("-1"), Ok(AttrValue::Int(-1)));
    assert_eq!(value("0.5"), Ok(AttrValue::Float(0.5)));
    assert_eq!(value("1.0"), Ok(AttrValue::Float(1.0)));
    assert_eq!(value("true"), Ok(AttrValue::Int(1)));
    assert_eq!(value("[16, 24, 24]"), Ok(AttrValue::Ints(vec![16, 24, 24])));
    assert_eq!(value("[]"), Ok(AttrValue::Ints(Vec::new())));
    assert_eq!(value(r#""relu""#), Ok(AttrValue::Str("relu".into())));
    assert_eq!(
        value("[1, 2.5]"),
        Err("item 1, 2.5, is not an int64: lists are of integers".to_owned())
    );
    assert_eq!(
        value("18446744073709551615"),
        Err("18446744073709551615 is past the int64 range".to_owned())
    );
    assert_eq!(
        value("null"),
        Err("null is not an attribute value".to_owned())
    );
}

/// Inputs are put in the op's order whatever the case's order; each role once, none missing.
#[test]
fn inputs_follow_the_manifest_order() {
    let tensor = |key: &str| {
        format!(
            r#""{key}": {{"dtype": "float32", "shape": [1], "data": {{"kind": "values", "values": [1]}}}}"#
        )
    };
    let case = |keys: &[&str]| {
        let inputs: Vec<String> = keys.iter().map(|k| tensor(k)).collect();
        let text = format!(
            r#"{{"cases": [{{"name": "c", "inputs": {{{}}}, "outputs": {{}}}}]}}"#,
            inputs.join(", ")
        );
        parse(&text).unwrap().cases.remove(0)
    };
    let shuffled = case(&["cos_cache", "input", "position_ids"]);
    let ordered = inputs_in_order(ROLES, &shuffled).unwrap();
    let keys: Vec<&str> = ordered.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["input", "position_ids", "cos_cache"]);
    let error = |keys: &[&str]| match inputs_in_order(ROLES, &case(keys)) {
        Err(FailureKind::Keys(why)) => why,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        error(&["input", "cos_cache"]),
        "no input for the role(s) position_ids"
    );
    assert_eq!(
        error(&["input", "positionIds", "position_ids", "cos_cache"]),
        "two inputs are the role `position_ids`"
    );
    assert!(matches!(
        outputs_by_role(ROLES, &case(&["input"])),
        Err(FailureKind::Keys(why)) if why == "the case checks no output"
    ));
}

#[test]
fn failures_say_op_case_variant_and_what() {
    let failure = CaseFailure {
        op: "test.Op",
        case: "c".into(),
        variant: Some("v"),
        kind: Box::new(FailureKind::Values {
            output: "y".into(),
            tolerance: 0.001,
            first: vec![Mismatch {
                index: 3,
                got: 1.5,
                want: 1.0,
            }],
            count: 2,
            of: 10,
        }),
    };
    assert_eq!(
        failure.to_string(),
        "`test.Op` case `c` (variant `v`): output `y`: 2 of 10 values refused (tolerance 0.001): [3] got 1.5, want 1; …"
    );
    let failure = CaseFailure {
        variant: None,
        kind: Box::new(FailureKind::UnsupportedDtype {
            tensor: "x".into(),
            dtype: "int8".into(),
        }),
        ..failure
    };
    assert_eq!(
        failure.to_string(),
        "`test.Op` case `c`: `x` is int8, a dtype kernel-runtime has no tensors of"
    );
}

/// A reference of one output is given the inputs owned, by role, and its result is the case's
/// only output; its error keeps the causes an alternate `Display` adds (as `anyhow`'s does).
#[test]
fn one_output_references_take_owned_inputs_and_keep_causes() {
    struct Chain;
    impl fmt::Display for Chain {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(if f.alternate() {
                "no reference: no such op"
            } else {
                "no reference"
            })
        }
    }
    let (a, b) = ([1.0, 2.0], [10.0]);
    let inputs = [
        RefInput {
            role: "a",
            shape: &[2],
            values: &a,
        },
        RefInput {
            role: "b",
            shape: &[1],
            values: &b,
        },
    ];
    let attrs = [("scale".to_owned(), AttrValue::Float(0.5))];
    let sum = one_output_reference(&inputs, &attrs, |owned, attrs| {
        assert_eq!(owned[0], ("a".to_owned(), vec![2], a.to_vec()));
        assert_eq!(owned[1], ("b".to_owned(), vec![1], b.to_vec()));
        assert_eq!(attrs, [("scale".to_owned(), AttrValue::Float(0.5))]);
        Ok::<_, Chain>(owned[0].2.iter().map(|x| x + owned[1].2[0]).collect())
    });
    assert_eq!(sum, Ok(vec![vec![11.0, 12.0]]));
    let failed = one_output_reference(&inputs, &attrs, |_, _| Err::<Vec<f64>, _>(Chain));
    assert_eq!(failed, Err("no reference: no such op".to_owned()));
}
