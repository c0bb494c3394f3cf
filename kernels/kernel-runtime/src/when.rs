//! Variant selection as data: a generated module lists each variant's `when` conditions (and
//! the conjuncts of the `derive` entries they explain through) as [`Clause`] tables of source
//! text and compiled test; [`select`] walks them in priority order and explains every
//! rejection by its first failing clause.
//!
//! `F` is the generated module's test type, a [`Test`] of two function pointers over every
//! lifetime of its environment (which a `static` can hold): whether the condition holds, and
//! the values of its operands, which a rejection shows. Any `Fn(&E) -> Result<bool, _>` is a
//! [`Condition`] too, without operands.

use crate::error::{OpError, Rejection};
use crate::expr::EvalError;
use crate::support::{Failure, require};

/// One operand of a failing condition: its source text and its value as the rejection
/// prints it (or why it could not be computed).
#[derive(Debug, Clone, PartialEq)]
pub struct Operand {
    pub text: &'static str,
    pub value: String,
}

/// The operand `text` with the value its compiled expression computes.
pub fn operand<T: std::fmt::Debug>(
    text: &'static str,
    value: impl FnOnce() -> Result<T, EvalError>,
) -> Operand {
    Operand {
        text,
        value: match value() {
            Ok(value) => format!("{value:?}"),
            Err(error) => format!("unknown ({error})"),
        },
    }
}

/// Whether a conjunct of a failing condition does not hold (is false or cannot be computed):
/// its operands are the ones a rejection shows.
pub fn fails(test: impl FnOnce() -> Result<bool, EvalError>) -> bool {
    !matches!(test(), Ok(true))
}

/// A compiled condition over environments `E`: whether it holds, and its operands' values.
pub trait Condition<E> {
    fn holds(&self, env: &E) -> Result<bool, EvalError>;

    /// What the condition compares or passes to its calls, with their values; computed only
    /// for a rejection.
    fn operands(&self, _env: &E) -> Vec<Operand> {
        Vec::new()
    }
}

impl<E, F: Fn(&E) -> Result<bool, EvalError>> Condition<E> for F {
    fn holds(&self, env: &E) -> Result<bool, EvalError> {
        self(env)
    }
}

/// A condition as generated code compiles it: its test and its operands.
#[derive(Debug, Clone, Copy)]
pub struct Test<H, O> {
    pub holds: H,
    pub operands: O,
}

impl<E, H, O> Condition<E> for Test<H, O>
where
    H: Fn(&E) -> Result<bool, EvalError>,
    O: Fn(&E) -> Vec<Operand>,
{
    fn holds(&self, env: &E) -> Result<bool, EvalError> {
        (self.holds)(env)
    }

    fn operands(&self, env: &E) -> Vec<Operand> {
        (self.operands)(env)
    }
}

