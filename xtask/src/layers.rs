//! The module graph of a crate, read from its sources with `syn`, and the import cycles in
//! it: layers are only layers while nothing below names anything above.
//!
//! A module depends on every module a `crate::`, `super::` or `self::` path in it names
//! (in `use` items and in expressions, types and patterns), outside `#[cfg(test)]` items.
//! Modules are files: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, Result};
use syn::visit::Visit;

/// Module → the modules it names.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the crate whose sources are in `src` (with `lib.rs` or `main.rs` as root,
/// the module `""`).
pub fn module_graph(src: &Path) -> Result<Graph> {
    let written = paths_by_module(src)?;
    let modules: BTreeSet<String> = written.iter().map(|(m, _)| m.clone()).collect();
    let mut graph = Graph::new();
    for (module, paths) in &written {
        let deps = paths
            .iter()
            .filter_map(|segments| resolve(module, segments, &modules))
            .filter(|dep| dep != module && !dep.is_empty())
            .collect();
        graph.insert(module.clone(), deps);
    }
    Ok(graph)
}

/// The modules of the crate in `src` whose code (outside tests) writes a path with the
/// segment `name`, e.g. a type's name.
pub fn modules_naming(src: &Path, name: &str) -> Result<BTreeSet<String>> {
    Ok(paths_by_module(src)?
        .into_iter()
        .filter(|(_, paths)| paths.iter().flatten().any(|segment| segment == name))
        .map(|(module, _)| module)
        .collect())
}

/// The modules of the crate in `src` whose code (outside tests) borrows a type named `name`
/// mutably (`&mut Name`), e.g. to tell which ones may change the model.
pub fn modules_borrowing_mutably(src: &Path, name: &str) -> Result<BTreeSet<String>> {
    Ok(collected_by_module(src)?
        .into_iter()
        .filter(|(_, collected)| collected.mutably_borrowed.iter().any(|t| t == name))
        .map(|(module, _)| module)
        .collect())
}

/// Each module of the crate in `src` with the paths its code writes outside tests.
fn paths_by_module(src: &Path) -> Result<Vec<(String, Vec<Vec<String>>)>> {
    Ok(collected_by_module(src)?
        .into_iter()
        .map(|(module, collected)| (module, collected.named))
        .collect())
}

/// Each module of the crate in `src` with what its code outside tests writes.
fn collected_by_module(src: &Path) -> Result<Vec<(String, PathCollector)>> {
    let mut files = Vec::new();
    collect(src, src, &mut files)?;
    files
        .into_iter()
        .map(|(module, path)| {
            let text =
                std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
            let file =
                syn::parse_file(&text).with_context(|| format!("parsing {}", path.display()))?;
            let mut paths = PathCollector::default();
            paths.visit_file(&file);
            Ok((module, paths))
        })
        .collect()
}

/// Every `.rs` file under `dir` with its module path.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, std::path::PathBuf)>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root)?.with_extension("");
            let mut parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main") {
                parts.clear();
            } else if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            out.push((parts.join("::"), path));
        }
    }
    Ok(())
}

/// The module a path written in `module` names: the longest known module its leading
/// segments spell, after `crate`, `super` and `self` are resolved.
fn resolve(module: &str, segments: &[String], modules: &BTreeSet<String>) -> Option<String> {
    let mut base: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super" | "self") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    let mut best = None;
    let mut candidate = base.join("::");
    for segment in rest {
        if !candidate.is_empty() {
            candidate.push_str("::");
        }
        candidate.push_str(segment);
        if modules.contains(&candidate) {
            best = Some(candidate.clone());
        }
    }
    best.or_else(|| Some(base.join("::")).filter(|b| modules.contains(b)))
}

/// The module paths a file writes, outside `#[cfg(test)]` items.
#[derive(Default)]
struct PathCollector {
    named: Vec<Vec<String>>,
    /// The last segment of every type borrowed as `&mut`.
    mutably_borrowed: Vec<String>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut prefix = Vec::new();
        use_tree(&item.tree, &mut prefix, &mut self.named);
    }

    fn visit_type_reference(&mut self, reference: &'ast syn::TypeReference) {
        if reference.mutability.is_some()
            && let syn::Type::Path(path) = &*reference.elem
            && let Some(last) = path.path.segments.last()
        {
            self.mutably_borrowed.push(last.ident.to_string());
        }
        syn::visit::visit_type_reference(self, reference);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.named
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

/// Every path a `use` tree spells, each as far as it goes.
fn use_tree(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_tree(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push(with(prefix, n.ident.to_string())),
        syn::UseTree::Rename(r) => out.push(with(prefix, r.ident.to_string())),
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_tree(tree, prefix, out);
            }
        }
    }
}

fn with(prefix: &[String], last: String) -> Vec<String> {
    let mut path = prefix.to_vec();
    path.push(last);
    path
}

