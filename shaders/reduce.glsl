// reduce.glsl: workgroup-wide sums and maxima for kernels whose workgroup reduces a row (or a
// slice) of values, one partial per invocation. Every invocation receives the result. Include
// it after the layout(local_size_x_id ...) declaration, and call the functions from control
// flow that is uniform across the workgroup.
//
// With REDUCE_SUBGROUP defined (the *_sg.comp variants, which enable
// GL_KHR_shader_subgroup_arithmetic), each subgroup reduces with subgroup arithmetic and the
// subgroups' results are then combined in subgroup order through shared memory; a workgroup of
// one subgroup needs no shared memory and no barrier. Otherwise the partials are reduced in a
// shared-memory tree. Either way the order of operations depends only on the workgroup and
// subgroup sizes, so results repeat bit for bit.

shared float reduceA[gl_WorkGroupSize.x];
shared float reduceB[gl_WorkGroupSize.x];

#ifdef REDUCE_SUBGROUP

float groupSum(float x) {
    float s = subgroupAdd(x);
    if (gl_NumSubgroups == 1) {
        return s;
    }
    if (subgroupElect()) {
        reduceA[gl_SubgroupID] = s;
    }
    barrier();
    float r = reduceA[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) {
        r += reduceA[i];
    }
    barrier();
    return r;
}

float groupMax(float x) {
    float m = subgroupMax(x);
    if (gl_NumSubgroups == 1) {
        return m;
    }
    if (subgroupElect()) {
        reduceA[gl_SubgroupID] = m;
    }
    barrier();
    float r = reduceA[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) {
        r = max(r, reduceA[i]);
    }
    barrier();
    return r;
}

// groupSum2 sums a and b over the workgroup.
vec2 groupSum2(float a, float b) {
    vec2 s = subgroupAdd(vec2(a, b));
    if (gl_NumSubgroups == 1) {
        return s;
    }
    if (subgroupElect()) {
        reduceA[gl_SubgroupID] = s.x;
        reduceB[gl_SubgroupID] = s.y;
    }
    barrier();
    vec2 r = vec2(reduceA[0], reduceB[0]);
    for (uint i = 1; i < gl_NumSubgroups; i++) {
        r += vec2(reduceA[i], reduceB[i]);
    }
    barrier();
    return r;
}

#else

float groupSum(float x) {
    uint l = gl_LocalInvocationID.x;
    reduceA[l] = x;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (l < s) {
            reduceA[l] += reduceA[l + s];
        }
        barrier();
    }
    float r = reduceA[0];
    barrier();
    return r;
}

float groupMax(float x) {
    uint l = gl_LocalInvocationID.x;
    reduceA[l] = x;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (l < s) {
            reduceA[l] = max(reduceA[l], reduceA[l + s]);
        }
        barrier();
    }
    float r = reduceA[0];
    barrier();
    return r;
}

// groupSum2 sums a and b over the workgroup, each in the same tree as groupSum.
vec2 groupSum2(float a, float b) {
    uint l = gl_LocalInvocationID.x;
    reduceA[l] = a;
    reduceB[l] = b;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (l < s) {
            reduceA[l] += reduceA[l + s];
            reduceB[l] += reduceB[l + s];
        }
        barrier();
    }
    vec2 r = vec2(reduceA[0], reduceB[0]);
    barrier();
    return r;
}

#endif
