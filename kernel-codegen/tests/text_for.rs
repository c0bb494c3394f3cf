//! A shader with Chromium's subgroup matrices is rendered twice: once as browsers compile it,
//! once for naga with `env.wgsl.subgroupMatrixVectorPointers` true, lowered to naga's
//! cooperative matrices. The repository's own tensor-core MatMul reads the name, and its
//! aligned variants keep vector workgroup tiles natively and scalar ones for browsers.

use std::fs;
use std::path::Path;

/// `packages/kernels.MatMul` as the generator's inputs, its subgroup-matrix template edited
/// by `edit`.
fn mat_mul(edit: impl FnOnce(String) -> String) -> kernel_codegen::Inputs {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packages/kernels.MatMul");
    let read = |name: &str| fs::read_to_string(dir.join(name)).expect("the package is readable");
    let mut inputs = kernel_codegen::Inputs {
        strict: true,
        ..Default::default()
    };
    inputs.packages.push(kernel_codegen::Package {
        dir: "kernels.MatMul".to_owned(),
        manifest: read("manifest.json"),
        ..Default::default()
    });
    for (name, text) in [
        ("matmul-simt.wgsl.jinja", read("matmul-simt.wgsl.jinja")),
        (
            "matmul-subgroup-matrix.wgsl.jinja",
            edit(read("matmul-subgroup-matrix.wgsl.jinja")),
        ),
    ] {
        inputs
            .templates
            .insert(format!("kernels.MatMul/{name}"), text);
    }
    inputs
}

/// The declaration of workgroup tile `name` in `text`.
fn tile(text: &str, name: &str) -> String {
    let start = format!("var<workgroup> {name}: ");
    let line = text.lines().find(|l| l.starts_with(&start));
    line.unwrap_or_else(|| panic!("no `{name}` in\n{text}"))[start.len()..].to_owned()
}

#[test]
fn aligned_tiles_are_vectors_for_naga_and_scalars_for_browsers() {
    let output = kernel_codegen::generate(&mat_mul(|t| t)).unwrap_or_else(|d| panic!("{d}"));
    let mut aligned = 0;
    let mut scalar = 0;
    for generated in output
        .shaders
        .iter()
        .filter(|s| s.path.contains("subgroup_matrix"))
    {
        let shader = &generated.shader;
        let browser = (shader.chromium_text.as_deref())
            .unwrap_or_else(|| panic!("{}: no browser text", generated.path));
        assert!(
            browser.contains("subgroupMatrixLoad<"),
            "{}",
            generated.path
        );
        assert!(shader.text.contains("coopLoadT<"), "{}", generated.path);
        // 128 × (32 + 8) and 32 × (128 + 8) halves at the default tunables.
        assert_eq!(
            tile(browser, "tile_a"),
            "array<f16, 5120>;",
            "{}",
            generated.path
        );
        assert_eq!(
            tile(browser, "tile_b"),
            "array<f16, 4352>;",
            "{}",
            generated.path
        );
        if generated.path.contains("_vec4") {
            aligned += 1;
            assert_eq!(tile(&shader.text, "tile_a"), "array<vec4<f16>, 1280>;");
            assert_eq!(tile(&shader.text, "tile_b"), "array<vec4<f16>, 1088>;");
            // Offsets and strides counted in vectors.
            assert!(
                shader.text.contains("A_STRIDE / 4u)"),
                "{}\n{}",
                generated.path,
                shader.text
            );
        } else {
            scalar += 1;
            assert_eq!(tile(&shader.text, "tile_a"), "array<f16, 5120>;");
            assert!(
                !shader.text.contains("/ 4u, A_STRIDE"),
                "{}",
                generated.path
            );
        }
    }
    assert!(
        aligned > 0 && scalar > 0,
        "{aligned} aligned, {scalar} scalar"
    );
}

#[test]
fn a_naga_text_without_the_matrices_of_the_browsers_is_refused() {
    let enable = "enable chromium_experimental_subgroup_matrix;";
    let inputs = mat_mul(|t| {
        assert!(t.contains(enable));
        t.replace(
            enable,
            &format!("{{% if not env.wgsl.subgroupMatrixVectorPointers %}}{enable}{{% endif %}}"),
        )
    });
    let diagnostics = kernel_codegen::generate(&inputs).expect_err("refused");
    let text = diagnostics.to_string();
    assert!(
        text.contains("matmul-subgroup-matrix.wgsl.jinja")
            && text.contains("the text rendered for naga")
            && text.contains("variant `subgroup_matrix`, pass `main`"),
        "{text}"
    );
}
