//! Lowering of what only the V1 dialect has: truthiness tests (of values that may be
//! undefined), `~` (which builds a `String`), `in`, whole-number conversion and the builtins
//! whose runtime function depends on the argument type (`ceil`, `pow`, `pow2ceil`, …).
//!
//! Every operation calls the runtime function the interpreter calls, so both agree on results
//! and error messages; the contract for tokens is in `lower.rs`.

use proc_macro2::TokenStream;
use quote::quote;

use super::ast::BinOp;
use super::lower::{Lowered, Lowerer, Prec, ident, is_owned_str};
use super::{Ir, IrKind, Symbol, Type};

/// A runtime function name and whether it returns a `Result`.
type RuntimeFn = (&'static str, bool);

impl Lowerer<'_> {
    /// A branch of a conditional whose value must be a `String` when `owned`.
    pub(super) fn branch(&self, ir: &Ir, owned: bool) -> TokenStream {
        let value = self.value(ir).tokens;
        if owned && !is_owned_str(ir) {
            quote!(::std::string::String::from(#value))
        } else {
            value
        }
    }

    /// A Str, Dtype or Int value as a `&str` argument of a runtime function.
    pub(super) fn str_arg(&self, ir: &Ir) -> TokenStream {
        let rt = &self.rt;
        if ir.ty == Type::Int {
            let v = self.value(ir).tokens;
            quote!(&#rt::int_to_str(#v))
        } else if is_owned_str(ir) {
            let v = self.value(ir).at(Prec::Unary);
            quote!(&#v)
        } else {
            self.value(ir).tokens
        }
    }

    /// A Float that must be a whole number, as an `i64`.
    pub(super) fn to_int(&self, x: &Ir) -> Lowered {
        let rt = &self.rt;
        let x = self.value(x).tokens;
        Lowered::try_call(quote!(#rt::to_int_exact(#x)))
    }

    /// Jinja truthiness; a symbol that may be undefined is tested first, so that its value is
    /// only read when it is given: `(#defined && <value truthy>)`.
    pub(super) fn truthy(&self, x: &Ir) -> Lowered {
        let rt = &self.rt;
        let value = match x.ty {
            Type::Bool => self.value(x),
            Type::Int => {
                let v = self.value(x).tokens;
                Lowered::new(quote!(#rt::truthy_int(#v)), Prec::Atom)
            }
            Type::Float => {
                let v = self.value(x).tokens;
                Lowered::new(quote!(#rt::truthy_float(#v)), Prec::Atom)
            }
            Type::Str | Type::Dtype => {
                let v = self.str_arg(x);
                Lowered::new(quote!(#rt::truthy_str(#v)), Prec::Atom)
            }
            Type::List => {
                let v = self.list_slice(x).tokens;
                Lowered::new(quote!(#rt::truthy_list(#v)), Prec::Atom)
            }
        };
        let IrKind::Sym(sym) = &x.kind else {
            return value;
        };
        if matches!(sym, Symbol::Derived(_) | Symbol::Present(_)) {
            return value;
        }
        let defined = self.scope.is_defined(sym);
        // A symbol that is always defined needs no test (and `true && x` would be noise).
        if defined.to_string() == "true" {
            return value;
        }
        if let Some(both) = self.scope.truthy_if_given(sym) {
            return Lowered::new(both, Prec::Atom);
        }
        let value = value.at(Prec::And);
        Lowered::new(quote!(#defined && #value), Prec::And)
    }

    /// The `is defined` tests a comparison of `lhs` and `rhs` needs: one per operand that may
    /// be undefined, unless an enclosing `has(…) and …` has tested it already.
    fn definedness_guards(&self, lhs: &Ir, rhs: &Ir) -> Vec<TokenStream> {
        [lhs, rhs]
            .into_iter()
            .filter_map(Ir::undefined_operand)
            .filter(|sym| !self.known_defined.borrow().contains(sym))
            .map(|sym| self.scope.is_defined(sym))
            .filter(|defined| defined.to_string() != "true")
            .collect()
    }

    /// V1's `<`, `<=`, `>`, `>=` when an operand may be undefined: false unless both are
    /// defined, as the engine orders nothing against `undefined`.
    /// A [`IrKind::LooseCompare`]: compared only where every operand that may be undefined is
    /// given.
    pub(super) fn loose_compare(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            let compared = if lhs.ty == Type::List {
                self.list_equality(op, lhs, rhs)
            } else {
                self.comparison(op, lhs, rhs)
            };
            self.guarded_equality(op, lhs, rhs, compared)
        } else {
            let compared = self.comparison(op, lhs, rhs);
            self.guarded_order(lhs, rhs, compared)
        }
    }

    fn guarded_order(&self, lhs: &Ir, rhs: &Ir, compared: Lowered) -> Lowered {
        let guards = self.definedness_guards(lhs, rhs);
        if guards.is_empty() {
            return compared;
        }
        let c = compared.at(Prec::And);
        Lowered::new(quote!(#(#guards &&)* #c), Prec::And)
    }

    /// V1's `==` / `!=` when an operand may be undefined: the comparison is made only when
    /// both are defined; an undefined operand equals only another undefined one.
    fn guarded_equality(&self, op: BinOp, lhs: &Ir, rhs: &Ir, compared: Lowered) -> Lowered {
        let guards = self.definedness_guards(lhs, rhs);
        let eq = op == BinOp::Eq;
        match guards.as_slice() {
            [] => compared,
            [d] if eq => {
                let c = compared.at(Prec::And);
                Lowered::new(quote!(#d && #c), Prec::And)
            }
            [d] => {
                let c = compared.at(Prec::Or);
                Lowered::new(quote!(!#d || #c), Prec::Or)
            }
            [a, b, ..] => {
                let c = compared.tokens;
                let otherwise = if eq {
                    quote!(!#a && !#b)
                } else {
                    quote!(#a || #b)
                };
                Lowered::new(quote!(if #a && #b { #c } else { #otherwise }), Prec::Cond)
            }
        }
    }

    /// `a ~ b`, a `String`.
    pub(super) fn concat(&self, lhs: &Ir, rhs: &Ir) -> Lowered {
        let rt = &self.rt;
        let (l, r) = (self.str_arg(lhs), self.str_arg(rhs));
        Lowered::new(quote!(#rt::concat(#l, #r)), Prec::Atom)
    }

    /// `x in y` / `x not in y` with a List or Str `y` (list literals were rewritten into
    /// comparisons by the checker).
    pub(super) fn membership(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        let rt = &self.rt;
        let test = if rhs.ty == Type::List {
            let list = self.list_slice(rhs).tokens;
            let v = self.value(lhs).tokens;
            quote!(#rt::contains(#list, #v))
        } else {
            let (hay, needle) = (self.str_arg(rhs), self.str_arg(lhs));
            quote!(#rt::contains_str(#hay, #needle))
        };
        if op == BinOp::NotIn {
            Lowered::new(quote!(!#test), Prec::Unary)
        } else {
            Lowered::new(test, Prec::Atom)
        }
    }

    /// A builtin whose runtime function depends on the argument type; `int: None` means the
    /// Int argument is the result (`ceil` of an Int).
    pub(super) fn by_type(&self, args: &[Ir], int: Option<RuntimeFn>, float: RuntimeFn) -> Lowered {
        let is_int = args.first().is_some_and(|a| a.ty == Type::Int);
        let (name, fallible) = match (is_int, int) {
            (true, None) => {
                return args
                    .first()
                    .map_or_else(|| Lowered::new(quote!(0i64), Prec::Atom), |a| self.value(a));
            }
            (true, Some(f)) => f,
            (false, _) => {
                if let Some(quotient) = self.rounded_quotient(float.0, args) {
                    return quotient;
                }
                float
            }
        };
        let rt = &self.rt;
        let name = ident(name);
        let args = args.iter().map(|a| self.value(a).tokens);
        let call = quote!(#rt::#name(#(#args),*));
        if fallible {
            Lowered::try_call(call)
        } else {
            Lowered::new(call, Prec::Atom)
        }
    }

    /// `ceil(a / b)` or `floor(a / b)` of two Ints (the Float division and the rounding, as
    /// the language computes them) as one runtime call: the most common dispatch size, written
    /// as a reader writes it rather than as four nested conversions.
    fn rounded_quotient(&self, rounding: &str, args: &[Ir]) -> Option<Lowered> {
        let name = match rounding {
            "ceil" => ident("ceil_quotient"),
            "floor" => ident("floor_quotient"),
            _ => return None,
        };
        let [arg] = args else { return None };
        let IrKind::Binary(BinOp::Div, lhs, rhs) = &arg.kind else {
            return None;
        };
        let (IrKind::ToFloat(a), IrKind::ToFloat(b)) = (&lhs.kind, &rhs.kind) else {
            return None;
        };
        let rt = &self.rt;
        let (a, b) = (self.value(a).tokens, self.value(b).tokens);
        Some(Lowered::try_call(quote!(#rt::#name(#a, #b))))
    }
}
