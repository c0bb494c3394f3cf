//! Variant selection as data: a generated module lists each variant's `when` conditions (and
//! the conjuncts of the `derive` entries they explain through) as [`Clause`] tables of source
//! text and compiled test; [`select`] walks them in priority order and explains every
//! rejection by its first failing clause.
//!
//! `F` is the generated module's test type, `fn(&Env<'_>) -> Result<bool, EvalError>`: a
//! function pointer over every lifetime of its environment, which a `static` can hold. A
//! clause also lists its operands (what it compares, what its calls take) as indices that the
//! variant's `operand` function computes for a rejection, so the rejection says which values
//! made it false.

use crate::error::{OpError, Rejection};
use crate::expr::EvalError;
use crate::support::{Failure, require};
pub use crate::support::{Operand, operand, shown};

/// One condition of a `when` list or of an explained `derive` entry.
#[derive(Debug)]
pub enum Clause<F: 'static> {
    /// A condition: its source text, its operands and its compiled test.
    Check(&'static str, &'static [usize], F),
    /// A boolean `derive` entry that is not explained further: its name, its expression's
    /// text (what a rejection quotes), its operands and its compiled value.
    Require(&'static str, &'static str, &'static [usize], F),
    /// A boolean `derive` entry explained by its own clauses (its name and the explanation),
    /// or a condition that is a conjunction, explained by its conjuncts (its text and theirs).
    Explain(&'static str, &'static Explanation<F>),
    /// Clauses several variants share, in order, as if written in place.
    All(&'static [Clause<F>]),
}

/// How a `derive` entry is explained: its conjuncts in order; or, for a disjunction whose last
/// alternative is a conjunction, that alternative's conjuncts once the whole is false.
#[derive(Debug)]
pub struct Explanation<F: 'static> {
    /// The disjunction (text, operands and test) that makes the clauses moot when it holds.
    pub unless: Option<(&'static str, &'static [usize], F)>,
    pub clauses: &'static [Clause<F>],
}

/// A variant: its id, its `when` clauses, what the generated module runs once it is chosen
/// (its plan function), and the op's function that computes a clause operand by index.
#[derive(Debug)]
pub struct Variant<F: 'static, P: 'static, O: 'static> {
    pub id: &'static str,
    pub when: &'static [Clause<F>],
    pub plan: P,
    pub operand: O,
}

impl<F, P, O> Variant<F, P, O> {
    pub const fn new(id: &'static str, when: &'static [Clause<F>], plan: P, operand: O) -> Self {
        Self {
            id,
            when,
            plan,
            operand,
        }
    }
}

/// The operands `indices` of a failing clause, computed by `operand`; none without it.
fn operands_of<E, O>(indices: &[usize], operand: Option<&O>, env: &E) -> Vec<Operand>
where
    O: Fn(usize, &E) -> Operand,
{
    operand.map_or_else(Vec::new, |operand| {
        indices.iter().map(|&i| operand(i, env)).collect()
    })
}

/// `Ok` when every clause holds; otherwise the first that does not, with the `derive` names
/// that lead to it and the values of its operands (`operand` computes one by index).
pub fn first_failure<E, F, O>(clauses: &[Clause<F>], env: &E, operand: &O) -> Result<(), Failure>
where
    F: Fn(&E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    failure(clauses, env, Some(operand))
}

/// [`first_failure`], computing the failing clause's operands only when `operand` is given.
fn failure<E, F, O>(clauses: &[Clause<F>], env: &E, operand: Option<&O>) -> Result<(), Failure>
where
    F: Fn(&E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    for clause in clauses {
        match clause {
            Clause::Check(text, indices, test) => {
                require(test(env), text, || operands_of(indices, operand, env))?;
            }
            Clause::Require(name, text, indices, value) => {
                require(value(env), text, || operands_of(indices, operand, env))
                    .map_err(|f| f.within(name))?;
            }
            Clause::Explain(name, explanation) => {
                explain(explanation, env, operand).map_err(|f| f.within(name))?;
            }
            Clause::All(clauses) => failure(clauses, env, operand)?,
        }
    }
    Ok(())
}

fn explain<E, F, O>(
    explanation: &Explanation<F>,
    env: &E,
    operand: Option<&O>,
) -> Result<(), Failure>
where
    F: Fn(&E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let Some((text, indices, whole)) = &explanation.unless else {
        return failure(explanation.clauses, env, operand);
    };
    let holds = whole(env).map_err(|error| Failure {
        path: vec![text],
        error: Some(error),
        operands: operands_of(indices, operand, env),
    })?;
    if holds {
        return Ok(());
    }
    failure(explanation.clauses, env, operand)?;
    // A false disjunction has a failing clause in its last alternative; reaching here means
    // the two disagree, and the disjunction itself is the best explanation left.
    Err(Failure {
        path: vec![text],
        error: None,
        operands: operands_of(indices, operand, env),
    })
}

