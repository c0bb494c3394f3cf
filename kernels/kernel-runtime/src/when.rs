//! Variant selection as data: a generated module lists each variant's `when` conditions (and
//! the conjuncts of the `derive` entries they explain through) as [`Clause`] tables of source
//! text, operand indices and test index; [`select`] walks them in priority order and explains
//! every rejection by its first failing clause.
//!
//! Each distinct condition is compiled once, as an arm of the module's `test` function, and
//! each operand a rejection shows (what a clause compares, what its calls take) as an arm of
//! its `operand` function: [`Conditions`] holds the two, so the tables themselves are plain
//! data and a rejection says which values made its clause false.

use crate::error::{OpError, Rejection};
use crate::expr::EvalError;
use crate::support::{Failure, require};
pub use crate::support::{Operand, operand, shown};

/// One condition of a `when` list or of an explained `derive` entry. Tests and operands are
/// indices into the op's [`Conditions`].
#[derive(Debug)]
pub enum Clause {
    /// A condition: its source text, its operands and its test.
    Check(&'static str, &'static [usize], usize),
    /// A boolean `derive` entry that is not explained further: its name, its expression's
    /// text (what a rejection quotes), its operands and its test.
    Require(&'static str, &'static str, &'static [usize], usize),
    /// A boolean `derive` entry explained by its own clauses (its name and the explanation),
    /// or a condition that is a conjunction, explained by its conjuncts (its text and theirs).
    Explain(&'static str, &'static Explanation),
    /// Clauses several variants share, in order, as if written in place.
    All(&'static [Clause]),
}

/// How a `derive` entry is explained: its conjuncts in order; or, for a disjunction whose last
/// alternative is a conjunction, that alternative's conjuncts once the whole is false.
#[derive(Debug)]
pub struct Explanation {
    /// The disjunction (text, operands and test) that makes the clauses moot when it holds.
    pub unless: Option<(&'static str, &'static [usize], usize)>,
    pub clauses: &'static [Clause],
}

/// A variant: its id, its `when` clauses and what the generated module runs once it is chosen
/// (its plan).
#[derive(Debug)]
pub struct Variant<P: 'static> {
    pub id: &'static str,
    pub when: &'static [Clause],
    pub plan: P,
}

/// An op's compiled conditions: `test(i, env)` evaluates test `i` of its clauses, and
/// `operand(i, env)` computes operand `i` for a rejection. The generated module's functions,
/// `fn(usize, &Env<'_>) -> …`, which a `static` can hold.
#[derive(Debug)]
pub struct Conditions<T: 'static, O: 'static> {
    pub test: T,
    pub operand: O,
}

/// The error of a test index no clause table holds (generated tables never do this).
pub fn no_test(index: usize) -> EvalError {
    EvalError::new(format!("no compiled condition {index}"))
}

impl<T, O> Conditions<T, O> {
    /// The operands `indices` of a failing clause; none when `explain` is false.
    fn operands<E>(&self, indices: &[usize], env: &E, explain: bool) -> Vec<Operand>
    where
        O: Fn(usize, &E) -> Operand,
    {
        if explain {
            indices.iter().map(|&i| (self.operand)(i, env)).collect()
        } else {
            Vec::new()
        }
    }
}

/// `Ok` when every clause holds; otherwise the first that does not, with the `derive` names
/// that lead to it and the values of its operands.
pub fn first_failure<E, T, O>(
    clauses: &[Clause],
    conditions: &Conditions<T, O>,
    env: &E,
) -> Result<(), Failure>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    failure(clauses, conditions, env, true)
}

/// [`first_failure`], computing the failing clause's operands only when `explain` is set.
fn failure<E, T, O>(
    clauses: &[Clause],
    conditions: &Conditions<T, O>,
    env: &E,
    explain: bool,
) -> Result<(), Failure>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let operands = |indices: &[usize]| conditions.operands(indices, env, explain);
    for clause in clauses {
        match *clause {
            Clause::Check(text, indices, test) => {
                require((conditions.test)(test, env), text, || operands(indices))?;
            }
            Clause::Require(name, text, indices, test) => {
                require((conditions.test)(test, env), text, || operands(indices))
                    .map_err(|f| f.within(name))?;
            }
            Clause::Explain(name, explanation) => {
                explain_failure(explanation, conditions, env, explain)
                    .map_err(|f| f.within(name))?;
            }
            Clause::All(clauses) => failure(clauses, conditions, env, explain)?,
        }
    }
    Ok(())
}

