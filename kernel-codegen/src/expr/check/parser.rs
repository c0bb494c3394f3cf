//! Recursive-descent parser for the expression language, with Jinja's precedence.
//!
//! From loosest to tightest: `a if c else b` (right-associative), `or`, `and`, `not`,
//! comparisons (in V1 also `in` and `not in`; a chain `a < b < c` is one
//! [`ExprKind::Compare`]), `~` (V1), `+ -`, `* / // %` (`//` in V1), `**` (left-associative,
//! as in Jinja and unlike Python: `2 ** 3 ** 2` is `(2 ** 3) ** 2`), then a unary operand:
//! `-` applies to a primary with its postfix operators (`.name`, `[i]`, `(args)`), and filters
//! (`| name`) and tests (`is [not] name`) apply to the result. As in Jinja, `a + b | length` is
//! `a + (b | length)`, `-x | f` is `(-x) | f`, and `-2 ** 2` is `(-2) ** 2` (Jinja's
//! `parse_pow` reads its operands with `parse_unary`). This mirrors minijinja's parser so that
//! the differential test sees the same trees.

use super::Dialect;
use super::lexer::{Tok, Token, tokenize};
use crate::expr::ast::{BinOp, Comparison, Expr, ExprKind, UnaryOp};
use crate::expr::{ExprError, Span};

/// Parser recursion (parentheses, calls, brackets, prefix operators) beyond which parsing fails
/// instead of risking a stack overflow. Debug builds spend ~20 KiB of stack per level.
const MAX_DEPTH: usize = 32;

/// Syntax tree depth beyond which parsing fails: checking, evaluation and lowering recurse over
/// the tree, and a long `a and b and …` chain is deep without any parentheses.
const MAX_TREE_DEPTH: usize = 128;

/// Words that cannot be used as names.
const KEYWORDS: &[&str] = &[
    "and", "or", "not", "if", "else", "is", "in", "true", "false", "True", "False", "none", "None",
];

/// Parses one expression of the seed dialect; the whole input must be consumed.
pub fn parse(src: &str) -> Result<Expr, ExprError> {
    parse_in(src, Dialect::Seed)
}

/// Parses one expression of `dialect`; the whole input must be consumed.
pub fn parse_in(src: &str, dialect: Dialect) -> Result<Expr, ExprError> {
    let tokens = tokenize(src, dialect)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        end: src.len(),
        depth: 0,
        dialect,
    };
    let expr = parser.expr()?;
    if let Some(token) = parser.peek() {
        return Err(ExprError::new(
            token.span,
            format!("unexpected {} after the expression", token.tok),
        ));
    }
    check_tree_depth(&expr)?;
    Ok(expr)
}

/// Rejects trees deeper than [`MAX_TREE_DEPTH`], walking with an explicit stack.
fn check_tree_depth(root: &Expr) -> Result<(), ExprError> {
    let mut stack = vec![(root, 1)];
    while let Some((e, depth)) = stack.pop() {
        if depth > MAX_TREE_DEPTH {
            return Err(ExprError::new(
                e.span,
                format!(
                    "expression is nested too deeply (more than {MAX_TREE_DEPTH} operations deep)"
                ),
            ));
        }
        stack.extend(e.children().into_iter().map(|c| (c, depth + 1)));
    }
    Ok(())
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Source length, for the span of "end of input" errors.
    end: usize,
    depth: usize,
    dialect: Dialect,
}

type PResult = Result<Expr, ExprError>;

