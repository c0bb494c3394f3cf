//! The validated op model: what the emitters see instead of raw JSON.
//!
//! Every expression is parsed and type-checked here, every reference resolved (roles, args,
//! binding sets, intermediates, templates by name), and every variant constant and template
//! input classified as static (enumerated at build time) or dynamic (a pipeline override).

pub mod classes;
pub mod domains;
mod statics;

pub use statics::{
    Bounds, Combination, StaticValueError, StaticVar, dynamic_values, enumerate_combinations,
    is_bounded, is_static, static_values, value_text,
};

use crate::expr::{Ir, Type};

/// A checked expression with the text it came from.
#[derive(Debug, Clone)]
pub struct Expr {
    /// The manifest's source text.
    pub source: String,
    /// JSON path of the expression, for messages.
    pub path: String,
    pub ir: Ir,
}

/// Logical element types the manifests may name: `kernel-abi`'s, the runtime's type too.
pub use kernel_abi::DType;

/// Parses a storage element type: a scalar (`f32`, `float16`) or `vec2<T>` / `vec4<T>`;
/// the dtype and its lanes.
pub fn parse_element(text: &str) -> Option<(DType, u8)> {
    let text = text.trim();
    for (prefix, lanes) in [("vec2<", 2), ("vec4<", 4)] {
        if let Some(inner) = text.strip_prefix(prefix).and_then(|t| t.strip_suffix('>')) {
            return DType::parse(inner.trim()).map(|d| (d, lanes));
        }
    }
    DType::parse(text).map(|d| (d, 1))
}

/// The dtype of a tensor: a type variable or a fixed type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DTypeRef {
    Var(String),
    Fixed(DType),
}

/// A type variable of `typeConstraints`.
#[derive(Debug, Clone)]
pub struct TypeVar {
    pub name: String,
    pub allowed: Vec<DType>,
}

/// How a tensor is stored on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// As its logical dtype.
    Native,
    /// Logical int64 stored as u32 with a checked conversion on upload.
    U32Checked,
}

/// An op input or output.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub role: String,
    pub dtype: DTypeRef,
    pub storage: Storage,
    /// Required rank of an input, when declared.
    pub rank: Option<u32>,
    /// Output shape and rank expressions.
    pub shape: Option<Expr>,
    pub rank_expr: Option<Expr>,
    pub description: String,
    /// Whether the caller may leave the tensor out.
    pub optional: bool,
    /// An input the op also writes in place (the same role among the manifest's outputs).
    pub in_place: bool,
    /// An output without a shape expression (`schemaVersion: 1`): the caller provides the
    /// tensor, and its shape is an input to the op's expressions.
    pub provided: bool,
    /// The ONNX name of the port, where the manifest gives one (`"A"` for the Hub's `a`).
    pub onnx: Option<String>,
}

/// How an attribute is represented in the generated Rust struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrRepr {
    /// A 0/1 flag (expression type Int).
    Bool,
    /// A boolean (expression type Bool): a `bool` scalar arg.
    Truth,
    I64,
    F32,
    IntList,
    Str,
}

/// Attribute values as the manifest writes them (the runtime's, so a default reads as a call's
/// value does).
pub use kernel_abi::AttrValue;

/// How wide an integer attribute is in the typed API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntWidth {
    I64,
    /// A `u32` scalar arg: never negative.
    U32,
    I32,
}

/// An op attribute.
#[derive(Debug, Clone)]
pub struct Attribute {
    pub name: String,
    /// The expression-language type of `attrs.<name>`.
    pub ty: Type,
    pub repr: AttrRepr,
    pub default: Option<AttrValue>,
    pub required: bool,
    /// `attributeConstraints.values`, when given.
    pub allowed: Option<Vec<i64>>,
    /// The values a string scalar arg may take (`oneOf`).
    pub one_of: Option<Vec<String>>,
    /// The width of an integer scalar arg (`u32`, `i32`); seed attributes are `i64`.
    pub int_width: IntWidth,
    pub description: String,
}

impl Tensor {
    /// An output whose shape the op computes from its shape expression.
    pub fn is_computed_output(&self) -> bool {
        self.shape.is_some() && !self.provided
    }
}

impl Attribute {
    /// A scalar arg the caller may leave out (`required: false`, no default): `Option` in
    /// the typed API, undefined in expressions when absent.
    pub fn is_optional(&self) -> bool {
        !self.required && self.default.is_none()
    }
}

