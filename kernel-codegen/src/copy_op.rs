//! The op model of a one-pass copy package in the Hub dialect, for unit tests of the passes
//! after the front end: a test gives the keys its case needs (`attributes`, `derive`, the
//! variant's `when` and `derive`), and the ports, bindings, pass and template are always the
//! same copy of `a` into `c`.

use serde_json::{Value, json};

use crate::model::Op;
use crate::{Inputs, Package};

/// A copy of binding `a` into `c`, one element a thread.
const TEMPLATE: &str = "{{ env.wgsl.resourceDeclarations }}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&c)) {
    c[id.x] = a[id.x];
  }
}
";

/// The op the front end builds of the copy manifest with `manifest`'s keys set at the top
/// level and `variant`'s in its one variant. Panics with the diagnostics if it has any.
pub fn copy_op(manifest: Value, variant: Value) -> Op {
    let mut text = json!({
        "domain": "ai.onnx",
        "name": "Copy",
        "sinceVersion": 1,
        "inputs": { "a": { "onnx": "A", "dtype": "T" } },
        "outputs": { "c": { "onnx": "C", "dtype": "T", "rank": "ranks.a", "shape": "shapes.a" } },
        "typeConstraints": { "T": ["float32"] },
        "bindings": { "a": {}, "c": {} },
        "variants": [{
            "id": "main",
            "passes": [{
                "id": "main",
                "name": "Copy",
                "shader": "copy.wgsl.jinja",
                "bindings": ["a", "c"],
                "dispatch": { "x": "min(ceilDiv(numel(shapes.a), 64), 65535)" }
            }]
        }]
    });
    let merge = |into: &mut Value, keys: Value| {
        if let (Some(into), Value::Object(keys)) = (into.as_object_mut(), keys) {
            into.extend(keys);
        }
    };
    merge(&mut text, manifest);
    merge(&mut text["variants"][0], variant);
    let inputs = Inputs {
        packages: vec![Package {
            dir: "copy".to_owned(),
            manifest: text.to_string(),
            ..Package::default()
        }],
        templates: [("copy/copy.wgsl.jinja".to_owned(), TEMPLATE.to_owned())].into(),
        ..Inputs::default()
    };
    let mut ops = crate::models(&inputs).unwrap_or_else(|d| panic!("{d}"));
    ops.pop().expect("one op")
}
