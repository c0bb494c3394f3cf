//! An op's pre-rendered shaders as Rust data: the generated module's `static SHADERS` (its
//! passes with the values each column of their keys can take, and one [`Row`] per distinct
//! shader text), and the lookup from the values a pass's shader text depends on (its key) to
//! the shader.
//!
//! Only the WGSL is text: codegen writes every shader of an op into its `<op>.shaders` file,
//! one after the other, which the module `include_str!`s; each row names its byte range. The
//! table is a `static`, so rustc checks every range and pass index when the generated crate
//! compiles ([`ShaderTable::new`]); nothing is parsed at run time, and a key value may be any
//! string.

use std::collections::HashMap;
use std::sync::OnceLock;

use kernel_abi::device::{
    FEATURE_SHADER_F16, FEATURE_SUBGROUP_MATRIX, FEATURE_SUBGROUPS, ROW_FEATURE_BITS,
};

use crate::error::{NotBuilt, PlanError};
use crate::expr::EvalError;
use crate::plan::Kernel;

/// `enable subgroups;`, which browsers require and naga refuses.
const WEB_SUBGROUPS_ENABLE: &str = "enable subgroups;\n";

/// A [`Row`]'s feature bit for `shader-f16` (`kernel_abi::device::ROW_FEATURE_BITS`).
pub const SHADER_F16: u8 = ROW_FEATURE_BITS[0].1;
/// A [`Row`]'s feature bit for `subgroups`.
pub const SUBGROUPS: u8 = ROW_FEATURE_BITS[1].1;
/// A [`Row`]'s feature bit for `chromium-experimental-subgroup-matrix`.
pub const SUBGROUP_MATRIX: u8 = ROW_FEATURE_BITS[2].1;

/// The feature names of each combination of a [`Row`]'s feature bits, indexed by the bits, in
/// `KNOWN_FEATURES` order (`chromium-experimental-subgroup-matrix`, `shader-f16`,
/// `subgroups`).
const FEATURE_SETS: [&[&str]; 8] = {
    const F16: &str = FEATURE_SHADER_F16;
    const SG: &str = FEATURE_SUBGROUPS;
    const SM: &str = FEATURE_SUBGROUP_MATRIX;
    [
        &[],
        &[F16],
        &[SG],
        &[F16, SG],
        &[SM],
        &[SM, F16],
        &[SM, SG],
        &[SM, F16, SG],
    ]
};

/// The WebGPU features a [`Row`]'s bits name; bits no feature has are ignored.
fn feature_names(bits: u8) -> &'static [&'static str] {
    FEATURE_SETS[usize::from(bits & (SHADER_F16 | SUBGROUPS | SUBGROUP_MATRIX))]
}

/// One component of a shader key: a value the shader text depends on, as a call computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key<'a> {
    Bool(bool),
    Int(i64),
    Str(&'a str),
    /// A float, by its bits: every key value is one the same expression computed at build time.
    Float(u64),
}

impl From<bool> for Key<'_> {
    fn from(value: bool) -> Self {
        Key::Bool(value)
    }
}

impl From<i64> for Key<'_> {
    fn from(value: i64) -> Self {
        Key::Int(value)
    }
}

impl From<f64> for Key<'_> {
    fn from(value: f64) -> Self {
        Key::Float(value.to_bits())
    }
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(value: &'a str) -> Self {
        Key::Str(value)
    }
}

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Bool(b) => write!(f, "{b}"),
            Key::Int(i) => write!(f, "{i}"),
            Key::Str(s) => write!(f, "{s:?}"),
            Key::Float(bits) => write!(f, "{}", f64::from_bits(*bits)),
        }
    }
}

/// A pass of one of the op's variants, as the table numbers them (variant by variant).
#[derive(Debug, Clone, Copy)]
pub struct Pass {
    pub variant: &'static str,
    pub pass: &'static str,
    /// The label of its pipelines (the manifest's pass label).
    pub label: &'static str,
    pub entry_point: &'static str,
    /// Names of the overrides its pipelines take; empty when one pipeline serves all shapes.
    pub overrides: &'static [&'static str],
    /// Per column of the pass's key, the values it can take: a key is numbered by the
    /// positions of its values, the first column most significant.
    pub key: &'static [&'static [Key<'static>]],
}