/// A `derive` entry, in dependency order.
#[derive(Debug, Clone)]
pub struct Derived {
    pub name: String,
    pub expr: Expr,
}

/// Whether a value is fixed per shader file or passed at pipeline creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Depends only on finite-domain names: one shader file per value.
    Static,
    /// Depends on shapes or device limits: a WGSL `override` constant.
    Dynamic,
}

/// A named value handed to the template: a variant constant or a pass source input.
#[derive(Debug, Clone)]
pub struct TemplateValue {
    pub name: String,
    pub expr: Expr,
    pub class: Class,
    /// For a static value that reads run-time names: the values it is enumerated over
    /// ([`domains::pin`]); `None` when its names' domains are enumerated instead (or it is a
    /// boolean, enumerated over both values).
    pub domain: Option<Vec<crate::expr::Value>>,
    /// For a dynamic value: the WGSL type of its override, which the shader's uses decide
    /// (`settle`), not only the expression's type.
    pub override_type: OverrideType,
    /// Set on the values a list known per call becomes (one per axis, [`LIST_AXES`] of them):
    /// the list's name and this value's axis. Templates read the list by its name.
    pub axis_of: Option<(String, usize)>,
}

/// How many axes a list known per call reaches a shader as: right-aligned, the axes in front
/// of it 1 (`kernel_abi::expr::aligned_dim`), one `u32` override per axis.
pub const LIST_AXES: usize = 8;

/// The scalar type of a dynamic value's WGSL `override`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideType {
    U32,
    I32,
    F32,
}

impl OverrideType {
    /// The type an expression of type `ty` starts as: a Float is an `f32`, anything else a
    /// `u32` (sizes, counts).
    pub fn of(ty: Type) -> Self {
        if ty == Type::Float {
            OverrideType::F32
        } else {
            OverrideType::U32
        }
    }

    pub fn wgsl(self) -> &'static str {
        match self {
            OverrideType::U32 => "u32",
            OverrideType::I32 => "i32",
            OverrideType::F32 => "f32",
        }
    }
}

/// What a binding is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingTarget {
    /// An op tensor; the index is in `inputs ++ outputs` order.
    Tensor(usize),
    Intermediate(usize),
    Params,
}

/// Buffer binding types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
    Uniform,
}

/// The element type of a storage binding, resolved per combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElementType {
    /// A scalar (`f32`) or a vector of 2 or 4 of them (`vec4<f16>`): dtype and lanes.
    Fixed(DType, u8),
    /// `$T`: a type variable.
    Var(String),
    /// `$name`: the value of a static variant constant.
    Constant(String),
}

/// One uniform struct field.
#[derive(Debug, Clone)]
pub struct ParamField {
    pub name: String,
    /// `u32`, `i32` or `f32`.
    pub wgsl_type: &'static str,
    pub value: Expr,
}

/// The uniform struct of a pass.
#[derive(Debug, Clone)]
pub struct ParamsStruct {
    pub name: String,
    pub fields: Vec<ParamField>,
}

/// One `@group(0) @binding(index)` declaration.
#[derive(Debug, Clone)]
pub struct Binding {
    pub name: String,
    pub target: BindingTarget,
    pub access: Access,
    pub element: Option<ElementType>,
    /// Elements are `atomic<…>` of `element` (read and written with atomic operations).
    pub atomic: bool,
    pub params: Option<ParamsStruct>,
    /// The static boolean of the pass under which the buffer is seen as `vec4` words.
    pub vec4_when: Option<String>,
}

/// How a pass is dispatched.
#[derive(Debug, Clone)]
pub enum Dispatch {
    Threads {
        threads: Expr,
        workgroup_size: Expr,
    },
    Workgroups(Expr),
    Grid {
        x: Expr,
        y: Option<Expr>,
        z: Option<Expr>,
    },
    GridStride {
        items: Expr,
        workgroup_size: Expr,
    },
}

/// One compute pass of a variant.
#[derive(Debug, Clone)]
pub struct Pass {
    pub id: String,
    pub label: String,
    pub template: String,
    pub inputs: Vec<TemplateValue>,
    pub bindings: Vec<Binding>,
    pub dispatch: Dispatch,
}

/// A scratch buffer of a variant.
#[derive(Debug, Clone)]
pub struct Intermediate {
    pub id: String,
    pub dtype: DType,
    pub shape: Expr,
}

