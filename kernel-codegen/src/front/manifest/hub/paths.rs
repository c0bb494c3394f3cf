//! Where the paths of a Hub manifest's declaration are written in the manifest itself, so
//! that errors found in the declaration point at the file as its author wrote it.

use super::desugar::requirement_clauses;
use super::{BindingRef, Dispatch};

impl super::Manifest {
    /// Where the declaration's paths are written in this manifest: ports are maps keyed by
    /// bind key, derives are `derive` at each level, the manifest's `when` and `requires` and
    /// a variant's `requires` are `when` clauses of every variant, a shorthand dispatch is
    /// three axes, and a binding handle's struct is written under `bindings`.
    pub(super) fn source_paths(&self, common: usize) -> Vec<(String, String)> {
        let mut paths = Vec::new();
        let mut map = |from: String, to: String| paths.push((from, to));
        for (kind, ports) in [
            ("inputs", self.inputs.keys().collect::<Vec<_>>()),
            ("outputs", self.outputs.keys().collect()),
        ] {
            for (k, key) in ports.into_iter().enumerate() {
                map(format!("{kind}[{k}]"), format!("{kind}.{key}"));
            }
        }
        for (v, variant) in self.variants.iter().enumerate() {
            let at = format!("variants[{v}]");
            map(format!("{at}.constants"), format!("{at}.derive"));
            let own = variant.when.len();
            for i in 0..common {
                let to = if i < self.when.len() {
                    format!("when[{i}]")
                } else {
                    "requires".to_owned()
                };
                map(format!("{at}.when[{i}]"), to);
            }
            for i in 0..own {
                map(
                    format!("{at}.when[{}]", common + i),
                    format!("{at}.when[{i}]"),
                );
            }
            if let Some(requires) = &variant.requires {
                for i in 0..requirement_clauses(requires).len() {
                    map(
                        format!("{at}.when[{}]", common + own + i),
                        format!("{at}.requires"),
                    );
                }
            }
            for (p, pass) in variant.passes.iter().enumerate() {
                let at = format!("{at}.passes[{p}]");
                map(format!("{at}.source.inputs"), format!("{at}.derive"));
                map(format!("{at}.source.shader"), format!("{at}.shader"));
                let shorthand = match pass.dispatch {
                    Dispatch::Grid { .. } => None,
                    Dispatch::Threads { .. } => Some("threads"),
                    Dispatch::Workgroups(_) => Some("workgroups"),
                };
                if let Some(key) = shorthand {
                    for axis in ["x", "y", "z"] {
                        map(
                            format!("{at}.dispatch.{axis}"),
                            format!("{at}.dispatch.{key}"),
                        );
                    }
                }
                for (b, entry) in pass.bindings.iter().enumerate() {
                    let from = format!("{at}.bindings[{b}]");
                    let to = match entry {
                        BindingRef::Handle(key) => format!("bindings.{key}"),
                        BindingRef::Inline(_) => from.clone(),
                    };
                    // What the entry names stays the pass's; what the handle declares is
                    // written under `bindings`.
                    map(format!("{from}.struct.fields"), format!("{to}.struct"));
                    if to != from {
                        for key in ["elementType", "buffer"] {
                            map(format!("{from}.{key}"), format!("{to}.{key}"));
                        }
                    }
                }
            }
        }
        paths
    }
}
