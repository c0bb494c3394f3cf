//! naga validation of rendered shaders with exactly the capabilities their variant needs, and
//! reflection of the validated module cross-checked against the manifest's bindings.

use std::collections::BTreeSet;

use naga::valid::{ValidationFlags, Validator};
use naga::{AddressSpace, ScalarKind, StorageAccess, TypeInner};

use crate::model::Access;
use crate::templates::prelude::{self, ResolvedBinding};

/// What the shader was validated with and what reflection found.
#[derive(Debug, Clone)]
pub struct Reflection {
    /// `@workgroup_size` of `main` when it is a literal (not an override).
    pub workgroup_size: Option<[u32; 3]>,
    /// Byte size of each uniform struct, by binding index.
    pub uniform_sizes: Vec<(u32, u32)>,
    /// Index of `main` among the module's entry points.
    pub entry_index: usize,
}

/// Why a shader does not validate: naga's report (with the rendered excerpt) and the line of
/// `source` it points at, where it points at one.
#[derive(Debug, Clone)]
pub struct Invalid {
    pub message: String,
    pub line: Option<usize>,
}

impl From<&str> for Invalid {
    fn from(message: &str) -> Self {
        Invalid {
            message: message.to_owned(),
            line: None,
        }
    }
}

/// The stack naga's validation and translation run on. Its front end and back ends recurse
/// once per level of an expression, about 32 KB a level in a debug build, so a shader as
/// deep as rendering accepts (`templates/nesting.rs`) would not fit a test thread's 2 MiB;
/// this fits it several times over, and a shallow shader only reserves it.
const NAGA_STACK_BYTES: usize = 64 << 20;

/// `f` run on a thread of its own with [`NAGA_STACK_BYTES`] of stack (on this thread where
/// none can be had); a panic in it is resumed here.
pub fn on_large_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let work = std::sync::Mutex::new(Some(f));
    let take = || work.lock().ok().and_then(|mut f| f.take());
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .stack_size(NAGA_STACK_BYTES)
            .spawn_scoped(scope, || take().map(|f| f()));
        let done = match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => None,
        };
        match done {
            Some(value) => value,
            None => take()
                .map(|f| f())
                .expect("the work runs on one of the two threads"),
        }
    })
}

/// Validates `source`; errors are messages with a WGSL line where naga gives one.
pub fn validate(
    source: &str,
    f16: bool,
    features: &BTreeSet<String>,
) -> Result<(naga::Module, naga::valid::ModuleInfo, Reflection), Invalid> {
    on_large_stack(|| validate_here(source, f16, features))
}

fn validate_here(
    source: &str,
    f16: bool,
    features: &BTreeSet<String>,
) -> Result<(naga::Module, naga::valid::ModuleInfo, Reflection), Invalid> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| Invalid {
        message: e.emit_to_string(source),
        line: e.location(source).map(|l| l.line_number as usize),
    })?;
    let info = Validator::new(ValidationFlags::all(), prelude::capabilities(f16, features))
        .validate(&module)
        .map_err(|e| Invalid {
            message: e.emit_to_string(source),
            line: e.location(source).map(|l| l.line_number as usize),
        })?;
    let (entry_index, entry) = module
        .entry_points
        .iter()
        .enumerate()
        .find(|(_, e)| e.name == "main" && e.stage == naga::ShaderStage::Compute)
        .ok_or("the shader has no `@compute fn main` entry point")?;
    let workgroup_size = entry
        .workgroup_size_overrides
        .is_none()
        .then_some(entry.workgroup_size);
    let reflection = Reflection {
        workgroup_size,
        uniform_sizes: Vec::new(),
        entry_index,
    };
    Ok((module, info, reflection))
}

