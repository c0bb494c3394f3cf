//! What an op takes at all (its contract), so that a call no variant accepts is reported as
//! an uncovered input only when it is within it; and the regions such calls fall into.
//!
//! A call's modes are its boolean parameters (`args.exact`, `args.finalize`) and which
//! optional inputs it passes; the variants whose mode tests it passes are the ones that apply
//! to it. A call is outside the contract when:
//! - a variant rejects it by a conjunct reading a parameter that every call any variant
//!   accepted satisfied (`args.bits == 2 or args.bits == 4` where one variant narrows it to
//!   `args.bits == 2`; `numel(shapes.a) >= args.M * args.K` where one variant asks for
//!   `args.M == 1` and `numel(shapes.a) >= args.K`): what the parameters mean, as the author
//!   wrote it;
//! - an applicable variant rejects it by a conjunct every applicable variant's `when` has
//!   (compared by structure: the seed's `commonContract` read by name, the corpus's
//!   `args.count > 0` written out in each variant): what the op requires in that mode;
//! - every variant rejects it by a mode, a rank equality or an axis's range: together they
//!   declare the modes, ranks and axes the op takes.
//!
//! A limit on shapes or ranks (`K > 0`, `ranks.x <= 8`) that some applicable variant does
//! without is never the contract: ONNX takes any shape.

use std::collections::BTreeSet;

use super::eval::CallEnv;
use super::inputs::Input;
use super::{Witness, repair};
use crate::expr::{Ir, IrKind, Span, Symbol, Type, Value};
use crate::model::Op;

/// What a call must meet to be within an op's contract.
pub(super) struct Contract {
    /// Each variant's conjuncts, without spans.
    conjuncts: Vec<Vec<Ir>>,
    /// Conjuncts that read a parameter (an attribute or argument) and not every variant has:
    /// a variant that has it, the conjunct, the same without spans, and whether a call some
    /// variant accepted broke it.
    domain: Vec<(usize, Ir, Ir, bool)>,
}

impl Contract {
    pub(super) fn of(op: &Op) -> Self {
        let per_variant: Vec<Vec<&Ir>> = (op.variants.iter())
            .map(|v| {
                repair::when_conjuncts(op, v)
                    .into_iter()
                    .map(|(ir, _)| ir)
                    .collect()
            })
            .collect();
        let conjuncts: Vec<Vec<Ir>> = per_variant
            .iter()
            .map(|c| c.iter().map(|ir| without_spans(ir)).collect())
            .collect();
        let shared = shared_by(&conjuncts, 0..conjuncts.len());
        let mut domain: Vec<(usize, Ir, Ir, bool)> = Vec::new();
        for (v, irs) in per_variant.iter().enumerate() {
            for (ir, bare) in irs.iter().zip(&conjuncts[v]) {
                if reads_parameter(ir)
                    && !shared.contains(bare)
                    && !domain.iter().any(|(_, _, seen, _)| seen == bare)
                {
                    domain.push((v, (*ir).clone(), bare.clone(), false));
                }
            }
        }
        Contract { conjuncts, domain }
    }

    /// Records a call some variant accepted: every parameter conjunct it breaks is not part
    /// of the contract.
    pub(super) fn accepted(&mut self, op: &Op, env: &CallEnv<'_>) {
        for (v, ir, _, broken) in self.domain.iter_mut().filter(|d| !d.3) {
            let scoped = env.within(&op.variants[*v], false);
            *broken = !matches!(scoped.eval(ir), Ok(Value::Bool(true)));
        }
    }

    /// Why no variant accepts a call: each applicable variant's first failing conjunct, or
    /// `None` when the call is outside the contract.
    pub(super) fn rejections(&self, op: &Op, env: &CallEnv<'_>, order: &[usize]) -> Option<String> {
        let mut failing = Vec::new();
        for &v in order {
            let scoped = env.within(&op.variants[v], false);
            let holds = |c: &Ir| matches!(scoped.eval(c), Ok(Value::Bool(true)));
            // Every clause that fails, not only the first: a variant may test sizes before it
            // tests the axis its contract is about.
            let mut conjuncts = Vec::new();
            for clause in op.variants[v].when.iter().filter(|c| !holds(&c.ir)) {
                repair::conjuncts(op, &clause.ir, &clause.source, &mut conjuncts);
            }
            conjuncts.retain(|(c, _)| !holds(c));
            if !conjuncts.is_empty() {
                failing.push((v, conjuncts));
            }
        }
        let parameter_domain = |c: &Ir| {
            let bare = without_spans(c);
            self.domain
                .iter()
                .any(|(_, _, seen, broken)| !broken && *seen == bare)
        };
        if failing
            .iter()
            .any(|(_, cs)| cs.iter().any(|(c, _)| parameter_domain(c)))
        {
            return None;
        }
        failing.retain(|(_, cs)| !cs.iter().any(|(c, _)| is_mode(c)));
        let required = shared_by(&self.conjuncts, failing.iter().map(|(v, _)| *v));
        let mut rejections = Vec::new();
        let mut by_structure = true;
        for (v, conjuncts) in &failing {
            if conjuncts
                .iter()
                .any(|(c, _)| required.contains(&without_spans(c)))
            {
                return None;
            }
            by_structure &= conjuncts
                .iter()
                .any(|(c, _)| is_rank_equality(c) || is_axis_range(c));
            let (first, source) = conjuncts[0];
            let text = source
                .get(first.span.start..first.span.end)
                .unwrap_or(source);
            rejections.push(format!("`{}` rejects by `{text}`", op.variants[*v].id));
        }
        (!by_structure && !rejections.is_empty()).then(|| rejections.join("; "))
    }
}

