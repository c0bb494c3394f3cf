struct Params {
    blocks: u32,
}

@group(0) @binding(0) var<storage, read> blockMax: array<f32>;
@group(0) @binding(1) var<storage, read> blockSum: array<f32>;
@group(0) @binding(2) var<storage, read_write> rowMax: array<f32>;
@group(0) @binding(3) var<storage, read_write> rowSum: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
const BLOCK_COLS: u32 = 2048u;
// The lowest f32, written exactly (see bias-softmax.wgsl.jinja).
const LOWEST: f32 = -0x1.fffffep+127f;
const PER_LANE: u32 = (BLOCK_COLS + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;

var<workgroup> reduction_scratch: array<f32, 256>;

fn workgroup_max(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    reduction_scratch[lane] = value;
    workgroupBarrier();
    for (var stride = 256u / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            reduction_scratch[lane] = max(reduction_scratch[lane], reduction_scratch[lane + stride]);
        }
        workgroupBarrier();
    }
    let result = reduction_scratch[0];
    workgroupBarrier();
    return result;
}

fn workgroup_sum(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    reduction_scratch[lane] = value;
    workgroupBarrier();
    for (var stride = 256u / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            reduction_scratch[lane] += reduction_scratch[lane + stride];
        }
        workgroupBarrier();
    }
    let result = reduction_scratch[0];
    workgroupBarrier();
    return result;
}


@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let row = workgroup.x;
    let base = row * params.blocks;
    var local_max = LOWEST;
    for (var b = lane; b < params.blocks; b += WORKGROUP_SIZE) {
        local_max = max(local_max, blockMax[base + b]);
    }
    let row_max = workgroup_max(local_max, lane, 0u, 0u, 1u);
    var local_sum = 0.0;
    for (var b = lane; b < params.blocks; b += WORKGROUP_SIZE) {
        local_sum += blockSum[base + b] * exp(blockMax[base + b] - row_max);
    }
    let row_sum = workgroup_sum(local_sum, lane, 0u, 0u, 1u);
    if (lane == 0u) {
        rowMax[row] = row_max;
        rowSum[row] = row_sum;
    }
}
