//! Chromium's subgroup matrices in, naga's cooperative matrices (or the reason) out.

use super::*;

/// `(Chromium's WGSL, what lowering makes of it)`: an `Err:` prefix is the start of the error.
const CASES: &[(&str, &str)] = &[
    // Not enabled: left alone.
    ("fn f() {}", "unchanged"),
    (
        "enable f16;\nenable chromium_experimental_subgroup_matrix;\ndiagnostic(off, chromium.subgroup_matrix_uniformity);\nfn f() {}",
        "enable f16;\nenable wgpu_cooperative_matrix;\n\nfn f() {}",
    ),
    (
        "enable f16, chromium_experimental_subgroup_matrix;",
        "enable f16, wgpu_cooperative_matrix;",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\n@diagnostic(off, chromium.subgroup_matrix_uniformity) fn f() {}",
        "enable wgpu_cooperative_matrix;\n fn f() {}",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\n@diagnostic(off, derivative_uniformity) fn f() {}",
        "enable wgpu_cooperative_matrix;\n@diagnostic(off, derivative_uniformity) fn f() {}",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nvar m: subgroup_matrix_result<f32, 8, 8>;",
        "enable wgpu_cooperative_matrix;\nvar m: coop_mat8x8<f32, C>;",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nconst D: u32 = 16u;\nvar m = subgroup_matrix_left<f16, D, 16>();",
        "enable wgpu_cooperative_matrix;\nconst D: u32 = 16u;\nvar m = coop_mat16x16<f16, A>();",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet a = subgroupMatrixLoad<subgroup_matrix_left<f16, 8, 8>>(&tile, off + 8u * K, false, K);",
        "enable wgpu_cooperative_matrix;\nlet a = coopLoadT<coop_mat8x8<f16, A>>(&(tile)[off + 8u * K], K);",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet b = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&(sb.values), f(i, j), true, 16u);",
        "enable wgpu_cooperative_matrix;\nlet b = coopLoad<coop_mat16x16<f16, B>>(&((sb.values))[f(i, j)], 16u);",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet b = subgroupMatrixLoad<subgroup_matrix_right<f16, 8, 8>>(p, 0u, true, 8u);",
        "enable wgpu_cooperative_matrix;\nlet b = coopLoad<coop_mat8x8<f16, B>>(&(*p)[0u], 8u);",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nsubgroupMatrixStore(&scratch[s], 0u, c, false, 8u);",
        "enable wgpu_cooperative_matrix;\ncoopStoreT(c, &(scratch[s])[0u], 8u);",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nc = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<subgroup_matrix_left<f16, 8, 8>>(&t,\n  0u, false, 8u), b, c);",
        "enable wgpu_cooperative_matrix;\nc = coopMultiplyAdd(coopLoadT<coop_mat8x8<f16, A>>(&(t)[0u], 8u), b, c)\n;",
    ),
    // Line breaks inside a call are kept, after it.
    (
        "enable chromium_experimental_subgroup_matrix;\nsubgroupMatrixStore(&o,\n 0u,\n c,\n true,\n 8u);\nx = 1;",
        "enable wgpu_cooperative_matrix;\ncoopStore(c, &(o)[0u], 8u)\n\n\n\n;\nx = 1;",
    ),
    // The current form: the layout in the template list.
    (
        "enable chromium_experimental_subgroup_matrix;\nlet a = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&t, o, 40u);",
        "enable wgpu_cooperative_matrix;\nlet a = coopLoadT<coop_mat16x16<f16, A>>(&(t)[o], 40u);",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nsubgroupMatrixStore<col_major>(&s, 0u, acc, 16u);",
        "enable wgpu_cooperative_matrix;\ncoopStore(acc, &(s)[0u], 16u);",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nsubgroupMatrixStore<diagonal>(&s, 0u, acc, 16u);",
        "Err:`subgroupMatrixStore`'s layout is `diagonal`",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet a = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&t, o, false, 40u);",
        "Err:`subgroupMatrixLoad<M, layout>` takes (pointer, offset, stride), not 4 arguments",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nvar m: subgroup_matrix_left<f16, 16, 8>;",
        "Err:a 16×8 subgroup matrix",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nvar m: subgroup_matrix_left<f16, 4, 4>;",
        "Err:a 4×4 subgroup matrix",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet a = subgroupMatrixLoad<subgroup_matrix_left<f16, 8, 8>>(&t, 0u, flag, 8u);",
        "Err:`subgroupMatrixLoad`'s col_major is `flag`",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet r = subgroupMatrixMultiply<f32>(a, b);",
        "Err:`subgroupMatrixMultiply` has no counterpart",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet a = subgroupMatrixLoad<subgroup_matrix_left<f16, 8, 8>>(&t, 0u, false);",
        "Err:`subgroupMatrixLoad` takes (pointer, offset, col_major, stride), not 3 arguments",
    ),
    (
        "enable chromium_experimental_subgroup_matrix;\nlet a = subgroupMatrixLoad<subgroup_matrix_left<f16, 8, 8>>(&t, (0u, false, 8u);",
        "Err:an unclosed bracket",
    ),
];

