//! Templates: where they live and how names resolve (here), how they are read
//! (`usage.rs`, minijinja's syntax trees) and rendered (`render.rs`, the environment and
//! context; `prelude.rs`, the declarations written before a template; `pass.rs`, one pass
//! under one combination; `nesting.rs`, how deep its WGSL nests, refused past a bound
//! before naga sees it; `runtime_values.rs`, values printed as literals; `javascript.rs`,
//! what differs where the Hub runtime's Jinja renders them; `syntax.rs`, walks over the
//! syntax trees). The front end
//! reads and renders templates to settle an op, and the WGSL emitter to make its shaders;
//! neither is above the other.
//!
//! Every template is known by its display path (the package folder or the include root
//! joined with its file name), which is also the name minijinja reports errors under, so a
//! diagnostic names a real file.
//!
//! - A pass's `shader` names a file of its package, or else of the include root.
//! - Inside a template, `{% include %}` / `{% import %}` of `./x` or `../x` is relative to the
//!   including file; any other name is relative to the include root, or (where there is
//!   none, as for a Hub package) to the including file too. `..` may not leave the package
//!   folder or the include root.

pub mod javascript;
pub mod nesting;
pub mod pass;
pub mod prelude;
pub mod render;
mod runtime_values;
pub mod syntax;
pub mod usage;

use std::collections::BTreeMap;

/// The templates of one generation run and the include root they share.
#[derive(Debug, Clone, Copy)]
pub struct TemplatePaths<'a> {
    pub templates: &'a BTreeMap<String, String>,
    pub include_root: Option<&'a str>,
}

impl TemplatePaths<'_> {
    /// The template a pass of the package in `package_dir` names as `shader`: the package's
    /// own file when it has one, else the include root's; the package's path when neither
    /// exists, so the error names where it was looked for first.
    pub fn resolve_shader(&self, package_dir: &str, name: &str) -> String {
        let own = join_dir(package_dir, name);
        if self.templates.contains_key(&own) {
            return own;
        }
        if let Some(root) = self.include_root {
            let shared = join_dir(root, name);
            if self.templates.contains_key(&shared) {
                return shared;
            }
        }
        own
    }

    /// Whether `path` is a template of this run.
    pub fn exists(&self, path: &str) -> bool {
        self.templates.contains_key(path)
    }
}

/// The display path an `{% include %}` or `{% import %}` of `name` inside `parent` refers to.
/// A relative name that climbs out of its base folder resolves to a path no template has
/// (under `<outside>/`), so minijinja reports it as not found.
pub fn join(include_root: Option<&str>, name: &str, parent: &str) -> String {
    match include_root {
        Some(root) if !name.starts_with("./") && !name.starts_with("../") => {
            normalize(root, name, root)
        }
        // Without an include root every name is relative, as the Hub runtime reads them.
        _ => {
            let folder = parent.rsplit_once('/').map_or("", |(dir, _)| dir);
            normalize(folder, name, base_of(include_root, parent))
        }
    }
}

/// The folder `..` may not leave for a template at `parent`: the include root for its own
/// templates, otherwise the template's package folder (its parent folder).
fn base_of<'a>(include_root: Option<&'a str>, parent: &'a str) -> &'a str {
    if let Some(root) = include_root
        && parent.starts_with(root)
        && parent[root.len()..].starts_with('/')
    {
        return root;
    }
    parent.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn join_dir(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// `folder` + `name` with `.` and `..` applied; `<outside>/name` when `..` would leave `base`.
fn normalize(folder: &str, name: &str, base: &str) -> String {
    // An absolute folder keeps its root: `/` + parts.
    let root = if folder.starts_with('/') { "/" } else { "" };
    let mut parts: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
    let floor = base.split('/').filter(|p| !p.is_empty()).count();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.len() <= floor {
                    return format!("<outside>/{name}");
                }
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("{root}{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names_follow_the_including_file() {
        let root = Some("corpus/_shared_assets");
        assert_eq!(
            join(root, "./macros.wgsl.jinja", "corpus/Op/main.wgsl.jinja"),
            "corpus/Op/macros.wgsl.jinja"
        );
        assert_eq!(
            join(root, "ops/_shared/x.jinja", "corpus/Op/main.wgsl.jinja"),
            "corpus/_shared_assets/ops/_shared/x.jinja"
        );
        assert_eq!(
            join(
                root,
                "./y.jinja",
                "corpus/_shared_assets/ops/_shared/x.jinja"
            ),
            "corpus/_shared_assets/ops/_shared/y.jinja"
        );
        assert_eq!(
            join(
                root,
                "../z.jinja",
                "corpus/_shared_assets/ops/_shared/x.jinja"
            ),
            "corpus/_shared_assets/ops/z.jinja"
        );
    }

    #[test]
    fn without_an_include_root_every_name_is_relative() {
        assert_eq!(
            join(None, "common.jinja", "hub/Add/binary.wgsl.jinja"),
            "hub/Add/common.jinja"
        );
        assert_eq!(
            join(None, "parts/x.jinja", "hub/Add/binary.wgsl.jinja"),
            "hub/Add/parts/x.jinja"
        );
        assert_eq!(
            join(None, "../x.jinja", "hub/Add/binary.wgsl.jinja"),
            "<outside>/../x.jinja"
        );
    }

    #[test]
    fn absolute_folders_stay_absolute() {
        let root = Some("/src/kernels/_shared");
        assert_eq!(
            join(
                root,
                "macros/reduce.wgsl.jinja",
                "/src/kernels/Op/main.wgsl.jinja"
            ),
            "/src/kernels/_shared/macros/reduce.wgsl.jinja"
        );
        assert_eq!(
            join(root, "./body.jinja", "/src/kernels/Op/main.wgsl.jinja"),
            "/src/kernels/Op/body.jinja"
        );
        assert_eq!(
            join(root, "../x.jinja", "/src/kernels/_shared/m/a.jinja"),
            "/src/kernels/_shared/x.jinja"
        );
        assert_eq!(
            join(root, "../x.jinja", "/src/kernels/_shared/a.jinja"),
            "<outside>/../x.jinja"
        );
    }

    #[test]
    fn climbing_out_of_the_base_folder_is_not_found() {
        let root = Some("shared");
        assert_eq!(
            join(root, "../../secret", "shared/a/x.jinja"),
            "<outside>/../../secret"
        );
        assert_eq!(
            join(root, "../other/x", "pkg/main.jinja"),
            "<outside>/../other/x"
        );
        assert_eq!(join(root, "../x", "shared/x.jinja"), "<outside>/../x");
    }

    #[test]
    fn shaders_prefer_the_package_then_the_include_root() {
        let templates: BTreeMap<String, String> = [
            ("pkg/a.jinja".to_owned(), String::new()),
            ("shared/a.jinja".to_owned(), String::new()),
            ("shared/b.jinja".to_owned(), String::new()),
        ]
        .into();
        let paths = TemplatePaths {
            templates: &templates,
            include_root: Some("shared"),
        };
        assert_eq!(paths.resolve_shader("pkg", "a.jinja"), "pkg/a.jinja");
        assert_eq!(paths.resolve_shader("pkg", "b.jinja"), "shared/b.jinja");
        assert_eq!(paths.resolve_shader("pkg", "c.jinja"), "pkg/c.jinja");
    }
}
