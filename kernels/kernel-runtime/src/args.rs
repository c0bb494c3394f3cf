//! The arguments a plan is recorded with: one bound buffer range per op input and output,
//! with its role and how the op uses it, checked for aliasing before anything is recorded.

use crate::error::RuntimeError;
use crate::plan::{Binding, Plan, PlannedPass};

/// How an op uses an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Only read (an input).
    Read,
    /// Only written (an output).
    Write,
    /// Read and written in place (an `inout` tensor).
    ReadWrite,
}

impl Access {
    fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }
}

/// One argument of a plan, referred to by [`crate::Binding::Arg`] through its position in
/// the argument list: the op's inputs in manifest order, then its outputs.
#[derive(Debug, Clone)]
pub struct Arg<'a> {
    /// The manifest's role name, used in errors.
    pub role: &'static str,
    /// How the op uses it.
    pub access: Access,
    /// The bound range, or `None` for an optional input the caller left out (a pass that
    /// binds it is an error).
    pub binding: Option<wgpu::BufferBinding<'a>>,
}

impl<'a> Arg<'a> {
    /// An input the op reads.
    pub fn read(role: &'static str, binding: wgpu::BufferBinding<'a>) -> Self {
        Self::new(role, Access::Read, binding)
    }

    /// An output the op writes.
    pub fn write(role: &'static str, binding: wgpu::BufferBinding<'a>) -> Self {
        Self::new(role, Access::Write, binding)
    }

    /// A tensor the op reads and writes in place.
    pub fn read_write(role: &'static str, binding: wgpu::BufferBinding<'a>) -> Self {
        Self::new(role, Access::ReadWrite, binding)
    }

    /// An optional input that was not given.
    pub fn absent(role: &'static str) -> Self {
        Self {
            role,
            access: Access::Read,
            binding: None,
        }
    }

    fn new(role: &'static str, access: Access, binding: wgpu::BufferBinding<'a>) -> Self {
        Self {
            role,
            access,
            binding: Some(binding),
        }
    }
}

/// Rejects a pass that binds the buffer of an argument it writes a second time, through
/// another argument: WebGPU makes a writable storage binding the only use of its buffer in a
/// dispatch, whatever the ranges, and overlapping ranges would race anyway.
pub(crate) fn check_aliasing(
    plan: &Plan,
    pass: &PlannedPass,
    args: &[Arg<'_>],
) -> Result<(), RuntimeError> {
    // The arguments the pass binds, in binding order; iterated, not collected, so the check
    // allocates nothing.
    let bound = || {
        pass.bindings.iter().filter_map(|b| match *b {
            Binding::Arg(a) => args.get(a),
            _ => None,
        })
    };
    for (i, written) in bound().enumerate() {
        let Some(buffer) = written.binding.as_ref().map(|b| b.buffer) else {
            continue;
        };
        if !written.access.writes() {
            continue;
        }
        for (j, other) in bound().enumerate() {
            if i != j && other.binding.as_ref().is_some_and(|b| b.buffer == buffer) {
                return Err(RuntimeError::Alias {
                    label: plan.label(),
                    pass: pass.id,
                    written: written.role,
                    other: other.role,
                });
            }
        }
    }
    Ok(())
}
