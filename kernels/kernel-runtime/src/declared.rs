//! What a shader declares at each `@group(0) @binding(i)`: the address space and the least
//! bytes a buffer bound there must hold, read from its WGSL declaration.
//!
//! WebGPU refuses a storage binding smaller than one element of the array the shader declares
//! (16 bytes for `array<vec4<f32>>`), where a tensor's own range may be smaller (an empty
//! tensor's is 4 bytes). The recorder widens such ranges, or refuses them with a typed error,
//! before wgpu sees them; that needs the declared element, which only the shader text has.
//! Generated preludes write every declaration on one line in one form
//! (`@group(0) @binding(3) var<storage, read> a: array<vec4<f32>>;`), and a type this reader
//! does not know (a struct) is left without a least size: wgpu still checks it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::sync::lock;

/// One binding's declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// The type as the shader writes it (`array<vec4<f32>>`), for errors.
    pub(crate) ty: String,
    /// Bound `read_write` (an output, a tensor written in place, an intermediate).
    pub(crate) writable: bool,
    /// The least bytes a binding of this type holds: one element of a runtime-sized array;
    /// `None` for a type this reader does not size.
    pub(crate) min_bytes: Option<u64>,
}

/// The declarations of one shader, by binding index.
pub(crate) type Declarations = Arc<HashMap<u32, Declared>>;

/// The declarations of `source`, read once per shader text (the cache is keyed by the
/// address of the `'static` text, so two shaders never share an entry by accident).
pub(crate) fn declarations(source: &'static str) -> Declarations {
    static CACHE: OnceLock<Mutex<HashMap<(usize, usize), Declarations>>> = OnceLock::new();
    let key = (source.as_ptr() as usize, source.len());
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(found) = lock(cache).get(&key) {
        return found.clone();
    }
    let read: Declarations = Arc::new(read(source));
    lock(cache).insert(key, read.clone());
    read
}

/// Every `@binding(i) var<…> name: type;` of `source`.
fn read(source: &str) -> HashMap<u32, Declared> {
    let mut out = HashMap::new();
    let mut rest = source;
    while let Some(at) = rest.find("@binding(") {
        rest = &rest[at + "@binding(".len()..];
        let Some((index, after)) = rest.split_once(')') else {
            break;
        };
        let Ok(index) = index.trim().parse::<u32>() else {
            continue;
        };
        let Some(declared) = declaration(after) else {
            continue;
        };
        out.insert(index, declared);
    }
    out
}

/// The declaration after `@binding(i)`: `var<space[, access]> name: type;`.
fn declaration(text: &str) -> Option<Declared> {
    let text = text.trim_start();
    let text = text.strip_prefix("@group(0)").unwrap_or(text).trim_start();
    let text = text.strip_prefix("var")?.trim_start();
    let (space, text) = match text.strip_prefix('<') {
        Some(inner) => inner.split_once('>')?,
        None => ("", text),
    };
    let writable = space.split(',').any(|part| part.trim() == "read_write");
    let (_, text) = text.split_once(':')?;
    let (ty, _) = text.split_once(';')?;
    let ty: String = ty.split_whitespace().collect();
    let min_bytes = least_bytes(&ty);
    Some(Declared {
        ty,
        writable,
        min_bytes,
    })
}

/// The least bytes a binding of `ty` holds: an array's is one element's stride (a
/// runtime-sized array may be bound with one element), a fixed array's its whole size.
fn least_bytes(ty: &str) -> Option<u64> {
    match generic(ty, "array") {
        Some(inner) => match inner.rsplit_once(',') {
            Some((element, count)) if count.trim().parse::<u64>().is_ok() => {
                let count: u64 = count.trim().parse().ok()?;
                stride(element)?.checked_mul(count)
            }
            _ => stride(inner),
        },
        None => layout(ty).map(|(size, _)| size),
    }
}

/// The stride of `ty` as an array element: its size rounded up to its alignment.
fn stride(ty: &str) -> Option<u64> {
    let (size, align) = layout(ty)?;
    Some(size.next_multiple_of(align))
}

/// The size and alignment of a scalar, vector or atomic type (WGSL's memory layout rules).
fn layout(ty: &str) -> Option<(u64, u64)> {
    if let Some(inner) = generic(ty, "atomic") {
        return layout(inner);
    }
    for (lanes, prefix) in [(2, "vec2"), (3, "vec3"), (4, "vec4")] {
        let Some(rest) = ty.strip_prefix(prefix) else {
            continue;
        };
        let scalar = match rest {
            "f" | "i" | "u" => 4,
            "h" => 2,
            _ => scalar(generic(rest, "")?)?,
        };
        // vec3 aligns as vec4: its stride in an array is four lanes.
        let align = scalar * if lanes == 2 { 2 } else { 4 };
        return Some((scalar * lanes, align));
    }
    scalar(ty).map(|size| (size, size))
}

fn scalar(ty: &str) -> Option<u64> {
    match ty {
        "f32" | "i32" | "u32" => Some(4),
        "f16" => Some(2),
        _ => None,
    }
}

/// The parameter text of `name<…>` (`name` empty: of `<…>` alone).
fn generic<'t>(ty: &'t str, name: &str) -> Option<&'t str> {
    ty.strip_prefix(name)?.strip_prefix('<')?.strip_suffix('>')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_strides_of_every_form_the_prelude_writes() {
        for (ty, bytes) in [
            ("array<f32>", 4),
            ("array<f16>", 2),
            ("array<u32>", 4),
            ("array<atomic<u32>>", 4),
            ("array<vec4<f32>>", 16),
            ("array<vec4<f16>>", 8),
            ("array<vec2<f16>>", 4),
            ("array<vec2<f32>>", 8),
            ("array<vec3<f32>>", 16),
            ("array<vec4f>", 16),
            ("array<vec4h>", 8),
            ("array<f32,8>", 32),
            ("array<vec3<f32>,2>", 32),
            ("vec4<f32>", 16),
            ("u32", 4),
        ] {
            assert_eq!(least_bytes(ty), Some(bytes), "{ty}");
        }
        assert_eq!(least_bytes("Params"), None);
        assert_eq!(least_bytes("array<Row>"), None);
    }

    #[test]
    fn declarations_are_read_by_binding() {
        let source = "struct Params {\n    n: u32,\n}\n\n\
            @group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n\
            @group(0) @binding(1) var<storage, read_write> y: array< f16 >;\n\
            @group(0) @binding(2) var<uniform> params: Params;\n\
            @compute @workgroup_size(64) fn main() {}\n";
        let read = read(source);
        assert_eq!(read.len(), 3);
        assert_eq!(
            read[&0],
            Declared {
                ty: "array<vec4<f32>>".into(),
                writable: false,
                min_bytes: Some(16),
            }
        );
        assert_eq!(read[&1].ty, "array<f16>");
        assert!(read[&1].writable);
        assert_eq!(read[&1].min_bytes, Some(2));
        assert_eq!(read[&2].min_bytes, None);
        assert!(!read[&2].writable);
    }

    #[test]
    fn text_that_is_not_a_declaration_is_skipped() {
        let read = read("// @binding(x) var a: f32;\n@binding(4) fn f() {}\n@binding(");
        assert!(read.is_empty());
    }
}