/// A shader as the generated table lists it: its pass; the byte range of its WGSL in the op's
/// `.shaders` file; its content digest; its features ([`SHADER_F16`], [`SUBGROUPS`],
/// [`SUBGROUP_MATRIX`]); the
/// numbers of the keys that select it (a pass's combinations that render the same text share
/// one shader); and which of the table's lists of least sizes per binding is its
/// ([`Kernel::least_sizes`]; shaders of one pass mostly share one).
pub type Row = (usize, usize, usize, &'static str, u8, &'static [u64], usize);

/// A static combination of a pass the generator did not build, because it did not render
/// or validate: its pass, the number of its key, its values and why, as the generator said.
pub type LeftOut = (usize, u64, &'static str, &'static str);

/// One pre-rendered shader.
#[derive(Debug)]
pub struct Shader {
    pub kernel: Kernel,
    /// The index of its pass in [`ShaderTable::passes`].
    pub pass: usize,
    /// WebGPU features the shader uses (`shader-f16`, `subgroups`,
    /// `chromium-experimental-subgroup-matrix`).
    pub features: &'static [&'static str],
    /// Names of the overrides its pipelines take (its pass's).
    pub overrides: &'static [&'static str],
}

/// What the table builds on first use: the shaders, and per pass key number → shader.
struct Built {
    shaders: Vec<Shader>,
    keys: Vec<HashMap<u64, usize>>,
}

/// An op's shaders, looked up by pass and key. A `static` in the generated module.
pub struct ShaderTable {
    op: &'static str,
    passes: &'static [Pass],
    wgsl: &'static str,
    rows: &'static [Row],
    sizes: &'static [&'static [u32]],
    left_out: &'static [LeftOut],
    built: OnceLock<Built>,
}

impl std::fmt::Debug for ShaderTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShaderTable")
            .field("op", &self.op)
            .field("passes", &self.passes.len())
            .field("shaders", &self.rows.len())
            .finish_non_exhaustive()
    }
}

