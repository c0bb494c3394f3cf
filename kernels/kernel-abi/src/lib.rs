//! The vocabulary the code generator and generated kernel code share: the manifest expression
//! language's arithmetic and shape helpers ([`expr`]), compiled once into codegen's interpreter
//! and, through `kernel-runtime`'s re-export, into every generated op, so the two cannot disagree
//! on a result or an error message; the element types ([`DType`]); attribute values by name ([`AttrValue`]); the `device.*` names
//! expressions read ([`device`]); how an op's module is named ([`names`]); and the version of the generated-code contract. No
//! dependencies.

mod attr;
pub mod device;
mod dtype;
pub mod expr;
pub mod names;

pub use attr::AttrValue;
pub use dtype::DType;

/// The version of the contract between generated op modules and the runtime: what
/// `kernel_runtime::abi` exports and how generated code calls it. Codegen writes the version
/// it was built with into the generated root module, which checks it against the runtime's at
/// compile time; the two move together, so a generated crate and a runtime that disagree fail
/// to build with a message instead of with type errors deep in generated code.
pub const ABI_VERSION: u32 = 6;
