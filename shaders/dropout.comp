#version 450
// dropout: mask[i] = 0 when element i is dropped, else keep = 1/(1-p); out[i] = inp[i] * mask[i].
// Element i (its index in the whole tensor: base + local index) is dropped when
// (hash32(i ^ key) >> 8) / 2^24 < p, with hash32 and key = hash32(seedLo ^ hash32(seedHi)) as
// tensor.Hash32 and tensor.DropoutScale define them; the host passes key and keep, so masks
// are bit-identical on every backend.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Out { float outv[]; };
layout(set = 0, binding = 1) writeonly buffer Mask { float mask[]; };
layout(set = 0, binding = 2) readonly buffer Inp { float inp[]; };
layout(push_constant) uniform Params {
    uint n;
    uint base; // index of this chunk's first element in the tensor
    uint key;
    float prob;
    float keep;
    uint off_out;
    uint off_mask;
    uint off_inp;
} p;

uint hash32(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        // Below 2^24 the conversion is exact and the scale a power of two: u is exact.
        float u = float(hash32((p.base + i) ^ p.key) >> 8) * (1.0 / 16777216.0);
        float s = u < p.prob ? 0.0 : p.keep;
        float x = inp[p.off_inp + i];
        mask[p.off_mask + i] = s;
        outv[p.off_out + i] = x * s;
    }
}
