//! Where templates use values whose value is unknown when the shader text is fixed (dynamic
//! template values, which render as the name of their WGSL `override`), read from minijinja's
//! own syntax tree. It, `syntax.rs`, `javascript.rs` and `source_map.rs` are the only files
//! that touch minijinja's unstable `machinery` API.
//!
//! Such a value may only be printed as it is (`{{ blockSize }}`). Anything that needs its
//! value while rendering is reported with the template line and column: a condition (`if`,
//! `elif`, an inline `x if c else y`, a test), a `for` iterable, or arithmetic, a comparison,
//! a filter or a call argument. The value's taint follows `{% set %}`, `{% with %}`, loop
//! targets and macro parameters, across `{% include %}` and `{% import %}`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use minijinja::machinery::ast::{self, CallArg, Expr, Stmt};
use minijinja::machinery::{Span, parse};
use minijinja::syntax::SyntaxConfig;

use crate::templates::syntax::{visit, walk};
use crate::templates::{TemplatePaths, join};

/// How a template needs a value it cannot have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misuse {
    /// As a condition of its own (`{% if x %}`, `not x`, `x and y`): only whether it is
    /// truthy matters, so two shaders serve every value.
    Truthiness,
    /// Compared with an integer literal in a condition (`{% if wg > 32 %}`, or each item of
    /// `{% if bits in [2, 4] %}`): only which side of the literal it is on matters.
    Compared(i64),
    /// In an `if`/`elif` condition, an inline `if`, or a test.
    Condition,
    /// As the iterable of a `for`.
    Iteration,
    /// In arithmetic, a comparison, a filter or a function call.
    Computation,
}

/// One misuse of a dynamic value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// The dynamic template value the misused name comes from.
    pub value: String,
    pub misuse: Misuse,
    /// The template's display path.
    pub file: String,
    /// 1-based line and column of the offending expression.
    pub line: usize,
    pub column: usize,
}

/// How a template uses the dynamic values: every use that needs a value, and the values it
/// prints as they are.
#[derive(Debug, Default)]
pub struct Usage {
    pub misuses: Vec<Use>,
    pub printed: BTreeSet<String>,
    /// Every template the walk reached: the root and what it includes or imports.
    pub templates: BTreeSet<String>,
}

/// Every misuse of `dynamic` names in the template `root` and what it includes or imports.
/// Templates that fail to parse are skipped: minijinja reports them when they are loaded.
pub fn misuses(paths: &TemplatePaths<'_>, root: &str, dynamic: &BTreeSet<&str>) -> Vec<Use> {
    usage(paths, root, dynamic).misuses
}

/// [`misuses`], with the values printed as they are.
pub fn usage(paths: &TemplatePaths<'_>, root: &str, dynamic: &BTreeSet<&str>) -> Usage {
    let mut walker = Walker {
        paths,
        syntax: SyntaxConfig::default(),
        uses: Vec::new(),
        printed: BTreeSet::new(),
        macro_params: BTreeMap::new(),
        trees: RefCell::new(BTreeMap::new()),
    };
    // A macro's parameters are tainted by its call sites, which may come after the macro or
    // in another template: walk until no new parameter is tainted.
    let mut seen = BTreeSet::new();
    loop {
        let before = walker.macro_params.clone();
        walker.uses.clear();
        walker.printed.clear();
        seen.clear();
        let taint: BTreeMap<String, String> = dynamic
            .iter()
            .map(|n| ((*n).to_owned(), (*n).to_owned()))
            .collect();
        walker.template(root, &taint, &mut seen);
        if walker.macro_params == before {
            break;
        }
    }
    walker
        .uses
        .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    walker.uses.dedup();
    Usage {
        misuses: walker.uses,
        printed: walker.printed,
        templates: seen,
    }
}

struct Walker<'a> {
    paths: &'a TemplatePaths<'a>,
    syntax: SyntaxConfig,
    uses: Vec<Use>,
    /// The dynamic values printed as they are (`{{ x }}`), the one use that needs no value.
    printed: BTreeSet<String>,
    /// (template, macro, parameter) → the dynamic value a call site passes to it.
    macro_params: BTreeMap<(String, String, String), String>,
    /// Each template's syntax tree, parsed once however often the walk reaches it (`None`
    /// when it does not exist or does not parse).
    trees: RefCell<BTreeMap<String, Option<Rc<Stmt<'a>>>>>,
}

/// Names in scope that carry a dynamic value: name → the dynamic value it came from.
type Taint = BTreeMap<String, String>;

