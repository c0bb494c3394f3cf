use super::*;

const SMALL: &str = r#"{
    "name": "Copy", "sinceVersion": 1,
    "inputs": {"x": {"onnx": "input", "dtype": "T"}},
    "outputs": {"y": {"onnx": "output", "dtype": "T", "rank": "ranks.x", "shape": "shapes.x"}},
    "attributes": {"axis": {"default": -1}},
    "typeConstraints": {"T": ["float32"]},
    "tunables": {"WORKGROUP_SIZE": {"default": 64, "description": "threads"}},
    "derive": {"count": "numel(shapes.x)", "lanes": 32, "wide": true, "dims": ["dim(shapes.x, 0)", "1"]},
    "bindings": {"x": {"elementType": "$T"}, "params": {"struct": [{"name": "count", "type": "u32", "value": "count"}]}},
    "variants": [{
        "id": "main", "when": ["count > 0"],
        "requires": {"features": ["subgroups"]},
        "tunables": {"WORKGROUP_SIZE": {"default": 128}},
        "intermediates": [{"id": "partial", "dtype": "float32", "shape": "[count]"}],
        "passes": [
            {"id": "a", "name": "Copy", "shader": "copy.wgsl.jinja",
             "bindings": ["x", {"name": "partial", "buffer": "storage", "elementType": "f32"}, "params"],
             "dispatch": {"x": "ceilDiv(count, 64)", "z": 1}},
            {"id": "b", "name": "Copy", "shader": "copy.wgsl.jinja", "derive": {"op": "\"copy\""},
             "bindings": [{"arg": "y", "elementType": "$T"}],
             "dispatch": {"threads": "count", "workgroupSize": 64}},
            {"id": "c", "name": "Copy", "shader": "copy.wgsl.jinja",
             "bindings": [], "dispatch": {"workgroups": 4}}
        ]
    }]
}"#;

#[test]
fn reads_every_form_of_the_flexible_fields() {
    let m = parse(SMALL).expect("parses");
    assert_eq!(m.domain, "ai.onnx");
    assert_eq!(m.attributes["axis"].default, serde_json::json!(-1));
    assert_eq!(m.tunables["WORKGROUP_SIZE"].default, 64);
    let derive: Vec<_> = m.derive.iter().collect();
    assert_eq!(
        derive,
        [
            (
                &"count".to_owned(),
                &DeriveValue::Expr("numel(shapes.x)".into())
            ),
            (&"lanes".to_owned(), &DeriveValue::Int(32)),
            (&"wide".to_owned(), &DeriveValue::Bool(true)),
            (
                &"dims".to_owned(),
                &DeriveValue::List(vec!["dim(shapes.x, 0)".into(), "1".into()])
            ),
        ]
    );
    let variant = &m.variants[0];
    assert_eq!(variant.tunables["WORKGROUP_SIZE"].default, 128);
    let passes = &variant.passes;
    assert!(matches!(&passes[0].bindings[0], BindingRef::Handle(h) if h == "x"));
    assert!(matches!(
        &passes[0].bindings[1],
        BindingRef::Inline(Binding {
            buffer: Some(Buffer::Storage),
            ..
        })
    ));
    assert_eq!(
        passes[0].dispatch,
        Dispatch::Grid {
            x: IntOrExpr::Expr("ceilDiv(count, 64)".into()),
            y: None,
            z: Some(IntOrExpr::Int(1)),
        }
    );
    assert!(matches!(passes[1].dispatch, Dispatch::Threads { .. }));
    assert_eq!(passes[2].dispatch, Dispatch::Workgroups(IntOrExpr::Int(4)));
}

fn error(edit: (&str, &str)) -> (String, String) {
    let text = SMALL.replacen(edit.0, edit.1, 1);
    assert_ne!(text, SMALL, "the edit applies");
    parse(&text).expect_err("an error")
}