/// A kernel variant.
#[derive(Debug, Clone)]
pub struct Variant {
    pub id: String,
    pub description: String,
    pub priority: i64,
    pub when: Vec<Expr>,
    /// Conditions of which one that holds demotes the variant below every eligible variant
    /// that is not demoted (the Hub dialect's `demoteWhen`).
    pub demote_when: Vec<Expr>,
    /// The variants, ranked before this one, that make it ineligible while they are eligible
    /// (the Hub dialect's `supersededBy`).
    pub superseded_by: Vec<String>,
    /// The variant's own values of tunables: its expressions after `when` and its templates
    /// read these instead of the op's.
    pub tunables: Vec<(String, crate::expr::Value)>,
    pub constants: Vec<TemplateValue>,
    pub intermediates: Vec<Intermediate>,
    pub passes: Vec<Pass>,
    /// Features a `when` condition requires outright (`device.features.has("x")`).
    pub required_features: Vec<String>,
    /// Template value → the values the hints declare to build shaders for.
    pub specialise: std::collections::BTreeMap<String, Vec<crate::expr::Value>>,
    /// What `when` allows arguments and type variables ([`domains::when_bounds`]).
    pub bounds: Bounds,
}

impl Variant {
    /// The template values named `name`, the variant's own and its passes', for the analyses
    /// that settle one value everywhere it is declared.
    pub fn values_named_mut<'a>(
        &'a mut self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a mut TemplateValue> {
        self.constants
            .iter_mut()
            .chain(self.passes.iter_mut().flat_map(|p| p.inputs.iter_mut()))
            .filter(move |value| value.name == name)
    }
}

/// A validated op.
#[derive(Debug, Clone)]
pub struct Op {
    /// The manifest's display path.
    pub file: String,
    pub domain: String,
    pub name: String,
    /// Rust module name, e.g. `mrotary_embedding`.
    pub module: String,
    pub since_version: u32,
    pub description: String,
    pub type_vars: Vec<TypeVar>,
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
    pub attributes: Vec<Attribute>,
    pub tunables: Vec<(String, crate::expr::Value)>,
    pub derives: Vec<Derived>,
    /// Sorted by descending priority, manifest order among equals: the selection order.
    pub variants: Vec<Variant>,
    /// `derive` entries that failed to parse or check (already reported).
    pub poisoned: std::collections::BTreeSet<String>,
    /// Other names a tensor goes by in expressions (its args' names and semantics), with the
    /// tensor's index in `inputs ++ outputs`.
    pub aliases: Vec<(String, usize)>,
    /// How its templates are written, which is how the WGSL emitter renders them.
    pub templates: TemplateConvention,
    /// Where the hints file declares each variant's sets of values.
    pub hint_sources: Vec<HintSource>,
}

/// Where a hints file declares the values a variant is built for: what reports about the set
/// point at.
#[derive(Debug, Clone)]
pub struct HintSource {
    /// The variant's id.
    pub variant: String,
    /// The value's name as the hints write it (`args.cols`, `COLS`).
    pub name: String,
    /// The hints file's display path.
    pub file: String,
    /// The set's JSON path in it.
    pub path: String,
}

/// How a package's templates are written, and so how they are rendered: a property of the
/// package's format that the front end sets, so the WGSL emitter reads behaviours, not the
/// dialect's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateConvention {
    /// A name a template reads without it being defined is falsy in a condition (an error
    /// only when printed) instead of an error wherever used: templates that test names only
    /// some variants define (`{% if PRESRQ %}`).
    pub undefined_names_are_falsy: bool,
    /// Templates get the loader's context (`env.wgsl.*`) and write their own `enable`
    /// directives; otherwise the prelude writes them.
    pub loader_context: bool,
    /// Templates print values where a literal goes: a dynamic value renders marked, under a
    /// pipeline override named `<value>_pipeline` (templates often declare a constant of the
    /// value's own name), and is resolved after rendering; a whole float prints as the
    /// integer it is, as the engine prints numbers.
    pub values_print_as_literals: bool,
    /// A combination whose bindings cannot hold its dtypes is left out, said in the notes,
    /// rather than an error: packages may declare dtypes some bindings cannot take.
    pub unholdable_dtypes_left_out: bool,
    /// Templates read the manifest's `derive` entries by bare name (and a value of the
    /// template's own named `op`, `variant` or `pass` is the template's, not the generator's).
    pub derives_visible: bool,
    /// Templates see the runtime's named constant `DISPATCH_FOLD_WIDTH`, as its expressions
    /// do.
    pub fold_width_visible: bool,
    /// Templates are rendered as the Hub runtime's Jinja (@huggingface/jinja) renders them:
    /// its `int` filter, and no chains of comparisons (`templates/javascript.rs`).
    pub javascript_jinja: bool,
}