/// The number of `key` over a pass's key columns: `None` when a value is not one the column
/// can take (no shader was rendered for it).
fn key_number(columns: &[&[Key<'static>]], key: &[Key<'_>]) -> Option<u64> {
    if columns.len() != key.len() {
        return None;
    }
    let mut number: u64 = 0;
    for (column, value) in key.iter().enumerate() {
        number = next_key_number(columns, column, number, *value)?;
    }
    Some(number)
}

/// The number of a key so far, `number` over the columns before `column`, extended by the
/// value of `column`: how a plan numbers its key as it computes it, without keeping it.
pub fn next_key_number(
    columns: &[&[Key<'static>]],
    column: usize,
    number: u64,
    value: Key<'_>,
) -> Option<u64> {
    let values = columns.get(column)?;
    let position = values.iter().position(|v| *v == value)?;
    number
        .checked_mul(u64::try_from(values.len()).ok()?)?
        .checked_add(u64::try_from(position).ok()?)
}

impl ShaderTable {
    /// The table of `op` over its `passes`, the text of its `.shaders` file, one [`Row`] per
    /// shader and the lists of least binding sizes the rows name. Evaluated in a `static`, so a
    /// pass or list index out of range or a byte range outside the file or off a character
    /// boundary fails the build.
    pub const fn new(
        op: &'static str,
        passes: &'static [Pass],
        wgsl: &'static str,
        rows: &'static [Row],
        sizes: &'static [&'static [u32]],
    ) -> Self {
        Self::with_left_out(op, passes, wgsl, rows, sizes, &[])
    }

    /// [`ShaderTable::new`] with the combinations the generator left out, so that a call
    /// selecting one says why it has no shader.
    pub const fn with_left_out(
        op: &'static str,
        passes: &'static [Pass],
        wgsl: &'static str,
        rows: &'static [Row],
        sizes: &'static [&'static [u32]],
        left_out: &'static [LeftOut],
    ) -> Self {
        let mut i = 0;
        while i < rows.len() {
            let (pass, start, end, .., least_sizes) = rows[i];
            assert!(pass < passes.len(), "a shader's pass is out of range");
            assert!(
                least_sizes < sizes.len(),
                "a shader's sizes are out of range"
            );
            assert!(start <= end, "a shader's byte range is reversed");
            // Panics, failing the build, unless both ends lie on character boundaries.
            let _ = wgsl.split_at(end).0.split_at(start);
            i += 1;
        }
        let mut i = 0;
        while i < left_out.len() {
            assert!(
                left_out[i].0 < passes.len(),
                "a left-out combination's pass is out of range"
            );
            i += 1;
        }
        Self {
            op,
            passes,
            wgsl,
            rows,
            sizes,
            left_out,
            built: OnceLock::new(),
        }
    }

    /// The op's qualified name.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The passes the table's shaders belong to.
    pub fn passes(&self) -> &'static [Pass] {
        self.passes
    }

    fn built(&'static self) -> &'static Built {
        self.built.get_or_init(|| {
            let mut keys: Vec<HashMap<u64, usize>> =
                self.passes.iter().map(|_| HashMap::new()).collect();
            let mut shaders = Vec::with_capacity(self.rows.len());
            for (i, &(pass, start, end, digest, features, numbers, least_sizes)) in
                self.rows.iter().enumerate()
            {
                let info = &self.passes[pass];
                for &number in numbers {
                    keys[pass].insert(number, i);
                }
                shaders.push(Shader {
                    kernel: Kernel {
                        label: info.label,
                        source: &self.wgsl[start..end],
                        entry_point: info.entry_point,
                        digest,
                        web_enables: if features & SUBGROUPS != 0 {
                            WEB_SUBGROUPS_ENABLE
                        } else {
                            ""
                        },
                        least_sizes: self.sizes[least_sizes],
                    },
                    pass,
                    features: feature_names(features),
                    overrides: info.overrides,
                });
            }
            Built { shaders, keys }
        })
    }

    /// Every shader, in table order (tools time or inspect them one by one).
    pub fn shaders(&'static self) -> &'static [Shader] {
        &self.built().shaders
    }

    /// The key columns of pass `pass`, when it has `len` of them.
    pub fn key_columns(
        &self,
        pass: usize,
        len: usize,
    ) -> Option<&'static [&'static [Key<'static>]]> {
        let columns = self.passes.get(pass)?.key;
        (columns.len() == len).then_some(columns)
    }

    /// The shader of pass `pass` whose key has the number `number` ([`next_key_number`]), if
    /// the table has one; [`ShaderTable::kernel`] explains a missing one.
    pub fn kernel_numbered(&'static self, pass: usize, number: u64) -> Option<&'static Kernel> {
        let built = self.built();
        let &i = built.keys.get(pass)?.get(&number)?;
        Some(&built.shaders[i].kernel)
    }

    /// The shader of pass `pass` for `key`, the values its text depends on in the order
    /// codegen wrote them.
    pub fn kernel(
        &'static self,
        pass: usize,
        key: &[Key<'_>],
    ) -> Result<&'static Kernel, PlanError> {
        let built = self.built();
        let number = self
            .passes
            .get(pass)
            .and_then(|info| key_number(info.key, key));
        let found = number.and_then(|number| built.keys.get(pass)?.get(&number));
        let left_out = number.and_then(|number| {
            self.left_out
                .iter()
                .find(|&&(p, n, ..)| p == pass && n == number)
        });
        match (found, left_out) {
            (Some(&i), _) => Ok(&built.shaders[i].kernel),
            (None, Some(&(_, _, combination, reason))) => {
                let info = &self.passes[pass];
                Err(PlanError::NotBuilt(NotBuilt {
                    op: self.op,
                    variant: info.variant,
                    pass: info.pass,
                    combination,
                    reason,
                }))
            }
            (None, None) => {
                let values: Vec<String> = key.iter().map(ToString::to_string).collect();
                let (variant, pass) = self
                    .passes
                    .get(pass)
                    .map_or(("?", "?"), |p| (p.variant, p.pass));
                Err(PlanError::Eval(EvalError::new(format!(
                    "{}: variant `{variant}`, pass `{pass}`: no pre-rendered shader for ({})",
                    self.op,
                    values.join(", ")
                ))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Key::{Bool, Float, Int, Str};
    use super::*;

    const FILE: &str = "// a\nfn a() {}\n// a.f16\nenable f16;\nfn a() {}\n// b\nfn b() {}\n";
    const ODD: &str = "a \"q\" b\n# #key \u{fc} x[i] + 1.0";
    const PASSES: &[Pass] = &[
        Pass {
            variant: "v",
            pass: "a",
            label: "Op.A",
            entry_point: "main",
            overrides: &[],
            key: &[
                &[Str("f32"), Str("f16")],
                &[Bool(false), Bool(true)],
                &[Int(3)],
            ],
        },
        Pass {
            variant: "v",
            pass: "b",
            label: "Op B",
            entry_point: "main",
            overrides: &["n"],
            key: &[&[Str(ODD)], &[Float(0x3ff8_0000_0000_0000)], &[Int(-2)]],
        },
    ];
    static TABLE: ShaderTable = ShaderTable::new(
        "Op",
        PASSES,
        FILE,
        &[
            (0, 5, 15, "d0", 0, &[0, 1], 1),
            (0, 24, 46, "d1", SHADER_F16, &[3], 0),
            (1, 51, 61, "d2", SUBGROUPS, &[0], 0),
            (0, 5, 15, "d3", SUBGROUP_MATRIX | SHADER_F16, &[], 0),
        ],
        &[&[], &[16, 4]],
    );

    #[test]
    fn finds_each_shader_by_its_keys() {
        let k = TABLE
            .kernel(0, &["f32".into(), false.into(), 3i64.into()])
            .unwrap();
        assert_eq!((k.digest, k.source, k.label), ("d0", "fn a() {}\n", "Op.A"));
        assert_eq!(k.least_sizes, [16, 4]);
        let k = TABLE
            .kernel(0, &["f32".into(), true.into(), 3i64.into()])
            .unwrap();
        assert_eq!(k.digest, "d0");
        let k = TABLE
            .kernel(0, &["f16".into(), true.into(), 3i64.into()])
            .unwrap();
        assert_eq!((k.digest, k.source), ("d1", "enable f16;\nfn a() {}\n"));
        let odd = String::from(ODD);
        let k = TABLE
            .kernel(1, &[odd.as_str().into(), 1.5f64.into(), (-2i64).into()])
            .unwrap();
        assert_eq!(
            (k.digest, k.source, k.web_enables),
            ("d2", "fn b() {}\n", WEB_SUBGROUPS_ENABLE)
        );
        let shaders = TABLE.shaders();
        assert_eq!(shaders.len(), 4);
        assert_eq!(shaders[0].features, [] as [&str; 0]);
        assert_eq!(shaders[1].features, ["shader-f16"]);
        assert_eq!(shaders[2].features, ["subgroups"]);
        assert_eq!(
            shaders[3].features,
            ["chromium-experimental-subgroup-matrix", "shader-f16"]
        );
        assert_eq!(shaders[3].kernel.web_enables, "");
        assert_eq!(shaders[2].overrides, ["n"]);
        assert_eq!(shaders[2].kernel.label, "Op B");
    }

    #[test]
    fn feature_bits_name_their_features_in_known_order() {
        let bits = [
            (SUBGROUP_MATRIX, FEATURE_SUBGROUP_MATRIX),
            (SHADER_F16, FEATURE_SHADER_F16),
            (SUBGROUPS, FEATURE_SUBGROUPS),
        ];
        for set in 0..8u8 {
            // The features of the set bits, in `KNOWN_FEATURES` order.
            let expected: Vec<&str> = crate::caps::KNOWN_FEATURES
                .into_iter()
                .filter(|f| bits.iter().any(|(bit, name)| set & bit != 0 && name == f))
                .collect();
            assert_eq!(feature_names(set), expected, "bits {set:#b}");
        }
        // A bit no feature has is ignored.
        assert_eq!(feature_names(8 | SUBGROUPS), ["subgroups"]);
        assert_eq!(
            (SHADER_F16, SUBGROUPS, SUBGROUP_MATRIX),
            (1, 2, 4),
            "the generator writes these numbers"
        );
    }

    #[test]
    fn a_missing_key_names_the_pass_and_the_values() {
        // `f16` with `false` is a number of the pass's columns that no shader has.
        let err = TABLE
            .kernel(0, &["f16".into(), false.into(), 3i64.into()])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Op: variant `v`, pass `a`: no pre-rendered shader for (\"f16\", false, 3)"
        );
        // A value no column has, a key of another length, a pass out of range.
        assert!(
            TABLE
                .kernel(0, &["f64".into(), false.into(), 3i64.into()])
                .is_err()
        );
        assert!(TABLE.kernel(0, &["f32".into(), false.into()]).is_err());
        let err = TABLE.kernel(7, &[]).unwrap_err();
        assert!(err.to_string().contains("variant `?`"), "{err}");
    }
}
