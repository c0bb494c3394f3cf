//! Clause lists as a tree before they are written out, so that the runs of clauses several
//! variants write alike (a long conjunction two variants share, the conditions every variant
//! starts with) are emitted once, as a `static` the lists name with `All(&…)`: the runtime
//! walks an `All` as if its clauses were written in place, so rejections read the same.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// One clause of a `when` list, before sharing.
#[derive(Clone)]
pub(super) enum ClauseTree {
    /// A clause as written (`Check`, `Require`, or the `Explain` of a `derive` entry).
    Leaf(TokenStream),
    /// A conjunction explained by its conjuncts: its source text and theirs.
    Conjunction(String, Vec<ClauseTree>),
    /// Shared run `k`.
    Shared(usize),
}

impl ClauseTree {
    /// What tells two clauses apart: equal keys are the same clause.
    fn key(&self) -> String {
        match self {
            ClauseTree::Leaf(tokens) => tokens.to_string(),
            ClauseTree::Conjunction(text, clauses) => {
                let inner: Vec<String> = clauses.iter().map(ClauseTree::key).collect();
                format!("({text}: {})", inner.join(", "))
            }
            ClauseTree::Shared(k) => format!("shared {k}"),
        }
    }

    pub(super) fn render(&self) -> TokenStream {
        match self {
            ClauseTree::Leaf(tokens) => tokens.clone(),
            ClauseTree::Conjunction(text, clauses) => {
                let clauses = clauses.iter().map(ClauseTree::render);
                quote!(Explain(#text, &Explanation { unless: None, clauses: &[#(#clauses),*] }))
            }
            ClauseTree::Shared(k) => {
                let name = shared_static(*k);
                quote!(All(&#name))
            }
        }
    }
}

fn shared_static(k: usize) -> proc_macro2::Ident {
    format_ident!("SHARED_WHEN_{k}")
}

/// Replaces, longest saving first, each run of two or more clauses that occurs more than
/// once (in one list or several, at any depth) by a reference to a shared run; returns the
/// shared runs' statics.
pub(super) fn share(lists: &mut [Vec<ClauseTree>]) -> TokenStream {
    let mut shared: Vec<Vec<ClauseTree>> = Vec::new();
    while let Some(run) = best_run(lists, &shared) {
        let k = shared.len();
        for list in lists.iter_mut() {
            replace(list, &run, k);
        }
        for list in shared.iter_mut() {
            replace(list, &run, k);
        }
        shared.push(run);
    }
    let statics = shared.iter().enumerate().map(|(k, run)| {
        let name = shared_static(k);
        let count = run.len();
        let clauses = run.iter().map(ClauseTree::render);
        quote! {
            /// Clauses several `when` lists write alike, in order.
            static #name: [Clause; #count] = [#(#clauses),*];
        }
    });
    quote!(#(#statics)*)
}

/// Where a window of clauses occurs: how often (without overlaps in one list), where its last
/// occurrence ends (list, index) and where it first occurs.
struct Occurrences {
    count: usize,
    last: Option<(usize, usize)>,
    first: (usize, usize),
}

/// Every list of clauses in `lists`, conjunctions' own lists included.
fn all_lists<'a>(
    lists: impl IntoIterator<Item = &'a Vec<ClauseTree>>,
    out: &mut Vec<Vec<&'a ClauseTree>>,
) {
    for list in lists {
        out.push(list.iter().collect());
        for clause in list {
            if let ClauseTree::Conjunction(_, inner) = clause {
                all_lists([inner], out);
            }
        }
    }
}

/// The run that saves the most lines when shared (each occurrence becomes one clause, the
/// run is written once), if any saves some.
fn best_run(lists: &[Vec<ClauseTree>], shared: &[Vec<ClauseTree>]) -> Option<Vec<ClauseTree>> {
    let mut every = Vec::new();
    all_lists(lists.iter().chain(shared), &mut every);
    let keyed: Vec<Vec<String>> = every
        .iter()
        .map(|list| list.iter().map(|c| c.key()).collect())
        .collect();
    let mut windows: BTreeMap<Vec<&str>, Occurrences> = BTreeMap::new();
    for (l, keys) in keyed.iter().enumerate() {
        for start in 0..keys.len() {
            for end in start + 2..=keys.len() {
                let window: Vec<&str> = keys[start..end].iter().map(String::as_str).collect();
                let seen = windows.entry(window).or_insert(Occurrences {
                    count: 0,
                    last: None,
                    first: (l, start),
                });
                // Overlapping occurrences in one list cannot both be replaced.
                if !seen
                    .last
                    .is_some_and(|(list, last_end)| list == l && start < last_end)
                {
                    seen.count += 1;
                    seen.last = Some((l, end));
                }
            }
        }
    }
    let (_, (l, start), len) = windows
        .iter()
        .filter(|(_, seen)| seen.count >= 2)
        .map(|(window, seen)| {
            let len = window.len();
            // Lines before: count × len; after: count + len + 2 (the static's head and end).
            let saving = (seen.count * len) as isize - (seen.count + len + 2) as isize;
            (saving, seen.first, len)
        })
        .filter(|(saving, _, _)| *saving > 0)
        .max_by_key(|(saving, (l, start), len)| (*saving, *len, std::cmp::Reverse((*l, *start))))?;
    Some(
        every[l][start..start + len]
            .iter()
            .map(|c| (*c).clone())
            .collect(),
    )
}

/// `list` (and the lists of its conjunctions) with each occurrence of `run` replaced by shared
/// run `k`.
fn replace(list: &mut Vec<ClauseTree>, run: &[ClauseTree], k: usize) {
    for clause in list.iter_mut() {
        if let ClauseTree::Conjunction(_, inner) = clause {
            replace(inner, run, k);
        }
    }
    let keys: Vec<String> = run.iter().map(ClauseTree::key).collect();
    let mut at = 0;
    while at + keys.len() <= list.len() {
        let matches = list[at..at + keys.len()]
            .iter()
            .zip(&keys)
            .all(|(clause, key)| clause.key() == *key);
        if matches {
            list.splice(at..at + keys.len(), [ClauseTree::Shared(k)]);
        }
        at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(name: &str) -> ClauseTree {
        let name = format_ident!("{name}");
        ClauseTree::Leaf(quote!(#name))
    }

    fn shown(list: &[ClauseTree]) -> String {
        let items: Vec<String> = list.iter().map(|c| c.render().to_string()).collect();
        items.join(", ")
    }

    #[test]
    fn a_run_two_lists_write_alike_is_written_once() {
        let run = ["a", "b", "c", "d", "e"].map(leaf);
        let mut lists = vec![
            [vec![leaf("x")], run.to_vec()].concat(),
            [run.to_vec(), vec![leaf("y")]].concat(),
        ];
        let statics = share(&mut lists).to_string();
        assert_eq!(shown(&lists[0]), "x, All (& SHARED_WHEN_0)");
        assert_eq!(shown(&lists[1]), "All (& SHARED_WHEN_0), y");
        assert!(statics.contains("static SHARED_WHEN_0 : [Clause ; 5usize] = [a , b , c , d , e]"));
    }

    #[test]
    fn runs_inside_conjunctions_are_shared_and_short_ones_are_not() {
        let run = ["a", "b", "c", "d", "e"].map(leaf).to_vec();
        let conjunction =
            ClauseTree::Conjunction("p and q".into(), [run.clone(), vec![leaf("z")]].concat());
        let mut lists = vec![vec![conjunction], run, vec![leaf("a"), leaf("b")]];
        share(&mut lists);
        assert_eq!(
            shown(&lists[0]),
            "Explain (\"p and q\" , & Explanation { unless : None , clauses : & [All (& SHARED_WHEN_0) , z] })"
        );
        assert_eq!(shown(&lists[1]), "All (& SHARED_WHEN_0)");
        // Two clauses in three places: a static would not save a line.
        assert_eq!(shown(&lists[2]), "a, b");
    }

    #[test]
    fn overlapping_occurrences_in_one_list_count_once() {
        let mut lists = vec![["a"; 5].map(leaf).to_vec()];
        let statics = share(&mut lists);
        assert!(statics.is_empty(), "{statics}");
    }
}
