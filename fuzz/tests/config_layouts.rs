//! The generator's file-handling target on the unmutated seed packages, one package at a
//! time: every layout (absolute paths, paths relative to a root, the output folder set to
//! the package, a FIFO template, the op named `Mod`, suggested hints beside a link and for a
//! hostile `domain`, metadata digests through a folder link) holds, so the checks the fuzzer
//! runs on mutants are live.

use std::time::Duration;

use fuzz::config_target::{self, Layout};

#[test]
fn every_layout_holds_for_the_seed_packages() {
    let seeds = fuzz::seeds::seed_packages().expect("the seed packages read");
    for package in &seeds.packages {
        let mut alone = seeds.clone();
        alone.packages.retain(|p| p.dir == package.dir);
        for layout in Layout::ALL {
            config_target::check(&alone, layout, true, Duration::from_secs(300))
                .unwrap_or_else(|e| panic!("{}: {e}", package.dir));
        }
    }
}
