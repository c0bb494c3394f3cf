//! The untyped syntax tree produced by the parser, before name resolution.

use std::fmt;

use super::Span;

/// A parsed expression with its source span.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What kind of expression this is.
    pub kind: ExprKind,
    /// The source range the expression covers (parentheses around it excluded).
    pub span: Span,
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Arithmetic negation `-x`.
    Neg,
    /// Logical negation `not x`.
    Not,
}

/// Binary operators, including the short-circuiting `and`/`or`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`: floor division on integers, true division on floats (V1: true division always).
    Div,
    /// `//`: floor division (V1).
    FloorDiv,
    /// `%`: floored remainder.
    Rem,
    /// `**`: power (Int when both operands are Ints; a negative Int exponent is an error).
    Pow,
    /// `~`: string concatenation (V1).
    Concat,
    /// `in`: membership (V1).
    In,
    /// `not in` (V1).
    NotIn,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `and` (short-circuit)
    And,
    /// `or` (short-circuit)
    Or,
}

impl BinOp {
    /// The operator as written in the source.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Rem => "%",
            BinOp::Pow => "**",
            BinOp::Concat => "~",
            BinOp::In => "in",
            BinOp::NotIn => "not in",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }

    /// Whether this is one of `+ - * / // % **`.
    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::Div
                | BinOp::FloorDiv
                | BinOp::Rem
                | BinOp::Pow
        )
    }

    /// Whether this is one of `== != < <= > >=`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// The shapes of expression the language has.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// `true` / `false` (also `True` / `False`).
    Bool(bool),
    /// A string literal (escapes resolved).
    Str(String),
    /// A list literal `[a, b]`.
    List(Vec<Expr>),
    /// A bare identifier: a namespace root (`shapes`, …) or a `derive` name.
    Name(String),
    /// Member access `base.name`; `name_span` covers the name only.
    Member {
        /// The expression before the dot.
        base: Box<Expr>,
        /// The member name.
        name: String,
        /// The span of the member name.
        name_span: Span,
    },
    /// Indexing `base[index]`.
    Index {
        /// The indexed expression.
        base: Box<Expr>,
        /// The index.
        index: Box<Expr>,
    },
    /// A slice `base[start:end]` of a list (Jinja dialects), either bound optional.
    Slice {
        /// The sliced expression.
        base: Box<Expr>,
        /// The first index taken (0 when absent).
        start: Option<Box<Expr>>,
        /// The index the slice stops before (the end when absent).
        end: Option<Box<Expr>>,
    },
    /// A call `callee(args)`; `device.features.has("x")` is a call on a member.
    Call {
        /// The called expression.
        callee: Box<Expr>,
        /// The positional arguments.
        args: Vec<Expr>,
    },
    /// A filter `value | name` or `value | name(args)`.
    Filter {
        /// The filtered expression.
        value: Box<Expr>,
        /// The filter name.
        name: String,
        /// The span of the filter name.
        name_span: Span,
        /// Arguments after the name, if any were written.
        args: Vec<Expr>,
    },
    /// A test `value is name` or `value is not name`.
    Test {
        /// The tested expression.
        value: Box<Expr>,
        /// The test name (`defined`, …).
        name: String,
        /// The span of the test name.
        name_span: Span,
        /// Whether `is not` was written.
        negated: bool,
        /// Arguments after the name, if any were written.
        args: Vec<Expr>,
    },
    /// A unary operation.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// A binary operation; `op_span` covers the operator token.
    Binary {
        /// The operator.
        op: BinOp,
        /// The span of the operator token.
        op_span: Span,
        /// The left operand.
        lhs: Box<Expr>,
        /// The right operand.
        rhs: Box<Expr>,
    },
    /// A chain of two or more comparisons, `a < b <= c` (a single comparison is a
    /// [`ExprKind::Binary`]). As in Jinja it means `a < b and b <= c`, each operand written
    /// once; the checker writes it as that conjunction.
    Compare {
        /// The leftmost operand.
        first: Box<Expr>,
        /// Each further comparison with its right operand, left to right.
        rest: Vec<Comparison>,
    },
    /// `then if cond else otherwise`.
    Cond {
        /// The condition.
        cond: Box<Expr>,
        /// The value when the condition holds.
        then: Box<Expr>,
        /// The value otherwise.
        otherwise: Box<Expr>,
    },
}

/// One link of a comparison chain ([`ExprKind::Compare`]): the operator and its right
/// operand, whose left operand is the previous link's (or the chain's first) operand.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The operator (`==`, `<`, …; in V1 also `in` and `not in`).
    pub op: BinOp,
    /// The span of the operator token(s).
    pub op_span: Span,
    /// The right operand.
    pub rhs: Expr,
}

impl Expr {
    /// The `derive` names this expression refers to (bare identifiers in value position), in
    /// order of first appearance, without duplicates. Callers use them to order `derive` entries
    /// before checking; function names, member names and the dialect's `namespace_roots`
    /// ([`builtins::namespaces`](super::builtins::namespaces): V1's `has(args, "x")` names the
    /// root `args` bare) are not included.
    pub fn derived_refs(&self, namespace_roots: &[&str]) -> Vec<String> {
        let mut refs = Vec::new();
        self.collect_refs(namespace_roots, &mut refs);
        refs
    }