impl TemplateConvention {
    /// The seed packages': the prelude declares, every name must be defined.
    pub const SEED: Self = Self {
        undefined_names_are_falsy: false,
        loader_context: false,
        values_print_as_literals: false,
        unholdable_dtypes_left_out: false,
        derives_visible: false,
        fold_width_visible: false,
        javascript_jinja: false,
    };
    /// The `schemaVersion: 1` engine's loader.
    pub const LOADER: Self = Self {
        undefined_names_are_falsy: true,
        loader_context: true,
        values_print_as_literals: true,
        unholdable_dtypes_left_out: true,
        derives_visible: false,
        fold_width_visible: false,
        javascript_jinja: false,
    };
    /// The Hub runtime's: the `schemaVersion: 1` loader's, the manifest's derives spread
    /// into every template's context, `DISPATCH_FOLD_WIDTH`, and @huggingface/jinja's rules.
    pub const HUB: Self = Self {
        derives_visible: true,
        fold_width_visible: true,
        javascript_jinja: true,
        ..Self::LOADER
    };
}

impl Op {
    /// The WGSL name of the pipeline `override` that carries the dynamic template value
    /// `value`: the value's own name in the seed dialect, whose templates print it into
    /// expressions; `<value>_pipeline` in the `schemaVersion: 1` dialect, whose templates
    /// often declare a constant of the value's own name.
    pub fn override_name(&self, value: &str) -> String {
        if self.templates.values_print_as_literals {
            // Namespace members (`args.hidden`) make identifiers too.
            format!("{}_pipeline", value.replace('.', "_"))
        } else {
            value.to_owned()
        }
    }

    /// `domain.name`, e.g. `com.microsoft.MRotaryEmbedding`.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.domain, self.name)
    }

    /// The index in `inputs ++ outputs` of the tensor `name` refers to: a role, or an alias
    /// (an arg's name or semantic).
    pub fn tensor_index(&self, name: &str) -> Option<usize> {
        self.tensors().position(|t| t.role == name).or_else(|| {
            self.aliases
                .iter()
                .find(|(alias, _)| alias == name)
                .map(|(_, index)| *index)
        })
    }

    /// The tensor `name` refers to (see [`Op::tensor_index`]).
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensor_index(name).and_then(|i| self.tensors().nth(i))
    }

    /// The role of the tensor `name` refers to.
    pub fn tensor_role(&self, name: &str) -> Option<&str> {
        self.tensor(name).map(|t| t.role.as_str())
    }

    pub fn tensors(&self) -> impl Iterator<Item = &Tensor> {
        self.inputs.iter().chain(&self.outputs)
    }

    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    pub fn derived(&self, name: &str) -> Option<&Derived> {
        self.derives.iter().find(|d| d.name == name)
    }

    pub fn type_var(&self, name: &str) -> Option<&TypeVar> {
        self.type_vars.iter().find(|t| t.name == name)
    }

    /// The tunable `name`: an Int, or a Float where the manifest gives a fraction.
    pub fn tunable(&self, name: &str) -> Option<crate::expr::Value> {
        self.tunables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
}

pub use kernel_abi::names::snake_case;

/// `blockSize` → `block_size`, `WORKGROUP_SIZE` → `workgroup_size`.
pub fn snake_ident(name: &str) -> String {
    if name.chars().all(|c| !c.is_ascii_lowercase()) {
        return name.to_ascii_lowercase();
    }
    snake_case(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_ident_keeps_constants_and_splits_camel_case() {
        assert_eq!(snake_ident("rank3HeadSize"), "rank3_head_size");
        assert_eq!(snake_ident("MRotaryEmbedding"), "mrotary_embedding");
        assert_eq!(snake_ident("WORKGROUP_SIZE"), "workgroup_size");
    }
}

#[cfg(test)]
mod element_tests {
    use super::*;

    #[test]
    fn element_types_are_scalars_or_two_and_four_lane_vectors() {
        assert_eq!(parse_element("f32"), Some((DType::F32, 1)));
        assert_eq!(parse_element("float16"), Some((DType::F16, 1)));
        assert_eq!(parse_element("vec4<f16>"), Some((DType::F16, 4)));
        assert_eq!(parse_element("vec2<u32>"), Some((DType::U32, 2)));
        assert_eq!(parse_element("vec3<f32>"), None);
        assert_eq!(parse_element("vec4<bool>"), None);
    }
}