#[test]
fn lowers_each_construct() {
    for (input, expected) in CASES {
        let got = match lower(input) {
            Ok(None) => "unchanged".to_owned(),
            Ok(Some(lowered)) => lowered.text,
            Err(message) => format!("Err:{message}"),
        };
        if let Some(prefix) = expected.strip_prefix("Err:") {
            assert!(
                got.starts_with(&format!("Err:{prefix}")),
                "{input}\n got: {got}\nwant: Err:{prefix}…"
            );
        } else {
            assert_eq!(&got, expected, "{input}");
        }
        if !got.starts_with("Err:") && got != "unchanged" {
            assert_eq!(
                got.matches('\n').count(),
                input.matches('\n').count(),
                "lines are kept: {input}"
            );
        }
    }
}

/// A tiled GEMM in Chromium's form, as packages write them: lowered, it validates with naga's
/// cooperative-matrix capability, translates for Vulkan and Metal, and performs the
/// multiply-accumulate shapes it names.
#[test]
fn lowered_gemm_validates_and_names_its_shapes() {
    // naga's subgroup operations need no `enable` (rendering removes the browser's).
    let chromium = "enable f16;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
const TILE: u32 = 16u;
var<workgroup> tile_a: array<f16, 256>;
var<workgroup> scratch: array<array<f32, 256>, 2>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(subgroup_size) sg_size: u32) {
  var acc: subgroup_matrix_result<f32, TILE, TILE>;
  let s = li / sg_size;
  for (var k = 0u; k < 64u; k += TILE) {
    tile_a[li] = a[k * 16u + li];
    workgroupBarrier();
    let l = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&tile_a, 0u, false, TILE);
    let r = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&a, k * 16u, true, 64u);
    acc = subgroupMatrixMultiplyAccumulate(l, r, acc);
    workgroupBarrier();
  }
  subgroupMatrixStore(&scratch[s % 2u], 0u, acc, false, TILE);
  out[li] = scratch[0][li];
}
";
    let lowered = lower(chromium).expect("lowers").expect("enabled").text;
    let features = ["chromium-experimental-subgroup-matrix", "subgroups"]
        .map(str::to_owned)
        .into_iter()
        .collect();
    let (module, info, _) = super::super::validate::validate(&lowered, true, &features)
        .unwrap_or_else(|e| panic!("{}\n{lowered}", e.message));
    assert_eq!(
        configs(&module, &info),
        [SubgroupMatrixConfig {
            component: MatrixScalar::F16,
            result: MatrixScalar::F32,
            m: 16,
            n: 16,
            k: 16,
        }]
    );
    let uses = super::super::targets::Uses {
        f16: true,
        subgroups: true,
        cooperative_matrix: true,
    };
    let translated = super::super::targets::translate(&module, &info, &[], uses)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!translated.spirv.is_empty());
    use crate::shader::{Target, TargetStatus};
    for (target, status) in &translated.status {
        let applies = matches!(target, Target::SpirV | Target::Msl);
        assert_eq!(*status == TargetStatus::Translated, applies, "{target}");
    }
    // Without the feature the variant must require, naga refuses the shader.
    let none = Default::default();
    assert!(super::super::validate::validate(&lowered, true, &none).is_err());
}
