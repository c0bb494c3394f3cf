//! Static combinations that do not render or validate: left out with one warning per pass and
//! listed in the op's shader table with their error, or, with `Inputs::strict`, errors at the
//! template line. The package is `examples/dialect`'s `com.example.PartialCorner`, whose
//! template calls a helper it defines only for one value of a constant.

use std::fs;
use std::path::Path;

const PACKAGE: &str = "com.example.PartialCorner";

fn inputs(strict: bool) -> kernel_codegen::Inputs {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/dialect/packages")
        .join(PACKAGE);
    let read =
        |file: &str| fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut inputs = kernel_codegen::Inputs {
        strict,
        ..kernel_codegen::Inputs::default()
    };
    inputs.packages.push(kernel_codegen::Package {
        dir: PACKAGE.to_owned(),
        manifest: read("manifest.json"),
        ..kernel_codegen::Package::default()
    });
    inputs.templates.insert(
        format!("{PACKAGE}/partial-corner.wgsl.jinja"),
        read("partial-corner.wgsl.jinja"),
    );
    inputs
}

#[test]
fn failing_combinations_are_left_out_with_one_warning_per_pass() {
    let output = kernel_codegen::generate(&inputs(false)).unwrap_or_else(|e| panic!("{e}"));
    let [warning] = &output.warnings[..] else {
        panic!("one warning: {:?}", output.warnings)
    };
    assert!(
        warning.starts_with(&format!(
            "{PACKAGE}/manifest.json: variant `main`, pass `main`: 2 of the pass's 6 static combinations are not built"
        )),
        "{warning}"
    );
    assert!(
        warning.contains("(BITS = 3, HAS_FLOOR = 1), (BITS = 5, HAS_FLOOR = 1)"),
        "{warning}"
    );
    assert!(
        warning.contains(&format!(
            "{PACKAGE}/partial-corner.wgsl.jinja: line 22, column 3"
        )) && warning.contains("`clamp_low`"),
        "{warning}"
    );
    assert_eq!(output.shader_count, 3);
    let module = output
        .files
        .iter()
        .find(|f| f.path == "partial_corner.rs")
        .expect("the op's module");
    assert!(module.contents.contains("const LEFT_OUT: &[LeftOut]"));
    assert!(module.contents.contains("\"BITS = 5, HAS_FLOOR = 1\""));
}

#[test]
fn strict_generation_refuses_them_at_the_template_line() {
    let errors = kernel_codegen::generate(&inputs(true)).expect_err("strict");
    let text = errors.to_string();
    assert!(
        text.starts_with(&format!(
            "error: {PACKAGE}/partial-corner.wgsl.jinja: line 22, column 3: variant `main`, pass `main` (BITS = 3, HAS_FLOOR = 1): rendered shader does not validate"
        )),
        "{text}"
    );
    assert!(
        text.contains("(2 of the pass's 6 static combinations fail; the first is shown)"),
        "{text}"
    );
}

/// A package built whole has no left-out table: its module is as it was.
#[test]
fn a_package_built_whole_has_no_left_out_table() {
    let mut inputs = inputs(false);
    let template = inputs.templates.values_mut().next().expect("the template");
    *template = template.replace("  v = clamp_low(v);\n", "  v = max(v, params.lowest);\n");
    let output = kernel_codegen::generate(&inputs).unwrap_or_else(|e| panic!("{e}"));
    assert!(output.warnings.is_empty(), "{:?}", output.warnings);
    let module = output.files.iter().find(|f| f.path == "partial_corner.rs");
    assert!(
        !module
            .expect("the op's module")
            .contents
            .contains("LEFT_OUT")
    );
}
