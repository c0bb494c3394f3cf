//! Regression fixtures of the generator's fuzz target: every `tests/regressions/*.test` file
//! is a mutation of the seed packages (or of a corpus or Hub package, `from <name>`; skipped
//! without the corpus or that Hub manifest), then a line `---`, then the exact outcome: the
//! diagnostics, `ok: …`, or `failure: …` where something that must hold did not.
//! `UPDATE_EXPECT=1` rewrites them.

use std::fs;
use std::path::Path;
use std::time::Duration;

use expect_test::expect_file;

use fuzz::codegen_target;
use fuzz::mutation::Case;

#[test]
fn mutations_give_the_expected_outcome() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut paths: Vec<_> = fs::read_dir(&root)
        .expect("tests/regressions exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixtures under {}", root.display());
    let mut skipped = 0;
    for path in &paths {
        let text = fs::read_to_string(path).expect("fixture is readable");
        let head = text
            .split_once("\n---\n")
            .map_or(text.as_str(), |(head, _)| head);
        let case = Case::parse(head).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Some(seed) = fuzz::seeds::for_case(case.from.as_deref()).expect("seed reads") else {
            skipped += 1;
            continue;
        };
        let actual = match codegen_target::check(&seed, &case, Duration::from_secs(120)) {
            Ok(outcome) => outcome.render(),
            Err(message) => format!("failure: {message}\n"),
        };
        // The whole fixture is the expectation, its outcome recomputed after the mutation.
        expect_file![path].assert_eq(&format!("{head}\n---\n{actual}"));
    }
    if skipped > 0 {
        eprintln!("skipped {skipped} fixtures of corpus or Hub packages not here");
    }
}