fn explain_failure<E, T, O>(
    explanation: &Explanation,
    conditions: &Conditions<T, O>,
    env: &E,
    explain: bool,
) -> Result<(), Failure>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let Some((text, indices, whole)) = explanation.unless else {
        return failure(explanation.clauses, conditions, env, explain);
    };
    let holds = (conditions.test)(whole, env).map_err(|error| Failure {
        path: vec![text],
        error: Some(error),
        operands: conditions.operands(indices, env, explain),
    })?;
    if holds {
        return Ok(());
    }
    failure(explanation.clauses, conditions, env, explain)?;
    // A false disjunction has a failing clause in its last alternative; reaching here means
    // the two disagree, and the disjunction itself is the best explanation left.
    Err(Failure {
        path: vec![text],
        error: None,
        operands: conditions.operands(indices, env, explain),
    })
}

/// The value of the `derive` entry `explanation` explains, from its clauses (in order, stopping
/// at the first false one, as `and` does).
pub fn value<E, T, O>(
    explanation: &Explanation,
    conditions: &Conditions<T, O>,
    env: &E,
) -> Result<bool, EvalError>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
{
    match explanation.unless {
        // The disjunction is the whole expression.
        Some((_, _, whole)) => (conditions.test)(whole, env),
        None => all_hold(explanation.clauses, conditions, env),
    }
}

/// Whether every clause holds (a clause that fails to evaluate does not): what
/// [`first_failure`] finds `Ok`, without building a failure.
fn holds<E, T, O>(clauses: &[Clause], conditions: &Conditions<T, O>, env: &E) -> bool
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
{
    matches!(all_hold(clauses, conditions, env), Ok(true))
}

fn all_hold<E, T, O>(
    clauses: &[Clause],
    conditions: &Conditions<T, O>,
    env: &E,
) -> Result<bool, EvalError>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
{
    for clause in clauses {
        let holds = match *clause {
            Clause::Check(_, _, test) | Clause::Require(_, _, _, test) => {
                (conditions.test)(test, env)?
            }
            Clause::Explain(_, explanation) => value(explanation, conditions, env)?,
            Clause::All(clauses) => all_hold(clauses, conditions, env)?,
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The first variant, by priority, whose `when` clauses all hold; otherwise every variant's
/// first failing clause.
pub fn select<'v, E, P, T, O>(
    op: &'static str,
    variants: &'v [Variant<P>],
    conditions: &Conditions<T, O>,
    env: &E,
) -> Result<&'v Variant<P>, OpError>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    // Rejections of variants before the chosen one are dropped, so they are explained (and
    // their operands computed) only when no variant accepts; until then a variant's clauses
    // are only tested, which allocates nothing.
    if let Some(chosen) = variants
        .iter()
        .find(|variant| holds(variant.when, conditions, env))
    {
        return Ok(chosen);
    }
    let rejections: Vec<Rejection> = variants
        .iter()
        .filter_map(|variant| {
            let failure = first_failure(variant.when, conditions, env).err()?;
            Some(failure.into_rejection(variant.id))
        })
        .collect();
    Err(OpError::NoVariant { op, rejections })
}

/// How variants rank beyond their priority (the Hub dialect's `demoteWhen` and
/// `supersededBy`), one entry per variant in the order of the op's variant table.
#[derive(Debug)]
pub struct Ranking {
    /// Conditions of which any one that holds demotes the variant below every eligible
    /// variant that is not demoted.
    pub demote: &'static [&'static [Clause]],
    /// The variants (indices into the table, all ranked before this one) that make this one
    /// ineligible while they are eligible.
    pub superseded_by: &'static [&'static [usize]],
}

/// Where an eligible variant stands in a [`Ranking`].
enum Standing {
    /// Chosen unless an earlier variant is.
    Eligible,
    /// Chosen only when no eligible variant is undemoted.
    Demoted,
    /// Not chosen: a variant that supersedes it is eligible (its index), or a demotion
    /// condition could not be evaluated.
    Out(Failure),
}

fn standing<E, P, T, O>(
    variants: &[Variant<P>],
    ranking: &Ranking,
    v: usize,
    conditions: &Conditions<T, O>,
    env: &E,
    explain: bool,
) -> Standing
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let superseding = ranking.superseded_by.get(v).copied().unwrap_or_default();
    for &s in superseding {
        if let Some(other) = variants.get(s)
            && holds(other.when, conditions, env)
        {
            return Standing::Out(Failure {
                path: vec!["supersededBy", other.id],
                error: None,
                operands: Vec::new(),
            });
        }
    }
    for clause in ranking.demote.get(v).copied().unwrap_or_default() {
        match failure(std::slice::from_ref(clause), conditions, env, explain) {
            Ok(()) => return Standing::Demoted,
            Err(f) if f.error.is_some() => {
                let mut f = f;
                f.path.insert(0, "demoteWhen");
                return Standing::Out(f);
            }
            Err(_) => {}
        }
    }
    Standing::Eligible
}