/// Compares the module's resource variables with the manifest's bindings: names, binding
/// numbers, address spaces and access, element types, uniform member names and offsets.
pub fn cross_check(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    bindings: &[ResolvedBinding<'_>],
    reflection: &mut Reflection,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut found = BTreeSet::new();
    let entry_info = info.get_entry_point(reflection.entry_index);
    for (handle, var) in module.global_variables.iter() {
        let Some(res) = &var.binding else { continue };
        let name = var.name.as_deref().unwrap_or("<unnamed>");
        if entry_info[handle].is_empty() {
            // wgpu derives the bind group layout from what `main` uses; an unused binding
            // would make the generated bind group fail at run time.
            continue;
        }
        let Some(expected) = bindings
            .iter()
            .find(|b| res.group == 0 && b.index == res.binding)
        else {
            problems.push(format!(
                "shader declares `{name}` at @group({}) @binding({}), which the manifest does not list",
                res.group, res.binding
            ));
            continue;
        };
        found.insert(expected.index);
        if expected.binding.name != name {
            problems.push(format!(
                "@binding({}) is `{name}` in the shader but `{}` in the manifest",
                res.binding, expected.binding.name
            ));
        }
        let inner = &module.types[var.ty].inner;
        match (expected.binding.access, var.space) {
            (Access::Uniform, AddressSpace::Uniform) => {
                let TypeInner::Struct { members, span } = inner else {
                    problems.push(format!("uniform `{name}` is not a struct"));
                    continue;
                };
                reflection.uniform_sizes.push((expected.index, *span));
                let fields = expected
                    .binding
                    .params
                    .as_ref()
                    .map(|p| p.fields.as_slice())
                    .unwrap_or_default();
                if members.len() != fields.len() {
                    problems.push(format!(
                        "uniform `{name}` has {} members in the shader, {} fields in the manifest",
                        members.len(),
                        fields.len()
                    ));
                }
                for (i, (member, field)) in members.iter().zip(fields).enumerate() {
                    let member_name = member.name.as_deref().unwrap_or("");
                    let scalar = scalar_name(&module.types[member.ty].inner);
                    if member_name != field.name
                        || scalar != Some(field.wgsl_type)
                        || member.offset != 4 * i as u32
                    {
                        problems.push(format!(
                            "uniform `{name}` member {i} is `{member_name}: {}` at offset {} in the shader; the manifest says `{}: {}` at offset {}",
                            scalar.unwrap_or("?"),
                            member.offset,
                            field.name,
                            field.wgsl_type,
                            4 * i
                        ));
                    }
                }
            }
            (Access::ReadOnly | Access::ReadWrite, AddressSpace::Storage { access }) => {
                let writable = access.contains(StorageAccess::STORE);
                if writable != (expected.binding.access == Access::ReadWrite) {
                    problems.push(format!(
                        "`{name}` is {} in the shader but {} in the manifest",
                        if writable { "read_write" } else { "read-only" },
                        if expected.binding.access == Access::ReadWrite {
                            "`storage`"
                        } else {
                            "`read-only-storage`"
                        }
                    ));
                }
                let element = match inner {
                    TypeInner::Array { base, .. } => match &module.types[*base].inner {
                        TypeInner::Vector {
                            size: naga::VectorSize::Quad,
                            scalar,
                        } => scalar_name(&TypeInner::Scalar(*scalar)).map(|s| format!("vec4<{s}>")),
                        TypeInner::Vector {
                            size: naga::VectorSize::Bi,
                            scalar,
                        } => scalar_name(&TypeInner::Scalar(*scalar)).map(|s| format!("vec2<{s}>")),
                        TypeInner::Atomic(scalar) => {
                            scalar_name(&TypeInner::Scalar(*scalar)).map(|s| format!("atomic<{s}>"))
                        }
                        other => scalar_name(other).map(str::to_owned),
                    },
                    _ => None,
                };
                let want = expected.element.map(|d| {
                    if expected.binding.atomic {
                        format!("atomic<{}>", d.wgsl_name())
                    } else if expected.lanes > 1 {
                        format!("vec{}<{}>", expected.lanes, d.wgsl_name())
                    } else {
                        d.wgsl_name().to_owned()
                    }
                });
                if element != want {
                    problems.push(format!(
                        "`{name}` is `array<{}>` in the shader but the manifest's element type is `{}`",
                        element.as_deref().unwrap_or("?"),
                        want.as_deref().unwrap_or("?")
                    ));
                }
            }
            (want, space) => problems.push(format!(
                "`{name}` is in address space {space:?} in the shader but {want:?} in the manifest"
            )),
        }
    }
    for binding in bindings {
        if !found.contains(&binding.index) {
            problems.push(format!(
                "the manifest's binding {} `{}` is not declared (or not used) by the shader",
                binding.index, binding.binding.name
            ));
        }
    }
    problems
}

fn scalar_name(inner: &TypeInner) -> Option<&'static str> {
    match inner {
        TypeInner::Scalar(s) => Some(match (s.kind, s.width) {
            (ScalarKind::Float, 4) => "f32",
            (ScalarKind::Float, 2) => "f16",
            (ScalarKind::Uint, 4) => "u32",
            (ScalarKind::Sint, 4) => "i32",
            _ => return None,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::templates::nesting::{MAX_NESTING, deepest};

    /// FUZZ F-11: naga overflowed the stack on a long sum. Rendering refuses a shader nested
    /// deeper than the bound; one at the bound validates and translates, here on a test
    /// thread's 2 MiB, where a debug build of naga's writers overflowed at 60 levels.
    #[test]
    fn a_shader_as_deep_as_accepted_validates_and_translates() {
        let sum = format!("x{}", " + x".repeat(MAX_NESTING - 3));
        let source = format!(
            "@group(0) @binding(0) var<storage, read_write> o: array<f32>;\n\
             @compute @workgroup_size(1) fn main() {{ let x = o[1]; o[0] = {sum}; }}\n"
        );
        assert_eq!(deepest(&source).0, MAX_NESTING);
        let (module, info, _) =
            super::validate(&source, false, &Default::default()).expect("validates");
        let translated = super::super::targets::translate(&module, &info, &[], Default::default())
            .expect("translates");
        assert!(!translated.spirv.is_empty());
    }
}