/// The value of the `derive` entry `explanation` explains, from its clauses (in order, stopping
/// at the first false one, as `and` does).
pub fn value<E, F>(explanation: &Explanation<F>, env: &E) -> Result<bool, EvalError>
where
    F: Fn(&E) -> Result<bool, EvalError>,
{
    match &explanation.unless {
        // The disjunction is the whole expression.
        Some((_, _, whole)) => whole(env),
        None => all_hold(explanation.clauses, env),
    }
}

fn all_hold<E, F>(clauses: &[Clause<F>], env: &E) -> Result<bool, EvalError>
where
    F: Fn(&E) -> Result<bool, EvalError>,
{
    for clause in clauses {
        let holds = match clause {
            Clause::Check(_, _, test) | Clause::Require(_, _, _, test) => test(env)?,
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
pub fn select<E, F, P: Copy, O>(
    op: &'static str,
    variants: &[Variant<F, P, O>],
    env: &E,
) -> Result<(&'static str, P), OpError>
where
    F: Fn(&E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    // Rejections of variants before the chosen one are dropped, so their operands are computed
    // only when no variant accepts.
    for variant in variants {
        if failure(variant.when, env, None::<&O>).is_ok() {
            return Ok((variant.id, variant.plan));
        }
    }
    let rejections: Vec<Rejection> = variants
        .iter()
        .filter_map(|variant| {
            let failure = first_failure(variant.when, env, &variant.operand).err()?;
            Some(failure.into_rejection(variant.id))
        })
        .collect();
    Err(OpError::NoVariant { op, rejections })
}

/// The `when` check of the variant `id`, for tools and tests that explain one variant.
pub fn accepts<E, F, P, O>(
    variants: &[Variant<F, P, O>],
    id: &str,
    env: &E,
) -> Option<Result<(), Failure>>
where
    F: Fn(&E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let variant = variants.iter().find(|v| v.id == id)?;
    Some(first_failure(variant.when, env, &variant.operand))
}

/// The plan of the variant `id`, whether or not its `when` holds, for tests that compare
/// every variant's plan.
pub fn plan_of<E, F, P, O, R>(variants: &[Variant<F, P, O>], id: &str, env: &E) -> Option<R>
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
    type Values = fn(usize, &Env) -> Operand;

    fn operand(index: usize, env: &Env) -> Operand {
        match index {
            0 => super::operand("n", Ok(shown(env.n))),
            _ => super::operand("n % 2", Ok(shown(env.n % 2))),
        }
    }

    static SMALL_OR_EVEN: Explanation<Test> = Explanation {
        unless: Some(("n < 4 or (n % 2 == 0 and n < 100)", &[0], |e| {
            Ok(e.n < 4 || (e.n % 2 == 0 && e.n < 100))
        })),
        clauses: &[
            Clause::Check("n % 2 == 0", &[1], |e| Ok(e.n % 2 == 0)),
            Clause::Check("n < 100", &[0], |e| Ok(e.n < 100)),
        ],
    };

    static POSITIVE: [Clause<Test>; 1] = [Clause::Check("n > 0", &[0], |e| Ok(e.n > 0))];

    static VARIANTS: [Variant<Test, u8, Values>; 2] = [
        Variant::new(
            "first",
            &[
                Clause::All(&POSITIVE),
                Clause::Explain("smallOrEven", &SMALL_OR_EVEN),
            ],
            1,
            operand,
        ),
        Variant::new(
            "second",
            &[Clause::Require("positive", "n > -10", &[0], |e| {
                if e.n == -99 {
                    Err(EvalError::new("overflow"))
                } else {
                    Ok(e.n > -10)
                }
            })],
            2,
            operand,
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
        assert_eq!(why.operands, [super::operand("n % 2", Ok(shown(1)))]);
        let why = accepts(&VARIANTS, "first", &Env { n: 102 })
            .unwrap()
            .unwrap_err();
        assert_eq!(why.path, ["smallOrEven", "n < 100"]);
        let Err(OpError::NoVariant { rejections, .. }) = select("Op", &VARIANTS, &Env { n: -99 })
        else {
            panic!("no variant should accept");
        };
        assert_eq!(rejections[0].condition, "n > 0");
        assert_eq!(
            rejections[0].to_string(),
            "  first: `n > 0` is false (n = -99)"
        );
        assert_eq!(rejections[1].condition, "positive › n > -10");
        assert!(rejections[1].error.is_some());
        assert!(accepts(&VARIANTS, "third", &Env { n: 1 }).is_none());
    }
}