/// [`select`] under a [`Ranking`]: in priority order, the first variant whose `when` holds
/// that no eligible variant supersedes and no condition demotes; otherwise the first such
/// demoted one; otherwise every variant's reason.
pub fn select_ranked<'v, E, P, T, O>(
    op: &'static str,
    variants: &'v [Variant<P>],
    ranking: &Ranking,
    conditions: &Conditions<T, O>,
    env: &E,
) -> Result<&'v Variant<P>, OpError>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let mut demoted = None;
    for (v, variant) in variants.iter().enumerate() {
        if !holds(variant.when, conditions, env) {
            continue;
        }
        match standing(variants, ranking, v, conditions, env, false) {
            Standing::Eligible => return Ok(variant),
            Standing::Demoted => {
                demoted.get_or_insert(variant);
            }
            Standing::Out(_) => {}
        }
    }
    if let Some(variant) = demoted {
        return Ok(variant);
    }
    let rejections: Vec<Rejection> = (variants.iter().enumerate())
        .filter_map(|(v, variant)| {
            let failure = match first_failure(variant.when, conditions, env) {
                Err(failure) => failure,
                Ok(()) => match standing(variants, ranking, v, conditions, env, true) {
                    Standing::Out(failure) => failure,
                    Standing::Eligible | Standing::Demoted => return None,
                },
            };
            Some(failure.into_rejection(variant.id))
        })
        .collect();
    Err(OpError::NoVariant { op, rejections })
}

/// [`accepts`] under a [`Ranking`]: also why an eligible variant is out (superseded, or a
/// demotion condition that fails to evaluate); `Ok(true)` when it is eligible but demoted.
pub fn accepts_ranked<E, P, T, O>(
    variants: &[Variant<P>],
    ranking: &Ranking,
    conditions: &Conditions<T, O>,
    id: &str,
    env: &E,
) -> Option<Result<bool, Failure>>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let v = variants.iter().position(|v| v.id == id)?;
    Some(
        first_failure(variants[v].when, conditions, env).and_then(|()| {
            match standing(variants, ranking, v, conditions, env, true) {
                Standing::Eligible => Ok(false),
                Standing::Demoted => Ok(true),
                Standing::Out(failure) => Err(failure),
            }
        }),
    )
}