/// The strongly connected components of more than one module, each sorted.
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iterative over the small graphs of one crate.
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g str) {
        let next = s.index.len();
        s.index.insert(v, next);
        s.low.insert(v, next);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                connect(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            connect(&mut state, v);
        }
    }
    state.found
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn workspace() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
    }

    #[test]
    fn the_runtime_has_no_import_cycle() {
        let graph = module_graph(&workspace().join("kernels/kernel-runtime/src")).unwrap();
        assert!(graph.len() > 20, "too few modules found: {graph:?}");
        assert_eq!(cycles(&graph), Vec::<Vec<String>>::new());
        // The façade is above everything that records, caches or talks to the device.
        for low in [
            "gpu", "staging", "pipeline", "pools", "caches", "record", "timing",
        ] {
            assert!(
                !graph[low].contains("context"),
                "`{low}` names the façade: {:?}",
                graph[low]
            );
        }
    }

    #[test]
    fn no_crate_has_an_import_cycle() {
        for src in [
            "kernel-codegen/src",
            "xtask/src",
            "fuzz/src",
            "kernels-tools/src",
        ] {
            let graph = module_graph(&workspace().join(src)).unwrap();
            assert!(graph.len() > 5, "too few modules found in {src}: {graph:?}");
            assert_eq!(cycles(&graph), Vec::<Vec<String>>::new(), "{src}");
        }
    }

    /// The two emitters meet only in the model and the shaders the WGSL emitter hands on.
    #[test]
    fn the_rust_emitter_does_not_name_the_wgsl_emitter() {
        let graph = module_graph(&workspace().join("kernel-codegen/src")).unwrap();
        for (module, deps) in graph.range("rust".to_owned()..) {
            if !(module == "rust" || module.starts_with("rust::")) {
                break;
            }
            assert!(
                !deps.iter().any(|d| d == "wgsl" || d.starts_with("wgsl::")),
                "`{module}` names the WGSL emitter: {deps:?}"
            );
        }
        assert!(
            graph["rust::table"].contains("shader"),
            "{:?}",
            graph["rust::table"]
        );
    }

    /// How templates are rendered is the op's `TemplateConvention`, not its dialect.
    #[test]
    fn the_wgsl_emitter_does_not_name_the_dialect() {
        let naming = modules_naming(&workspace().join("kernel-codegen/src"), "Dialect").unwrap();
        assert!(naming.contains("front::lower"), "{naming:?}");
        let wgsl: Vec<&String> = naming.iter().filter(|m| m.starts_with("wgsl")).collect();
        assert!(wgsl.is_empty(), "{wgsl:?}");
    }

    /// Dialects end at the front end: only `front/` (the manifest readers and the model's
    /// builder) and `expr/check/` (reading an expression in its dialect) name the dialect
    /// type; the IR they produce says what it decided, so the model, the interpreter, the
    /// lowering, both emitters and every other crate do not.
    #[test]
    fn the_dialect_type_is_named_only_in_the_front_end_and_the_checker() {
        const READERS: [&str; 2] = ["front", "expr::check"];
        let root = workspace();
        let naming = modules_naming(&root.join("kernel-codegen/src"), "Dialect").unwrap();
        assert!(naming.contains("front::lower"), "{naming:?}");
        assert!(naming.contains("expr::check"), "{naming:?}");
        let elsewhere: Vec<&String> = naming
            .iter()
            .filter(|m| {
                !READERS
                    .iter()
                    .any(|p| *m == p || m.strip_prefix(p).is_some_and(|r| r.starts_with("::")))
            })
            .collect();
        assert!(elsewhere.is_empty(), "{elsewhere:?}");
        for krate in [
            "kernels/kernel-runtime/src",
            "kernels/kernel-abi/src",
            "kernels-codegen/src",
            "kernels-tools/src",
            "xtask/src",
            "fuzz/src",
        ] {
            let dir = root.join(krate);
            if dir.is_dir() {
                let naming = modules_naming(&dir, "Dialect").unwrap();
                assert!(naming.is_empty(), "{krate}: {naming:?}");
            }
        }
    }

    /// The model is final when the front end hands it on: no emitter changes an `Op`.
    #[test]
    fn no_emitter_changes_the_model() {
        let src = workspace().join("kernel-codegen/src");
        let changing = modules_borrowing_mutably(&src, "Op").unwrap();
        assert!(changing.contains("front::lower"), "{changing:?}");
        let emitters: Vec<&String> = changing
            .iter()
            .filter(|m| {
                m.starts_with("wgsl") || m.starts_with("rust") || m.starts_with("templates")
            })
            .collect();
        assert!(emitters.is_empty(), "{emitters:?}");
    }

    #[test]
    fn cycles_are_found_through_crate_and_super_paths() {
        let dir = std::env::temp_dir().join(format!("layers-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("lib.rs"), "mod a; mod b; mod c;").unwrap();
        std::fs::write(dir.join("a/mod.rs"), "mod x; use crate::b::Thing;").unwrap();
        std::fs::write(dir.join("a/x.rs"), "fn f() { super::super::c::g() }").unwrap();
        std::fs::write(dir.join("b.rs"), "use crate::{a::x, c};").unwrap();
        std::fs::write(
            dir.join("c.rs"),
            "pub fn g() {}\n#[cfg(test)]\nmod tests { use crate::a::x; }",
        )
        .unwrap();
        let graph = module_graph(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(graph["a"], BTreeSet::from(["b".to_owned()]));
        assert_eq!(graph["a::x"], BTreeSet::from(["c".to_owned()]));
        assert_eq!(
            graph["b"],
            BTreeSet::from(["a::x".to_owned(), "c".to_owned()])
        );
        // `c`'s test module names `a::x`, which does not count.
        assert!(graph["c"].is_empty());
        assert_eq!(cycles(&graph), Vec::<Vec<String>>::new());

        let mut cyclic = graph;
        cyclic.get_mut("c").unwrap().insert("b".to_owned());
        assert_eq!(
            cycles(&cyclic),
            vec![vec!["a::x".to_owned(), "b".to_owned(), "c".to_owned()]]
        );
    }
}
