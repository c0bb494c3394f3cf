//! The least bytes a buffer bound at each `@group(0)` binding must hold, read from the
//! validated module: WebGPU refuses a storage binding smaller than one element of the
//! runtime-sized array the shader declares (16 bytes for `array<vec4<f32>>`), where a tensor's
//! own range may be smaller (an empty tensor's is 4 bytes). The shader table carries these
//! sizes, so the runtime widens or refuses such a range before wgpu sees it, without reading
//! shader text at run time.

use naga::{Module, TypeInner};

/// Per binding of group 0 that `main` uses, its index and least size in bytes, sorted by
/// index.
pub fn least_sizes(
    module: &Module,
    info: &naga::valid::ModuleInfo,
    entry_index: usize,
) -> Vec<(u32, u32)> {
    let used = info.get_entry_point(entry_index);
    let mut sizes: Vec<(u32, u32)> = module
        .global_variables
        .iter()
        .filter(|(handle, _)| !used[*handle].is_empty())
        .filter_map(|(_, var)| {
            let binding = var.binding.as_ref().filter(|b| b.group == 0)?;
            Some((binding.binding, least_size(module, var.ty)))
        })
        .collect();
    sizes.sort_unstable();
    sizes
}

/// One element of a runtime-sized array; a struct ending in one, up to its first element;
/// any other type, its size.
fn least_size(module: &Module, ty: naga::Handle<naga::Type>) -> u32 {
    match &module.types[ty].inner {
        TypeInner::Array {
            size: naga::ArraySize::Dynamic,
            stride,
            ..
        } => *stride,
        TypeInner::Struct { members, span } => match members.last() {
            Some(last)
                if matches!(
                    module.types[last.ty].inner,
                    TypeInner::Array {
                        size: naga::ArraySize::Dynamic,
                        ..
                    }
                ) =>
            {
                last.offset + least_size(module, last.ty)
            }
            _ => *span,
        },
        other => other.size(module.to_ctx()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(source: &str) -> Vec<(u32, u32)> {
        let module = naga::front::wgsl::parse_str(source).expect("parses");
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .expect("validates");
        least_sizes(&module, &info, 0)
    }

    #[test]
    fn one_element_of_each_runtime_array_and_the_size_of_the_rest() {
        let found = sizes(
            "struct P { n: u32, s: f32 }\n\
             struct T { n: u32, data: array<vec4<f32>> }\n\
             @group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n\
             @group(0) @binding(1) var<storage, read> b: array<f32>;\n\
             @group(0) @binding(2) var<storage, read_write> c: array<vec3<f32>>;\n\
             @group(0) @binding(3) var<uniform> p: P;\n\
             @group(0) @binding(4) var<storage, read> t: T;\n\
             @group(0) @binding(5) var<storage, read> unused: array<f32>;\n\
             @compute @workgroup_size(1) fn main() {\n\
               c[0] = a[0].xyz + vec3(b[0] * p.s) + t.data[0].xyz;\n\
             }\n",
        );
        assert_eq!(found, [(0, 16), (1, 4), (2, 16), (3, 8), (4, 32)]);
    }
}