impl<'a> Walker<'a> {
    /// The syntax tree of the template `name`.
    fn tree(&self, name: &str) -> Option<Rc<Stmt<'a>>> {
        if let Some(tree) = self.trees.borrow().get(name) {
            return tree.clone();
        }
        let tree = (self.paths.templates.get_key_value(name))
            .filter(|(_, source)| super::nesting::tags_are_shallow(source))
            .and_then(|(file, source)| parse(source, file, self.syntax.clone()).ok())
            .map(Rc::new);
        self.trees
            .borrow_mut()
            .insert(name.to_owned(), tree.clone());
        tree
    }

    fn template(&mut self, name: &str, taint: &Taint, seen: &mut BTreeSet<String>) {
        if !seen.insert(name.to_owned()) {
            return;
        }
        let Some(tree) = self.tree(name) else {
            return;
        };
        let mut scope = Scope {
            file: name.to_owned(),
            taint: taint.clone(),
            imports: BTreeMap::new(),
        };
        self.stmt(&tree, &mut scope, seen);
    }

    fn body(&mut self, stmts: &[Stmt<'_>], scope: &mut Scope, seen: &mut BTreeSet<String>) {
        for stmt in stmts {
            self.stmt(stmt, scope, seen);
        }
    }

    fn stmt(&mut self, stmt: &Stmt<'_>, scope: &mut Scope, seen: &mut BTreeSet<String>) {
        match stmt {
            Stmt::Template(t) => self.body(&t.children, scope, seen),
            Stmt::EmitExpr(e) => {
                // Printing the value as it is (its override's name) is the one allowed use.
                if let Some(value) = reference(&e.expr, scope) {
                    self.printed.insert(value.clone());
                } else if !matches!(&e.expr, Expr::Var(_)) {
                    self.expr(&e.expr, scope, Misuse::Computation);
                }
            }
            Stmt::EmitRaw(_) | Stmt::Continue(_) | Stmt::Break(_) => {}
            Stmt::ForLoop(f) => {
                self.expr(&f.iter, scope, Misuse::Iteration);
                if let Some(filter) = &f.filter_expr {
                    self.expr(filter, scope, Misuse::Condition);
                }
                self.body(&f.body, scope, seen);
                self.body(&f.else_body, scope, seen);
            }
            Stmt::IfCond(i) => {
                self.expr(&i.expr, scope, Misuse::Condition);
                self.body(&i.true_body, scope, seen);
                self.body(&i.false_body, scope, seen);
            }
            Stmt::WithBlock(w) => {
                let mut inner = scope.clone();
                for (target, value) in &w.assignments {
                    self.assign(target, value, scope, &mut inner);
                }
                self.body(&w.body, &mut inner, seen);
            }
            Stmt::Set(s) => {
                let mut updated = scope.clone();
                self.assign(&s.target, &s.expr, scope, &mut updated);
                *scope = updated;
            }
            Stmt::SetBlock(s) => self.body(&s.body, scope, seen),
            Stmt::AutoEscape(a) => self.body(&a.body, scope, seen),
            Stmt::FilterBlock(f) => self.body(&f.body, scope, seen),
            Stmt::Block(b) => self.body(&b.body, scope, seen),
            Stmt::Extends(e) => self.follow(&e.name, scope, seen),
            Stmt::Include(i) => self.follow(&i.name, scope, seen),
            Stmt::Import(i) => {
                if let (Some(target), Expr::Var(alias)) = (self.target(&i.expr, scope), &i.name) {
                    scope.imports.insert(alias.id.to_owned(), target.clone());
                    self.template(&target, &Taint::new(), seen);
                }
            }
            Stmt::FromImport(f) => {
                if let Some(target) = self.target(&f.expr, scope) {
                    self.template(&target, &Taint::new(), seen);
                }
            }
            Stmt::Macro(m) => self.macro_body(m, scope, seen),
            Stmt::CallBlock(c) => {
                self.call(&c.call, scope, Misuse::Computation);
                self.macro_body(&c.macro_decl, scope, seen);
            }
            Stmt::Do(d) => self.call(&d.call, scope, Misuse::Computation),
        }
    }

    /// A macro's body: it sees the names of the scope it is defined in (the render context
    /// among them), except where a parameter shadows one, which its call sites taint.
    fn macro_body(&mut self, m: &ast::Macro<'_>, scope: &Scope, seen: &mut BTreeSet<String>) {
        let mut inner = Scope {
            file: scope.file.clone(),
            taint: scope.taint.clone(),
            imports: scope.imports.clone(),
        };
        for param in &m.args {
            if let Expr::Var(v) = param {
                inner.taint.remove(v.id);
                let key = (scope.file.clone(), m.name.to_owned(), v.id.to_owned());
                if let Some(value) = self.macro_params.get(&key) {
                    inner.taint.insert(v.id.to_owned(), value.clone());
                }
            }
        }
        self.body(&m.body, &mut inner, seen);
    }

    /// `target = value` in `set`/`with`: the target carries the value's taint.
    fn assign(&mut self, target: &Expr<'_>, value: &Expr<'_>, read: &Scope, write: &mut Scope) {
        match (target, self.tainted_by(value, read)) {
            // A bare copy keeps the value printable; anything computed is a misuse.
            (Expr::Var(t), Some(source)) if matches!(value, Expr::Var(_)) => {
                write.taint.insert(t.id.to_owned(), source);
            }
            (Expr::Var(t), _) => {
                write.taint.remove(t.id);
                self.expr(value, read, Misuse::Computation);
            }
            _ => self.expr(value, read, Misuse::Computation),
        }
    }

    fn follow(&mut self, name: &Expr<'_>, scope: &Scope, seen: &mut BTreeSet<String>) {
        if let Some(target) = self.target(name, scope) {
            // Included templates see the includer's variables.
            let taint = scope.taint.clone();
            self.template(&target, &taint, seen);
        }
    }

    /// The display path a literal template name refers to from this template.
    fn target(&self, name: &Expr<'_>, scope: &Scope) -> Option<String> {
        let Expr::Const(c) = name else { return None };
        let text = c.value.as_str()?;
        Some(join(self.paths.include_root, text, &scope.file))
    }

    /// The dynamic value `expr` reads, if any.
    fn tainted_by(&self, expr: &Expr<'_>, scope: &Scope) -> Option<String> {
        let mut found = None;
        visit(expr, &mut |e| {
            if let Some(value) = reference(e, scope) {
                found.get_or_insert_with(|| value.clone());
            }
        });
        found
    }

    /// Reports every tainted name in `expr` as `misuse`; a bare name passed to a macro is
    /// not a misuse itself but taints the parameter.
    fn expr(&mut self, expr: &Expr<'_>, scope: &Scope, misuse: Misuse) {
        if let Some(value) = reference(expr, scope) {
            let misuse = if misuse == Misuse::Condition {
                Misuse::Truthiness
            } else {
                misuse
            };
            self.report(value, misuse, &scope.file, expr.span());
            return;
        }
        match expr {
            Expr::Var(_) => {}
            // `not x`, `x and y`, `x or y` in a condition test their operands' truthiness.
            Expr::UnaryOp(u)
                if misuse == Misuse::Condition && matches!(u.op, ast::UnaryOpKind::Not) =>
            {
                self.expr(&u.expr, scope, misuse);
            }
            Expr::BinOp(b)
                if misuse == Misuse::Condition
                    && matches!(b.op, ast::BinOpKind::ScAnd | ast::BinOpKind::ScOr) =>
            {
                self.expr(&b.left, scope, misuse);
                self.expr(&b.right, scope, misuse);
            }
            Expr::BinOp(b) if misuse == Misuse::Condition && compared(b, scope).is_some() => {
                if let Some((value, literals)) = compared(b, scope) {
                    for literal in literals {
                        self.report(value, Misuse::Compared(literal), &scope.file, expr.span());
                    }
                }
            }
            Expr::Call(c) => self.call(c, scope, misuse),
            Expr::IfExpr(i) => {
                self.expr(&i.test_expr, scope, Misuse::Condition);
                self.printed(&i.true_expr, scope, misuse);
                if let Some(other) = &i.false_expr {
                    self.printed(other, scope, misuse);
                }
            }
            Expr::Test(t) => {
                // Whether a value is defined does not depend on the value.
                if !matches!(t.name, "defined" | "undefined") {
                    self.expr(&t.expr, scope, Misuse::Condition);
                }
            }
            _ => {
                let mut tainted = Vec::new();
                visit(expr, &mut |e| {
                    if let Some(value) = reference(e, scope) {
                        tainted.push((value.clone(), e.span()));
                    }
                });
                for (value, span) in tainted {
                    self.report(&value, misuse, &scope.file, span);
                }
            }
        }
    }

    /// A branch of an inline `if` that is printed: a bare name stays printable.
    fn printed(&mut self, expr: &Expr<'_>, scope: &Scope, misuse: Misuse) {
        let bare = matches!(expr, Expr::Var(_)) || reference(expr, scope).is_some();
        if !bare || misuse != Misuse::Computation {
            self.expr(expr, scope, misuse);
        }
    }

    /// A call: a bare tainted name passed to a macro taints its parameter; any other use of a
    /// tainted argument (a builtin such as `range`, or a computed argument) is `misuse`.
    fn call(&mut self, call: &ast::Call<'_>, scope: &Scope, misuse: Misuse) {
        let callee = match &call.expr {
            Expr::Var(v) => Some((scope.file.clone(), v.id.to_owned())),
            Expr::GetAttr(g) => match &g.expr {
                Expr::Var(alias) => scope
                    .imports
                    .get(alias.id)
                    .map(|file| (file.clone(), g.name.to_owned())),
                _ => None,
            },
            _ => None,
        };
        for (position, arg) in call.args.iter().enumerate() {
            let (CallArg::Pos(value) | CallArg::Kwarg(_, value)) = arg else {
                if let CallArg::PosSplat(value) | CallArg::KwargSplat(value) = arg {
                    self.expr(value, scope, misuse);
                }
                continue;
            };
            let param = match (&callee, value) {
                (Some((file, name)), Expr::Var(v)) if scope.taint.contains_key(v.id) => {
                    self.parameter(file, name, position, arg).map(|param| {
                        (
                            (file.clone(), name.clone(), param),
                            scope.taint[v.id].clone(),
                        )
                    })
                }
                _ => None,
            };
            match param {
                Some((key, value)) => {
                    self.macro_params.insert(key, value);
                }
                None => self.expr(value, scope, misuse),
            }
        }
    }

    /// The name of the parameter a call argument binds: the keyword, or the macro's
    /// `position`-th parameter as declared in `file`.
    fn parameter(
        &self,
        file: &str,
        name: &str,
        position: usize,
        arg: &CallArg<'_>,
    ) -> Option<String> {
        if let CallArg::Kwarg(keyword, _) = arg {
            return Some((*keyword).to_owned());
        }
        let mut macros = BTreeMap::new();
        let tree = self.tree(file)?;
        collect_macros(&tree, &mut macros);
        macros.get(name)?.get(position).cloned()
    }

    fn report(&mut self, value: &str, misuse: Misuse, file: &str, span: Span) {
        self.uses.push(Use {
            value: value.to_owned(),
            misuse,
            file: file.to_owned(),
            line: usize::from(span.start_line),
            column: usize::from(span.start_col) + 1,
        });
    }
}