#[test]
fn an_unknown_key_inside_an_inline_binding_keeps_its_path() {
    let (path, message) = error((r#""buffer": "storage""#, r#""bufer": "storage""#));
    assert_eq!(path, "variants[0].passes[0].bindings[1].bufer");
    assert!(message.starts_with("unknown field `bufer`"), "{message}");
}

#[test]
fn draft_spellings_are_refused_in_the_runtimes_words() {
    let cases = [
        (
            (r#""axis": {"default": -1}"#, r#""axis": -1"#),
            "attributes.axis",
            "spec 2.0 removed: write {default}",
        ),
        (
            (r#""z": 1"#, r#""gridStride": true"#),
            "variants[0].passes[0].dispatch.gridStride",
            "spec 2.0 removed: write x = min(<count>, device.limits.maxComputeWorkgroupsPerDimension)",
        ),
        (
            (r#""id": "main","#, r#""id": "main", "constants": {},"#),
            "variants[0].constants",
            "spec 2.0 removed: write derive",
        ),
    ];
    for (edit, want_path, want) in cases {
        let (path, message) = error(edit);
        assert_eq!(path, want_path);
        assert!(message.starts_with(want), "{message}");
        assert!(message.contains(" at line "), "{message}");
    }
}

#[test]
fn mixed_dispatch_forms_are_refused() {
    let (path, message) = error((r#""workgroups": 4"#, r#""workgroups": 4, "y": 2"#));
    assert_eq!(path, "variants[0].passes[2].dispatch");
    assert!(
        message.starts_with("pinned axes (x, y, z) cannot be mixed"),
        "{message}"
    );
    let (_, message) = error((r#""workgroupSize": 64"#, r#""workgroupSiz": 64"#));
    assert!(
        message.starts_with("unknown field `workgroupSiz`"),
        "{message}"
    );
    let (_, message) = error((r#", "workgroupSize": 64"#, ""));
    assert!(
        message.starts_with("the threads shorthand needs both"),
        "{message}"
    );
}

#[test]
fn a_hub_manifest_is_recognised_by_its_inputs_map() {
    let declared = super::super::read(SMALL).expect("reads");
    assert_eq!(declared.dialect, super::super::Dialect::Hub);
    let broken = SMALL.replacen(r#""onnx": "input""#, r#""onx": "input""#, 1);
    let problems = super::super::read(&broken).expect_err("does not parse");
    assert_eq!(problems[0].0, "inputs.x.onx");
}

#[test]
fn the_declaration_resolves_bindings_dispatch_and_requirements_as_the_runtime_does() {
    let declared = super::super::read(SMALL).expect("reads");
    assert_eq!(declared.derive["dims"], "[(dim(shapes.x, 0)), (1)]");
    assert_eq!(declared.derive["wide"], "true");
    let variant = &declared.variants[0];
    assert_eq!(
        variant.when,
        ["count > 0", "device.features.has(\"subgroups\")"]
    );
    assert_eq!(variant.tunables["WORKGROUP_SIZE"], 128);
    let bindings = |p: usize| match &variant.passes[p].bindings {
        super::super::BindingsRef::Inline(list) => list.clone(),
        super::super::BindingsRef::Set(set) => panic!("a set {set}"),
    };
    // (WGSL name, arg, semantic, access, element type)
    let shown: Vec<_> = bindings(0)
        .into_iter()
        .chain(bindings(1))
        .map(|b| {
            (
                b.name,
                b.arg.unwrap_or_default(),
                b.semantic,
                b.buffer.ty,
                b.element_type.unwrap_or_default(),
            )
        })
        .collect();
    let row = |n: &str, a: &str, s: &str, t: &str, e: &str| {
        (
            n.to_owned(),
            a.to_owned(),
            s.to_owned(),
            t.to_owned(),
            e.to_owned(),
        )
    };
    assert_eq!(
        shown,
        [
            row("x", "x", "x", "read-only-storage", "$T"),
            row("partial", "", "partial", "storage", "f32"),
            row("params", "", "kernel.params", "uniform", ""),
            row("y", "y", "y", "storage", "$T"),
        ]
    );
    let dispatch = |p: usize| -> Vec<String> {
        ["x", "y", "z"]
            .iter()
            .map(|k| {
                variant.passes[p].dispatch[*k]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(dispatch(0), ["ceilDiv(count, 64)", "1", "1"]);
    assert_eq!(
        dispatch(1),
        [
            "min(ceilDiv(count, 64), 65535)",
            "ceilDiv(ceilDiv(count, 64), 65535)",
            "1"
        ]
    );
    assert_eq!(dispatch(2), ["min((4), 65535)", "ceilDiv((4), 65535)", "1"]);
    assert_eq!(variant.passes[1].source.inputs["op"], "\"copy\"");
}

#[test]
fn a_binding_naming_nothing_the_variant_has_is_an_error_at_its_path() {
    let broken = SMALL.replacen(r#"{"name": "partial", "#, r#"{"name": "partials", "#, 1);
    let problems = super::super::read(&broken).expect_err("unknown target");
    assert_eq!(problems[0].0, "variants[0].passes[0].bindings[1]");
    assert!(
        problems[0]
            .1
            .contains("`partials` is neither a port's bind key nor an intermediate"),
        "{}",
        problems[0].1
    );
    let broken = SMALL.replacen(r#"["x", {"#, r#"["xs", {"#, 1);
    let problems = super::super::read(&broken).expect_err("unknown handle");
    assert_eq!(
        problems[0],
        (
            "variants[0].passes[0].bindings[0]".to_owned(),
            "unknown binding handle `xs` (known: x, params)".to_owned()
        )
    );
}
