//! The op model of a one-pass copy package, for unit tests of the passes after the front end:
//! a test writes the manifest of the case it needs, and the template is always the same copy.

use crate::model::Op;
use crate::{Inputs, Package};

/// A copy of binding `a` into `c`, one element a thread, as `copy.wgsl.jinja`.
const TEMPLATE: &str = "{{ env.wgsl.resourceDeclarations }}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&c)) {
    c[id.x] = a[id.x];
  }
}
";

/// The op the front end builds of `manifest`, a package in folder `copy` whose passes run
/// `copy.wgsl.jinja` with bindings `a` and `c`. Panics with the diagnostics if it has any.
pub fn copy_op(manifest: &str) -> Op {
    let inputs = Inputs {
        packages: vec![Package {
            dir: "copy".to_owned(),
            manifest: manifest.to_owned(),
            ..Package::default()
        }],
        templates: [("copy/copy.wgsl.jinja".to_owned(), TEMPLATE.to_owned())].into(),
        ..Inputs::default()
    };
    let mut ops = crate::models(&inputs).unwrap_or_else(|d| panic!("{d}"));
    ops.pop().expect("one op")
}
