//! The vocabulary the code generator and generated kernel code share: the manifest expression
//! language's arithmetic and shape helpers ([`expr`]), compiled once into codegen's interpreter
//! and, through `kernel-runtime`'s re-export, into every generated op, so the two cannot disagree
//! on a result or an error message. No dependencies.

pub mod expr;