/// One condition of a `when` list or of an explained `derive` entry.
#[derive(Debug)]
pub enum Clause<F: 'static> {
    /// A condition: its source text and its compiled test.
    Check(&'static str, F),
    /// A boolean `derive` entry that is not explained further: its name, its expression's
    /// text (what a rejection quotes) and its compiled value.
    Require(&'static str, &'static str, F),
    /// A boolean `derive` entry explained by its own clauses: its name and the explanation.
    Explain(&'static str, &'static Explanation<F>),
    /// Clauses several variants share, in order, as if written in place.
    All(&'static [Clause<F>]),
}

/// How a `derive` entry is explained: its conjuncts in order; or, for a disjunction whose last
/// alternative is a conjunction, that alternative's conjuncts once the whole is false.
#[derive(Debug)]
pub struct Explanation<F: 'static> {
    /// The disjunction (text and test) that makes the clauses moot when it holds.
    pub unless: Option<(&'static str, F)>,
    pub clauses: &'static [Clause<F>],
}

/// A variant: its id, its `when` clauses, and what the generated module runs once it is
/// chosen (its plan function).
#[derive(Debug)]
pub struct Variant<F: 'static, P: 'static> {
    pub id: &'static str,
    pub when: &'static [Clause<F>],
    pub plan: P,
}

impl<F, P> Variant<F, P> {
    pub const fn new(id: &'static str, when: &'static [Clause<F>], plan: P) -> Self {
        Self { id, when, plan }
    }
}

/// `Ok` when every clause holds; otherwise the first that does not, with the `derive` names
/// that lead to it.
pub fn first_failure<E, F>(clauses: &[Clause<F>], env: &E) -> Result<(), Failure>
where
    F: Condition<E>,
{
    for clause in clauses {
        match clause {
            Clause::Check(text, test) => require(test.holds(env), text, || test.operands(env))?,
            Clause::Require(name, text, value) => {
                require(value.holds(env), text, || value.operands(env))
                    .map_err(|f| f.within(name))?;
            }
            Clause::Explain(name, explanation) => {
                explain(explanation, env).map_err(|f| f.within(name))?;
            }
            Clause::All(clauses) => first_failure(clauses, env)?,
        }
    }
    Ok(())
}

fn explain<E, F>(explanation: &Explanation<F>, env: &E) -> Result<(), Failure>
where
    F: Condition<E>,
{
    let Some((text, whole)) = &explanation.unless else {
        return first_failure(explanation.clauses, env);
    };
    let holds = whole.holds(env).map_err(|error| Failure {
        path: vec![text],
        error: Some(error),
        operands: whole.operands(env),
    })?;
    if holds {
        return Ok(());
    }
    first_failure(explanation.clauses, env)?;
    // A false disjunction has a failing clause in its last alternative; reaching here means
    // the two disagree, and the disjunction itself is the best explanation left.
    Err(Failure {
        path: vec![text],
        error: None,
        operands: whole.operands(env),
    })
}

/// The value of the `derive` entry `explanation` explains, from its clauses (in order, stopping
/// at the first false one, as `and` does).
pub fn value<E, F>(explanation: &Explanation<F>, env: &E) -> Result<bool, EvalError>
where
    F: Condition<E>,
{
    match &explanation.unless {
        // The disjunction is the whole expression.
        Some((_, whole)) => whole.holds(env),
        None => all_hold(explanation.clauses, env),
    }
}

fn all_hold<E, F>(clauses: &[Clause<F>], env: &E) -> Result<bool, EvalError>
where
    F: Condition<E>,
{
    for clause in clauses {
        let holds = match clause {
            Clause::Check(_, test) | Clause::Require(_, _, test) => test.holds(env)?,
            Clause::Explain(_, explanation) => value(explanation, env)?,
            Clause::All(clauses) => all_hold(clauses, env)?,
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The first variant, by priority, whose `when` clauses all hold, and its plan; otherwise
/// every variant's first failing clause.
pub fn select<E, F, P: Copy>(
    op: &'static str,
    variants: &[Variant<F, P>],
    env: &E,
) -> Result<(&'static str, P), OpError>
where
    F: Condition<E>,
{
    let mut rejections: Vec<Rejection> = Vec::new();
    for variant in variants {
        match first_failure(variant.when, env) {
            Ok(()) => return Ok((variant.id, variant.plan)),
            Err(failure) => rejections.push(failure.into_rejection(variant.id)),
        }
    }
    Err(OpError::NoVariant { op, rejections })
}

/// The `when` check of the variant `id`, for tools and tests that explain one variant.
pub fn accepts<E, F, P>(
    variants: &[Variant<F, P>],
    id: &str,
    env: &E,
) -> Option<Result<(), Failure>>
where
    F: Condition<E>,
{
    let variant = variants.iter().find(|v| v.id == id)?;
    Some(first_failure(variant.when, env))
}

/// The plan of the variant `id`, whether or not its `when` holds, for tests that compare
/// every variant's plan.
pub fn plan_of<E, F, P, R>(variants: &[Variant<F, P>], id: &str, env: &E) -> Option<R>
where
    P: Fn(&E) -> R,
{
    let variant = variants.iter().find(|v| v.id == id)?;
    Some((variant.plan)(env))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Env {
        n: i64,
    }
    type Test = fn(&Env) -> Result<bool, EvalError>;

    static SMALL_OR_EVEN: Explanation<Test> = Explanation {
        unless: Some(("n < 4 or (n % 2 == 0 and n < 100)", |e| {
            Ok(e.n < 4 || (e.n % 2 == 0 && e.n < 100))
        })),
        clauses: &[
            Clause::Check("n % 2 == 0", |e| Ok(e.n % 2 == 0)),
            Clause::Check("n < 100", |e| Ok(e.n < 100)),
        ],
    };

    static POSITIVE: [Clause<Test>; 1] = [Clause::Check("n > 0", |e| Ok(e.n > 0))];

    static VARIANTS: [Variant<Test, u8>; 2] = [
        Variant::new(
            "first",
            &[
                Clause::All(&POSITIVE),
                Clause::Explain("smallOrEven", &SMALL_OR_EVEN),
            ],
            1,
        ),
        Variant::new(
            "second",
            &[Clause::Require("positive", "n > -10", |e| {
                if e.n == -99 {
                    Err(EvalError::new("overflow"))
                } else {
                    Ok(e.n > -10)
                }
            })],
            2,
        ),
    ];

    #[test]
    fn an_explanation_has_the_value_of_its_expression() {
        for n in [-3, 2, 7, 40, 101, 102] {
            let expected = n < 4 || (n % 2 == 0 && n < 100);
            assert_eq!(value(&SMALL_OR_EVEN, &Env { n }).unwrap(), expected, "{n}");
            let conjunction = Explanation::<Test> {
                unless: None,
                clauses: SMALL_OR_EVEN.clauses,
            };
            assert_eq!(
                value(&conjunction, &Env { n }).unwrap(),
                n % 2 == 0 && n < 100
            );
        }
    }

    #[test]
    fn the_first_accepting_variant_is_chosen() {
        assert_eq!(
            select("Op", &VARIANTS, &Env { n: 2 }).unwrap(),
            ("first", 1)
        );
        assert_eq!(
            select("Op", &VARIANTS, &Env { n: 40 }).unwrap(),
            ("first", 1)
        );
        assert_eq!(
            select("Op", &VARIANTS, &Env { n: 7 }).unwrap(),
            ("second", 2)
        );
    }

    #[test]
    fn rejections_name_the_path_to_the_failing_clause() {
        let why = accepts(&VARIANTS, "first", &Env { n: 7 })
            .unwrap()
            .unwrap_err();
        assert_eq!(why.path, ["smallOrEven", "n % 2 == 0"]);
        let why = accepts(&VARIANTS, "first", &Env { n: 102 })
            .unwrap()
            .unwrap_err();
        assert_eq!(why.path, ["smallOrEven", "n < 100"]);
        let Err(OpError::NoVariant { rejections, .. }) = select("Op", &VARIANTS, &Env { n: -99 })
        else {
            panic!("no variant should accept");
        };
        assert_eq!(rejections[0].condition, "n > 0");
        assert_eq!(rejections[1].condition, "positive › n > -10");
        assert!(rejections[1].error.is_some());
        assert!(accepts(&VARIANTS, "third", &Env { n: 1 }).is_none());
    }
}