fn boxed(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn peek_is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
    }

    fn peek_is_keyword(&self, k: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Ident(w), .. }) if w == k)
    }

    /// Consumes the current token and returns its span.
    fn bump(&mut self) -> Span {
        let span = self
            .peek()
            .map_or(Span::new(self.end, self.end), |t| t.span);
        self.pos += 1;
        span
    }

    fn eat_punct(&mut self, p: &str) -> Option<Span> {
        self.peek_is_punct(p).then(|| self.bump())
    }

    fn eat_keyword(&mut self, k: &str) -> Option<Span> {
        self.peek_is_keyword(k).then(|| self.bump())
    }

    /// An error at the current token (or at the end of the input).
    fn error_here(&self, expected: &str) -> ExprError {
        match self.peek() {
            Some(token) => ExprError::new(
                token.span,
                format!("expected {expected}, found {}", token.tok),
            ),
            None => ExprError::new(
                Span::new(self.end, self.end),
                format!("expected {expected}, found the end of the expression"),
            ),
        }
    }

    fn expect_punct(&mut self, p: &str) -> Result<Span, ExprError> {
        self.eat_punct(p)
            .ok_or_else(|| self.error_here(&format!("`{p}`")))
    }

    /// A name after `.`, `|` or `is`, with its span.
    fn expect_name(&mut self, what: &str) -> Result<(String, Span), ExprError> {
        match self.peek() {
            Some(Token {
                tok: Tok::Ident(name),
                span,
            }) => {
                let found = (name.clone(), *span);
                self.pos += 1;
                Ok(found)
            }
            _ => Err(self.error_here(what)),
        }
    }

    /// Enters one level of recursion; every recursive production calls this so that hostile
    /// input (`((((…`, `- - - …`) fails cleanly instead of overflowing the stack.
    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self
                .peek()
                .map_or(Span::new(self.end, self.end), |t| t.span);
            return Err(ExprError::new(
                span,
                format!("expression is nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    /// `then if cond else otherwise`, right-associative; the lowest precedence level.
    fn expr(&mut self) -> PResult {
        self.enter()?;
        let then = self.or()?;
        let result = if self.eat_keyword("if").is_some() {
            let cond = self.or()?;
            if self.eat_keyword("else").is_none() {
                return Err(self.error_here("`else` (conditional expressions need both branches)"));
            }
            let otherwise = self.expr()?;
            let span = then.span.to(otherwise.span);
            Expr {
                kind: ExprKind::Cond {
                    cond: boxed(cond),
                    then: boxed(then),
                    otherwise: boxed(otherwise),
                },
                span,
            }
        } else {
            then
        };
        self.depth -= 1;
        Ok(result)
    }

    /// Builds a left-associative binary node.
    fn binary(op: BinOp, op_span: Span, lhs: Expr, rhs: Expr) -> Expr {
        let span = lhs.span.to(rhs.span);
        Expr {
            kind: ExprKind::Binary {
                op,
                op_span,
                lhs: boxed(lhs),
                rhs: boxed(rhs),
            },
            span,
        }
    }

    fn or(&mut self) -> PResult {
        let mut lhs = self.and()?;
        while let Some(op_span) = self.eat_keyword("or") {
            let rhs = self.and()?;
            lhs = Self::binary(BinOp::Or, op_span, lhs, rhs);
        }
        Ok(lhs)
    }

    fn and(&mut self) -> PResult {
        let mut lhs = self.not()?;
        while let Some(op_span) = self.eat_keyword("and") {
            let rhs = self.not()?;
            lhs = Self::binary(BinOp::And, op_span, lhs, rhs);
        }
        Ok(lhs)
    }

    fn not(&mut self) -> PResult {
        let Some(not_span) = self.eat_keyword("not") else {
            return self.compare();
        };
        self.enter()?;
        let operand = self.not()?;
        self.depth -= 1;
        let span = not_span.to(operand.span);
        Ok(Expr {
            kind: ExprKind::Unary {
                op: UnaryOp::Not,
                operand: boxed(operand),
            },
            span,
        })
    }

    /// The comparison operator at the current token, if any (V1: also `in` and `not in`).
    fn comparison_op(&self) -> Option<BinOp> {
        if self.dialect.is_jinja() {
            if self.peek_is_keyword("in") {
                return Some(BinOp::In);
            }
            let next_is_in = matches!(
                self.tokens.get(self.pos + 1),
                Some(Token { tok: Tok::Ident(w), .. }) if w == "in"
            );
            if self.peek_is_keyword("not") && next_is_in {
                return Some(BinOp::NotIn);
            }
        }
        let Some(Token {
            tok: Tok::Punct(p), ..
        }) = self.peek()
        else {
            return None;
        };
        Some(match *p {
            "==" => BinOp::Eq,
            "!=" => BinOp::Ne,
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            _ => return None,
        })
    }

    /// The seed dialect has no `in` / `not in`: a specific error where one would follow an
    /// operand.
    fn refuse_seed_membership(&self) -> Result<(), ExprError> {
        for (keyword, op) in [("in", "in"), ("not", "not in")] {
            if let Some(Token { span, .. }) = self
                .peek()
                .filter(|_| self.dialect == Dialect::Seed && self.peek_is_keyword(keyword))
            {
                return Err(ExprError::new(
                    *span,
                    format!("operator `{op}` is not supported"),
                ));
            }
        }
        Ok(())
    }

    fn compare(&mut self) -> PResult {
        let lhs = self.additive()?;
        self.refuse_seed_membership()?;
        // Jinja chains comparisons as Python does: `a < b < c` is `a < b and b < c`.
        let mut rest = Vec::new();
        while let Some(op) = self.comparison_op() {
            let mut op_span = self.bump();
            if op == BinOp::NotIn {
                op_span = op_span.to(self.bump());
            }
            let rhs = self.additive()?;
            self.refuse_seed_membership()?;
            rest.push(Comparison { op, op_span, rhs });
        }
        if rest.len() < 2 {
            return Ok(match rest.pop() {
                Some(Comparison { op, op_span, rhs }) => Self::binary(op, op_span, lhs, rhs),
                None => lhs,
            });
        }
        let span = rest.iter().fold(lhs.span, |span, c| span.to(c.rhs.span));
        Ok(Expr {
            kind: ExprKind::Compare {
                first: boxed(lhs),
                rest,
            },
            span,
        })
    }

    /// `a ~ b` (V1; the seed's lexer never produces `~`). As in Jinja's parser, it binds
    /// tighter than `+` and `-` and looser than `*`: `1 + 2 ~ 3 * 4` is `1 + (2 ~ (3 * 4))`.
    fn concat(&mut self) -> PResult {
        let mut lhs = self.multiplicative()?;
        while let Some(op_span) = self.eat_punct("~") {
            let rhs = self.multiplicative()?;
            lhs = Self::binary(BinOp::Concat, op_span, lhs, rhs);
        }
        Ok(lhs)
    }

    fn additive(&mut self) -> PResult {
        let mut lhs = self.concat()?;
        loop {
            let op = if self.peek_is_punct("+") {
                BinOp::Add
            } else if self.peek_is_punct("-") {
                BinOp::Sub
            } else {
                return Ok(lhs);
            };
            let op_span = self.bump();
            let rhs = self.concat()?;
            lhs = Self::binary(op, op_span, lhs, rhs);
        }
    }

    fn multiplicative(&mut self) -> PResult {
        let mut lhs = self.power()?;
        loop {
            let op = if self.peek_is_punct("*") {
                BinOp::Mul
            } else if self.peek_is_punct("/") {
                BinOp::Div
            } else if self.peek_is_punct("//") {
                BinOp::FloorDiv
            } else if self.peek_is_punct("%") {
                BinOp::Rem
            } else {
                return Ok(lhs);
            };
            let op_span = self.bump();
            let rhs = self.power()?;
            lhs = Self::binary(op, op_span, lhs, rhs);
        }
    }

    /// `a ** b`, left-associative as Jinja's `parse_pow` loops (Python's `**` nests to the
    /// right). Both operands are unary operands, so `-2 ** 2` is `(-2) ** 2` and `2 ** -1` is
    /// `2 ** (-1)`, and filters bind tighter: `2 ** x | length` is `2 ** (x | length)`.
    fn power(&mut self) -> PResult {
        let mut lhs = self.unary()?;
        while let Some(op_span) = self.eat_punct("**") {
            let rhs = self.unary()?;
            lhs = Self::binary(BinOp::Pow, op_span, lhs, rhs);
        }
        Ok(lhs)
    }

    /// A unary operand followed by filters and tests.
    fn unary(&mut self) -> PResult {
        let operand = self.unary_only()?;
        let operand = self.postfix(operand)?;
        self.filters(operand)
    }

    /// `-` binds to a primary with its postfix operators: `-x.y` is `-(x.y)`.
    fn unary_only(&mut self) -> PResult {
        let Some(minus) = self.eat_punct("-") else {
            return self.primary();
        };
        self.enter()?;
        let operand = self.unary_only()?;
        self.depth -= 1;
        let operand = self.postfix(operand)?;
        let span = minus.to(operand.span);
        Ok(Expr {
            kind: ExprKind::Unary {
                op: UnaryOp::Neg,
                operand: boxed(operand),
            },
            span,
        })
    }

    fn postfix(&mut self, mut expr: Expr) -> PResult {
        loop {
            if self.eat_punct(".").is_some() {
                let (name, name_span) = self.expect_name("a member name after `.`")?;
                let span = expr.span.to(name_span);
                expr = Expr {
                    kind: ExprKind::Member {
                        base: boxed(expr),
                        name,
                        name_span,
                    },
                    span,
                };
            } else if self.eat_punct("[").is_some() {
                // `[:end]`, `[start:]`, `[start:end]` or `[:]` (the lexer has `:` only in the
                // Jinja dialects).
                let start = if self.peek_is_punct(":") {
                    None
                } else {
                    Some(self.expr()?)
                };
                if self.eat_punct(":").is_some() {
                    let end = if self.peek_is_punct("]") {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    let close = self.expect_punct("]")?;
                    let span = expr.span.to(close);
                    expr = Expr {
                        kind: ExprKind::Slice {
                            base: boxed(expr),
                            start: start.map(boxed),
                            end: end.map(boxed),
                        },
                        span,
                    };
                    continue;
                }
                let index = start.expect("an index is parsed unless `:` follows `[`");
                let close = self.expect_punct("]")?;
                let span = expr.span.to(close);
                expr = Expr {
                    kind: ExprKind::Index {
                        base: boxed(expr),
                        index: boxed(index),
                    },
                    span,
                };
            } else if self.peek_is_punct("(") {
                let (args, close) = self.args()?;
                let span = expr.span.to(close);
                expr = Expr {
                    kind: ExprKind::Call {
                        callee: boxed(expr),
                        args,
                    },
                    span,
                };
            } else {
                return Ok(expr);
            }
        }
    }

    /// `(a, b, …)` with an optional trailing comma; returns the arguments and the `)` span.
    fn args(&mut self) -> Result<(Vec<Expr>, Span), ExprError> {
        self.expect_punct("(")?;
        let mut args = Vec::new();
        loop {
            if let Some(close) = self.eat_punct(")") {
                return Ok((args, close));
            }
            args.push(self.expr()?);
            if let Some(close) = self.eat_punct(")") {
                return Ok((args, close));
            }
            if self.eat_punct(",").is_none() {
                return Err(self.error_here("`,` or `)`"));
            }
        }
    }

    /// Arguments after a filter or test name, when parentheses follow.
    fn optional_args(&mut self) -> Result<(Vec<Expr>, Option<Span>), ExprError> {
        if self.peek_is_punct("(") {
            let (args, close) = self.args()?;
            Ok((args, Some(close)))
        } else {
            Ok((Vec::new(), None))
        }
    }

    fn filters(&mut self, mut expr: Expr) -> PResult {
        loop {
            if self.eat_punct("|").is_some() {
                let (name, name_span) = self.expect_name("a filter name after `|`")?;
                let (args, close) = self.optional_args()?;
                let span = expr.span.to(close.unwrap_or(name_span));
                expr = Expr {
                    kind: ExprKind::Filter {
                        value: boxed(expr),
                        name,
                        name_span,
                        args,
                    },
                    span,
                };
            } else if self.eat_keyword("is").is_some() {
                let negated = self.eat_keyword("not").is_some();
                let (name, name_span) = self.expect_name("a test name after `is`")?;
                let (args, close) = self.optional_args()?;
                let span = expr.span.to(close.unwrap_or(name_span));
                expr = Expr {
                    kind: ExprKind::Test {
                        value: boxed(expr),
                        name,
                        name_span,
                        negated,
                        args,
                    },
                    span,
                };
            } else {
                return Ok(expr);
            }
        }
    }

    fn primary(&mut self) -> PResult {
        let Some(Token { tok, span }) = self.peek().cloned() else {
            return Err(self.error_here("an expression"));
        };
        let kind = match tok {
            Tok::Int(v) => ExprKind::Int(v),
            Tok::Float(v) => ExprKind::Float(v),
            Tok::Str(v) => ExprKind::Str(v),
            Tok::Ident(word) => match word.as_str() {
                "true" | "True" => ExprKind::Bool(true),
                "false" | "False" => ExprKind::Bool(false),
                "none" | "None" => {
                    return Err(ExprError::new(span, format!("`{word}` is not supported")));
                }
                w if KEYWORDS.contains(&w) => return Err(self.error_here("an expression")),
                _ => ExprKind::Name(word),
            },
            Tok::Punct("(") => {
                self.bump();
                let mut inner = self.expr()?;
                if self.peek_is_punct(",") {
                    return Err(self.error_here("`)` (tuples are not supported)"));
                }
                let close = self.expect_punct(")")?;
                // The parentheses belong to the expression's text, so that quoting a clause
                // (as rejection messages do) keeps them balanced.
                inner.span = span.to(close);
                return Ok(inner);
            }
            Tok::Punct("[") => return self.list(),
            Tok::Punct(_) => return Err(self.error_here("an expression")),
        };
        self.bump();
        Ok(Expr { kind, span })
    }

    /// `[a, b, …]` with an optional trailing comma.
    fn list(&mut self) -> PResult {
        let open = self.expect_punct("[")?;
        let mut items = Vec::new();
        loop {
            if let Some(close) = self.eat_punct("]") {
                return Ok(Expr {
                    kind: ExprKind::List(items),
                    span: open.to(close),
                });
            }
            items.push(self.expr()?);
            if !self.peek_is_punct("]") && self.eat_punct(",").is_none() {
                return Err(self.error_here("`,` or `]`"));
            }
        }
    }
}