/// What a template body sees.
#[derive(Debug, Clone)]
struct Scope {
    file: String,
    taint: Taint,
    /// `{% import "x" as alias %}`: alias → template.
    imports: BTreeMap<String, String>,
}

/// Every macro defined in `stmt` (at any depth): name → parameter names.
fn collect_macros(stmt: &Stmt<'_>, out: &mut BTreeMap<String, Vec<String>>) {
    let mut on_stmt = |s: &Stmt<'_>| {
        if let Stmt::Macro(m) = s {
            let params = m
                .args
                .iter()
                .filter_map(|a| match a {
                    Expr::Var(v) => Some(v.id.to_owned()),
                    _ => None,
                })
                .collect();
            out.insert(m.name.to_owned(), params);
        }
    };
    walk(stmt, &mut on_stmt, &mut |_| {});
}

/// The dynamic value a name reads: a tainted variable, or a member of the loader's `constants`
/// and `source` objects (`constants.x` is the constant `x`, `source.x` the pass input `x`).
fn reference<'s>(expr: &Expr<'_>, scope: &'s Scope) -> Option<&'s String> {
    match expr {
        Expr::Var(v) => scope.taint.get(v.id),
        Expr::GetAttr(g) => match &g.expr {
            Expr::Var(object) if matches!(object.id, "constants" | "source") => {
                scope.taint.get(g.name)
            }
            // A namespace member is a value of its own, named as the template writes it.
            _ => scope.taint.get(&member_path(expr)?),
        },
        _ => None,
    }
}

