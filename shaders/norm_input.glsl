// norm_input.glsl: the first pass of layernorm_forward and rmsnorm_forward reads each row
// through normInput. With RESIDUAL the row is made as x = a + b and written to inp, the
// residual stream, in that pass; each lane later reads back only what it wrote, so the bits are
// those of an add followed by the norm. The including kernel declares inp[], and with RESIDUAL
// av[], bv[], p.off_a and p.off_bv.

// normInput returns x[row, i], the element at inp[x0 + i].
float normInput(uint row, uint x0, uint i) {
#ifdef RESIDUAL
    uint k = row * p.C + i;
    float x = av[p.off_a + k] + bv[p.off_bv + k];
    inp[x0 + i] = x;
    return x;
#else
    return inp[x0 + i];
#endif
}