/// The `when` check of the variant `id`, for tools and tests that explain one variant.
pub fn accepts<E, P, T, O>(
    variants: &[Variant<P>],
    conditions: &Conditions<T, O>,
    id: &str,
    env: &E,
) -> Option<Result<(), Failure>>
where
    T: Fn(usize, &E) -> Result<bool, EvalError>,
    O: Fn(usize, &E) -> Operand,
{
    let variant = variants.iter().find(|v| v.id == id)?;
    Some(first_failure(variant.when, conditions, env))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Env {
        n: i64,
    }

    fn test(index: usize, e: &Env) -> Result<bool, EvalError> {
        Ok(match index {
            0 => e.n < 4 || (e.n % 2 == 0 && e.n < 100),
            1 => e.n % 2 == 0,
            2 => e.n < 100,
            3 => e.n > 0,
            4 if e.n == -99 => return Err(EvalError::new("overflow")),
            4 => e.n > -10,
            _ => return Err(no_test(index)),
        })
    }

    fn operand(index: usize, env: &Env) -> Operand {
        match index {
            0 => super::operand("n", Ok(shown(env.n))),
            _ => super::operand("n % 2", Ok(shown(env.n % 2))),
        }
    }

    type Test = fn(usize, &Env) -> Result<bool, EvalError>;
    type Values = fn(usize, &Env) -> Operand;
    static CONDITIONS: Conditions<Test, Values> = Conditions { test, operand };

    static SMALL_OR_EVEN: Explanation = Explanation {
        unless: Some(("n < 4 or (n % 2 == 0 and n < 100)", &[0], 0)),
        clauses: &[
            Clause::Check("n % 2 == 0", &[1], 1),
            Clause::Check("n < 100", &[0], 2),
        ],
    };

    static POSITIVE: [Clause; 1] = [Clause::Check("n > 0", &[0], 3)];

    static VARIANTS: [Variant<u8>; 2] = [
        Variant {
            id: "first",
            when: &[
                Clause::All(&POSITIVE),
                Clause::Explain("smallOrEven", &SMALL_OR_EVEN),
            ],
            plan: 1,
        },
        Variant {
            id: "second",
            when: &[Clause::Require("positive", "n > -10", &[0], 4)],
            plan: 2,
        },
    ];

    fn chosen(n: i64) -> (&'static str, u8) {
        let v = select("Op", &VARIANTS, &CONDITIONS, &Env { n }).unwrap();
        (v.id, v.plan)
    }

    #[test]
    fn an_explanation_has_the_value_of_its_expression() {
        for n in [-3, 2, 7, 40, 101, 102] {
            let expected = n < 4 || (n % 2 == 0 && n < 100);
            let env = Env { n };
            assert_eq!(
                value(&SMALL_OR_EVEN, &CONDITIONS, &env).unwrap(),
                expected,
                "{n}"
            );
            let conjunction = Explanation {
                unless: None,
                clauses: SMALL_OR_EVEN.clauses,
            };
            assert_eq!(
                value(&conjunction, &CONDITIONS, &env).unwrap(),
                n % 2 == 0 && n < 100
            );
        }
    }

    #[test]
    fn a_variant_holds_where_its_first_failure_is_none() {
        for n in [-99, -3, 0, 2, 7, 40, 75, 101, 102] {
            for variant in VARIANTS.iter().chain(&RANKED) {
                assert_eq!(
                    holds(variant.when, &CONDITIONS, &Env { n }),
                    first_failure(variant.when, &CONDITIONS, &Env { n }).is_ok(),
                    "{} at {n}",
                    variant.id
                );
            }
        }
    }

    #[test]
    fn the_first_accepting_variant_is_chosen() {
        assert_eq!(chosen(2), ("first", 1));
        assert_eq!(chosen(40), ("first", 1));
        assert_eq!(chosen(7), ("second", 2));
    }

    #[test]
    fn rejections_name_the_path_to_the_failing_clause() {
        let why = |n| {
            accepts(&VARIANTS, &CONDITIONS, "first", &Env { n })
                .unwrap()
                .unwrap_err()
        };
        let failure = why(7);
        assert_eq!(failure.path, ["smallOrEven", "n % 2 == 0"]);
        assert_eq!(failure.operands, [super::operand("n % 2", Ok(shown(1)))]);
        assert_eq!(why(102).path, ["smallOrEven", "n < 100"]);
        let Err(OpError::NoVariant { rejections, .. }) =
            select("Op", &VARIANTS, &CONDITIONS, &Env { n: -99 })
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
        assert!(accepts(&VARIANTS, &CONDITIONS, "third", &Env { n: 1 }).is_none());
    }

    static RANKED: [Variant<u8>; 3] = [
        Variant {
            id: "wide",
            when: &[Clause::Check("n > 0", &[0], 3)],
            plan: 1,
        },
        Variant {
            id: "even",
            when: &[Clause::Check("n % 2 == 0", &[1], 1)],
            plan: 2,
        },
        Variant {
            id: "small",
            when: &[Clause::Check("n < 4 or n % 2 == 0 and n < 100", &[0], 0)],
            plan: 3,
        },
    ];

    /// `wide` is demoted below 100; `small` is superseded by `even`.
    static RANKING: Ranking = Ranking {
        demote: &[&[Clause::Check("n < 100", &[0], 2)], &[], &[]],
        superseded_by: &[&[], &[], &[1]],
    };

    fn ranked(n: i64) -> &'static str {
        select_ranked("Op", &RANKED, &RANKING, &CONDITIONS, &Env { n })
            .map(|v| v.id)
            .unwrap_or("none")
    }

    #[test]
    fn a_demoted_variant_yields_to_every_eligible_one_and_a_superseded_one_is_out() {
        assert_eq!(ranked(101), "wide");
        // Demoted: the next eligible variant wins, though it ranks lower.
        assert_eq!(ranked(8), "even");
        // `small` is superseded only while `even` is eligible.
        assert_eq!(ranked(-3), "small");
        // Nothing undemoted is eligible: the demoted variant is chosen.
        assert_eq!(ranked(75), "wide");
        let why = |id, n| accepts_ranked(&RANKED, &RANKING, &CONDITIONS, id, &Env { n });
        assert!(matches!(why("wide", 5), Some(Ok(true))));
        assert!(matches!(why("wide", 500), Some(Ok(false))));
        let Some(Err(superseded)) = why("small", 4) else {
            panic!("`small` is superseded by `even` at 4");
        };
        assert_eq!(superseded.path, ["supersededBy", "even"]);
    }
}