/// `a.b.c` for a chain of attribute lookups on a variable.
fn member_path(expr: &Expr<'_>) -> Option<String> {
    match expr {
        Expr::Var(v) => Some(v.id.to_owned()),
        Expr::GetAttr(g) => Some(format!("{}.{}", member_path(&g.expr)?, g.name)),
        _ => None,
    }
}

/// A comparison of a dynamic value with an integer literal, either way round: the value and
/// the literal.
fn compared<'s>(b: &ast::BinOp<'_>, scope: &'s Scope) -> Option<(&'s String, Vec<i64>)> {
    use ast::BinOpKind::{Eq, Gt, Gte, In, Lt, Lte, Ne};
    let literal = |e: &Expr<'_>| match e {
        Expr::Const(c) if c.value.is_integer() => c.value.as_i64(),
        _ => None,
    };
    match b.op {
        Eq | Ne | Lt | Lte | Gt | Gte => match (reference(&b.left, scope), literal(&b.right)) {
            (Some(value), Some(n)) => Some((value, vec![n])),
            _ => Some((reference(&b.right, scope)?, vec![literal(&b.left)?])),
        },
        // Membership in a list of integer literals tells apart each item and the rest.
        In => {
            let Expr::List(list) = &b.right else {
                return None;
            };
            let items: Option<Vec<i64>> = list.items.iter().map(literal).collect();
            Some((reference(&b.left, scope)?, items?))
        }
        _ => None,
    }
}