    /// The direct subexpressions, left to right as written.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Str(_)
            | ExprKind::Name(_) => Vec::new(),
            ExprKind::List(items) => items.iter().collect(),
            ExprKind::Member { base, .. } => vec![base],
            ExprKind::Index { base, index } => vec![base, index],
            ExprKind::Slice { base, start, end } => std::iter::once(base)
                .chain(start.iter().chain(end))
                .map(|e| &**e)
                .collect(),
            ExprKind::Call { callee, args } => std::iter::once(&**callee).chain(args).collect(),
            ExprKind::Filter { value, args, .. } | ExprKind::Test { value, args, .. } => {
                std::iter::once(&**value).chain(args).collect()
            }
            ExprKind::Unary { operand, .. } => vec![operand],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Compare { first, rest } => std::iter::once(&**first)
                .chain(rest.iter().map(|c| &c.rhs))
                .collect(),
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => vec![then, cond, otherwise],
        }
    }

    fn collect_refs(&self, roots: &[&str], refs: &mut Vec<String>) {
        match &self.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Str(_) => {}
            ExprKind::Name(name) => {
                if !roots.contains(&name.as_str()) && !refs.contains(name) {
                    refs.push(name.clone());
                }
            }
            // `foo.bar` is never a reference to a derive `foo`: the checker rejects it as an
            // unknown namespace, so it must not create a dependency edge either.
            ExprKind::Member { base, name, .. } => match &base.kind {
                // V1's `constants.x` reads the constant `x`, as its bare name does.
                ExprKind::Name(root) if root == "constants" && roots.contains(&"constants") => {
                    if !refs.contains(name) {
                        refs.push(name.clone());
                    }
                }
                ExprKind::Name(_) => {}
                _ => base.collect_refs(roots, refs),
            },
            ExprKind::List(items) => items.iter().for_each(|e| e.collect_refs(roots, refs)),
            ExprKind::Index { base, index } => {
                base.collect_refs(roots, refs);
                index.collect_refs(roots, refs);
            }
            ExprKind::Slice { base, start, end } => {
                base.collect_refs(roots, refs);
                for bound in start.iter().chain(end) {
                    bound.collect_refs(roots, refs);
                }
            }
            ExprKind::Call { callee, args } => {
                // A bare-name callee is a function, not a derive.
                if !matches!(callee.kind, ExprKind::Name(_)) {
                    callee.collect_refs(roots, refs);
                }
                args.iter().for_each(|e| e.collect_refs(roots, refs));
            }
            ExprKind::Filter { value, args, .. } | ExprKind::Test { value, args, .. } => {
                value.collect_refs(roots, refs);
                args.iter().for_each(|e| e.collect_refs(roots, refs));
            }
            ExprKind::Unary { operand, .. } => operand.collect_refs(roots, refs),
            ExprKind::Binary { lhs, rhs, .. } => {
                lhs.collect_refs(roots, refs);
                rhs.collect_refs(roots, refs);
            }
            ExprKind::Compare { first, rest } => {
                first.collect_refs(roots, refs);
                rest.iter().for_each(|c| c.rhs.collect_refs(roots, refs));
            }
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => {
                then.collect_refs(roots, refs);
                cond.collect_refs(roots, refs);
                otherwise.collect_refs(roots, refs);
            }
        }
    }
}

/// Writes a comma-separated list of expressions.
fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

impl fmt::Display for Expr {
    /// Writes the expression fully parenthesized (every operator application in parentheses),
    /// which makes the parsed precedence visible; tests compare against it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Int(v) => write!(f, "{v}"),
            ExprKind::Float(v) => write!(f, "{v:?}"),
            ExprKind::Bool(v) => write!(f, "{v}"),
            ExprKind::Str(v) => write!(f, "{v:?}"),
            ExprKind::List(items) => {
                f.write_str("[")?;
                write_list(f, items)?;
                f.write_str("]")
            }
            ExprKind::Name(name) => f.write_str(name),
            ExprKind::Member { base, name, .. } => write!(f, "{base}.{name}"),
            ExprKind::Index { base, index } => write!(f, "{base}[{index}]"),
            ExprKind::Slice { base, start, end } => {
                write!(f, "{base}[")?;
                if let Some(start) = start {
                    write!(f, "{start}")?;
                }
                f.write_str(":")?;
                if let Some(end) = end {
                    write!(f, "{end}")?;
                }
                f.write_str("]")
            }
            ExprKind::Call { callee, args } => {
                write!(f, "{callee}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            ExprKind::Filter {
                value, name, args, ..
            } => {
                write!(f, "({value} | {name}")?;
                if !args.is_empty() {
                    f.write_str("(")?;
                    write_list(f, args)?;
                    f.write_str(")")?;
                }
                f.write_str(")")
            }
            ExprKind::Test {
                value,
                name,
                negated,
                args,
                ..
            } => {
                let not = if *negated { "not " } else { "" };
                write!(f, "({value} is {not}{name}")?;
                if !args.is_empty() {
                    f.write_str("(")?;
                    write_list(f, args)?;
                    f.write_str(")")?;
                }
                f.write_str(")")
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => write!(f, "(-{operand})"),
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand,
            } => write!(f, "(not {operand})"),
            ExprKind::Binary { op, lhs, rhs, .. } => {
                write!(f, "({lhs} {} {rhs})", op.symbol())
            }
            ExprKind::Compare { first, rest } => {
                write!(f, "({first}")?;
                for c in rest {
                    write!(f, " {} {}", c.op.symbol(), c.rhs)?;
                }
                f.write_str(")")
            }
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => write!(f, "({then} if {cond} else {otherwise})"),
        }
    }
}
