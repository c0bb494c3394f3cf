//! What starting workgroups costs on the adapter: a kernel whose workgroups find nothing to do
//! and exit, launched as the grids the Hub's Add dispatches, timed like the cases. A case
//! whose time stays near its grid's launch time is bounded by the launch, not by its bytes.

use anyhow::{Result, bail};
use kernel_runtime::{Arg, Binding, Context, Dispatch, Kernel, Plan, PlannedPass, Tensor};
use serde::Serialize;

/// Each workgroup reads its id and the grid's size, as the word templates do to find their
/// slot, and writes only where no workgroup is (an id past the grid), so the compiler keeps
/// the test and the store and every workgroup exits having moved no bytes.
static IDLE: Kernel = Kernel {
    label: "bench.launch",
    source: "override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> sink: array<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let id = workgroup.x + workgroup.y * workgroups.x;
    if (id >= workgroups.x * workgroups.y) {
        sink[lane] = id;
    }
}
",
    entry_point: "main",
    digest: "bench-launch-v1",
    web_enables: "",
    least_sizes: &[],
};

/// A grid to launch: `x` × `y` workgroups of `workgroup_size` invocations.
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    pub x: u32,
    pub y: u32,
    pub workgroup_size: u32,
}

impl Grid {
    /// The grids Add's manifest launches above 16 MiB with the word templates' workgroup
    /// sizes: 64 × 1024 × 1024 elements fold into two rows of 65535 workgroups, 63 planes fit
    /// one row of 64512; and 32768, about half a row, to see whether time follows the count.
    pub fn sweep(quick: bool) -> Vec<Grid> {
        if quick {
            return vec![Grid {
                x: 1024,
                y: 2,
                workgroup_size: 64,
            }];
        }
        let mut grids = Vec::new();
        for workgroup_size in [32, 64, 256] {
            for (x, y) in [(65535, 2), (64512, 1), (32768, 1)] {
                grids.push(Grid {
                    x,
                    y,
                    workgroup_size,
                });
            }
        }
        grids
    }
}

/// One grid's launch time.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchResult {
    pub workgroups_x: u32,
    pub workgroups_y: u32,
    pub workgroup_size: u32,
    pub median_us: f64,
    /// `median_us` over the workgroups launched, in nanoseconds.
    pub ns_per_workgroup: f64,
}

/// Times each grid `repetitions` times after `warm_up` of sustained launches.
pub fn measure(
    ctx: &Context,
    grids: &[Grid],
    repetitions: usize,
    warm_up: std::time::Duration,
) -> Result<Vec<LaunchResult>> {
    let sink = Tensor::<u32>::zeros(ctx, &[256])?;
    let mut results = Vec::with_capacity(grids.len());
    for grid in grids {
        let plan = Plan {
            op: "bench",
            variant: "launch",
            passes: vec![PlannedPass {
                id: "launch",
                kernel: &IDLE,
                overrides: vec![("WG", f64::from(grid.workgroup_size))],
                bindings: vec![Binding::Arg(0)],
                params: vec![],
                dispatch: Dispatch::Grid {
                    x: u64::from(grid.x),
                    y: u64::from(grid.y),
                    z: 1,
                },
            }],
            intermediates: vec![],
            outputs: vec![],
        };
        let args = [Arg::write("sink", sink.binding())];
        super::warm_up(warm_up, |n| Ok(ctx.time_plan(&plan, &args, n)?))?;
        let times = ctx.time_plan(&plan, &args, repetitions)?;
        let Some(median) = super::median(&times) else {
            bail!("no timings");
        };
        let median_us = median.as_secs_f64() * 1e6;
        let launched = f64::from(grid.x) * f64::from(grid.y);
        results.push(LaunchResult {
            workgroups_x: grid.x,
            workgroups_y: grid.y,
            workgroup_size: grid.workgroup_size,
            median_us,
            ns_per_workgroup: median_us * 1e3 / launched,
        });
    }
    Ok(results)
}