/// The conjuncts every one of `variants` has.
fn shared_by(conjuncts: &[Vec<Ir>], variants: impl IntoIterator<Item = usize>) -> Vec<Ir> {
    let mut variants = variants.into_iter();
    let Some(first) = variants.next() else {
        return Vec::new();
    };
    let rest: Vec<usize> = variants.collect();
    conjuncts[first]
        .iter()
        .filter(|c| rest.iter().all(|&v| conjuncts[v].contains(c)))
        .cloned()
        .collect()
}

/// A boolean parameter, an optional input's presence, or the negation of either
/// (`args.exact`, `not present.w`): a mode the caller chooses.
fn is_mode(ir: &Ir) -> bool {
    use crate::expr::ast::UnaryOp;
    match &ir.kind {
        IrKind::Sym(Symbol::Attr(_) | Symbol::Arg(_)) => ir.ty == Type::Bool,
        IrKind::Sym(Symbol::Present(_)) => true,
        IrKind::Truthy(x) => matches!(x.kind, IrKind::Sym(Symbol::Attr(_) | Symbol::Arg(_))),
        IrKind::Unary(UnaryOp::Not, x) => is_mode(x),
        _ => false,
    }
}

/// The expression with its source positions cleared, so that two texts of the same
/// condition compare equal.
pub(super) fn without_spans(ir: &Ir) -> Ir {
    ir.clone().respanned(Span::default())
}

/// A conjunct that reads an attribute or argument.
fn reads_parameter(ir: &Ir) -> bool {
    ir.symbols()
        .iter()
        .any(|s| matches!(s, Symbol::Attr(_) | Symbol::Arg(_)))
}

/// A clause that relates attributes to ranks and reads nothing else (`attrs.axis <
/// ranks.x`, `attrs.axis == -1 or attrs.axis == ranks.x - 1`): an axis's range, which ONNX
/// defines, not a limit of the op's kernels.
fn is_axis_range(ir: &Ir) -> bool {
    let symbols = ir.symbols();
    let attr = |s: &Symbol| matches!(s, Symbol::Attr(_) | Symbol::Arg(_));
    symbols.iter().any(attr)
        && symbols.iter().any(|s| matches!(s, Symbol::Rank(_)))
        && symbols
            .iter()
            .all(|s| attr(s) || matches!(s, Symbol::Rank(_)))
}

/// `ranks.x == k` or `k == ranks.x`.
fn is_rank_equality(ir: &Ir) -> bool {
    use crate::expr::ast::BinOp;
    match &ir.kind {
        IrKind::Binary(BinOp::Eq, a, b) | IrKind::LooseCompare(BinOp::Eq, a, b) => matches!(
            (&a.kind, &b.kind),
            (IrKind::Sym(Symbol::Rank(_)), IrKind::Int(_))
                | (IrKind::Int(_), IrKind::Sym(Symbol::Rank(_)))
        ),
        _ => false,
    }
}

/// The calls of one uncovered region: how many, the first, and the ranks and empty tensors
/// seen.
pub(super) struct Region {
    pub(super) calls: usize,
    pub(super) witness: Witness,
    ranks: Vec<BTreeSet<usize>>,
    empty: BTreeSet<String>,
}

impl Region {
    pub(super) fn new(op: &Op, witness: Witness) -> Self {
        Region {
            calls: 0,
            witness,
            ranks: vec![BTreeSet::new(); op.inputs.len()],
            empty: BTreeSet::new(),
        }
    }

    pub(super) fn add(&mut self, op: &Op, input: &Input) {
        self.calls += 1;
        for (i, t) in op.inputs.iter().enumerate() {
            if let Some(Some(shape)) = input.shapes.get(i) {
                self.ranks[i].insert(shape.len());
                if shape.contains(&0) {
                    self.empty.insert(t.role.clone());
                }
            }
        }
    }

    pub(super) fn describe(&self, op: &Op) -> String {
        let ranks: Vec<String> = op
            .inputs
            .iter()
            .zip(&self.ranks)
            .filter(|(_, r)| !r.is_empty())
            .map(|(t, r)| {
                let r: Vec<String> = r.iter().map(usize::to_string).collect();
                format!("rank {} ∈ {{{}}}", t.role, r.join(", "))
            })
            .collect();
        let mut text = ranks.join(", ");
        if !self.empty.is_empty() {
            let empty: Vec<&str> = self.empty.iter().map(String::as_str).collect();
            text.push_str(&format!("; empty at times: {}", empty.join(", ")));
        }
        text
    }
}
