//! Walks over minijinja's syntax trees (its unstable `machinery` API): every expression inside
//! an expression, every statement and expression inside a statement. The readers of templates
//! (`usage.rs`, `javascript.rs`, the WGSL emitter's source map) each match what they look for.

use minijinja::machinery::ast::{CallArg, Expr, Stmt};

/// Calls `f` on `expr` and every expression inside it.
pub fn visit<'a>(expr: &Expr<'a>, f: &mut dyn FnMut(&Expr<'a>)) {
    f(expr);
    let mut each = |e: &Expr<'a>| visit(e, f);
    match expr {
        Expr::Var(_) | Expr::Const(_) => {}
        Expr::Slice(s) => {
            each(&s.expr);
            for part in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                each(part);
            }
        }
        Expr::UnaryOp(u) => each(&u.expr),
        Expr::BinOp(b) => {
            each(&b.left);
            each(&b.right);
        }
        Expr::Compare(c) => {
            each(&c.expr);
            for op in &c.ops {
                each(&op.expr);
            }
        }
        Expr::IfExpr(i) => {
            each(&i.test_expr);
            each(&i.true_expr);
            if let Some(other) = &i.false_expr {
                each(other);
            }
        }
        Expr::Filter(filter) => {
            if let Some(e) = &filter.expr {
                each(e);
            }
            call_args(&filter.args, &mut each);
        }
        Expr::Test(t) => {
            each(&t.expr);
            call_args(&t.args, &mut each);
        }
        Expr::GetAttr(g) => each(&g.expr),
        Expr::GetItem(g) => {
            each(&g.expr);
            each(&g.subscript_expr);
        }
        Expr::Call(c) => {
            each(&c.expr);
            call_args(&c.args, &mut each);
        }
        Expr::List(l) => l.items.iter().for_each(&mut each),
        Expr::Tuple(t) => t.items.iter().for_each(&mut each),
        Expr::Map(m) => m.keys.iter().chain(&m.values).for_each(&mut each),
    }
}

fn call_args<'a>(args: &[CallArg<'a>], each: &mut dyn FnMut(&Expr<'a>)) {
    for arg in args {
        match arg {
            CallArg::Pos(e)
            | CallArg::Kwarg(_, e)
            | CallArg::PosSplat(e)
            | CallArg::KwargSplat(e) => {
                each(e);
            }
        }
    }
}

/// Calls `on_stmt` on every statement of `stmt` and `on_expr` on every expression, at any
/// depth.
pub fn walk<'a>(
    stmt: &Stmt<'a>,
    on_stmt: &mut dyn FnMut(&Stmt<'a>),
    on_expr: &mut dyn FnMut(&Expr<'a>),
) {
    on_stmt(stmt);
    let mut body = |stmts: &[Stmt<'a>], on_expr: &mut dyn FnMut(&Expr<'a>)| {
        for s in stmts {
            walk(s, on_stmt, on_expr);
        }
    };
    let f = on_expr;
    match stmt {
        Stmt::Template(t) => body(&t.children, f),
        Stmt::EmitExpr(e) => visit(&e.expr, f),
        Stmt::EmitRaw(_) | Stmt::Continue(_) | Stmt::Break(_) => {}
        Stmt::Block(b) => body(&b.body, f),
        Stmt::ForLoop(l) => {
            visit(&l.target, f);
            visit(&l.iter, f);
            if let Some(filter) = &l.filter_expr {
                visit(filter, f);
            }
            body(&l.body, f);
            body(&l.else_body, f);
        }
        Stmt::IfCond(i) => {
            visit(&i.expr, f);
            body(&i.true_body, f);
            body(&i.false_body, f);
        }
        Stmt::WithBlock(w) => {
            for (target, value) in &w.assignments {
                visit(target, f);
                visit(value, f);
            }
            body(&w.body, f);
        }
        Stmt::Set(s) => visit(&s.expr, f),
        Stmt::SetBlock(s) => {
            if let Some(filter) = &s.filter {
                visit(filter, f);
            }
            body(&s.body, f);
        }
        Stmt::AutoEscape(a) => body(&a.body, f),
        Stmt::FilterBlock(b) => {
            visit(&b.filter, f);
            body(&b.body, f);
        }
        Stmt::Extends(e) => visit(&e.name, f),
        Stmt::Include(i) => visit(&i.name, f),
        Stmt::Import(i) => visit(&i.expr, f),
        Stmt::FromImport(i) => visit(&i.expr, f),
        Stmt::Macro(m) => {
            for default in &m.defaults {
                visit(default, f);
            }
            body(&m.body, f);
        }
        Stmt::CallBlock(c) => {
            call(&c.call.expr, &c.call.args, f);
            body(&c.macro_decl.body, f);
        }
        Stmt::Do(d) => call(&d.call.expr, &d.call.args, f),
    }
}

fn call<'a>(callee: &Expr<'a>, args: &[CallArg<'a>], f: &mut dyn FnMut(&Expr<'a>)) {
    visit(callee, f);
    call_args(args, &mut |e| visit(e, f));
}
