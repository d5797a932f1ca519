// Rounding of float32 values to the 16-bit formats of --precision, ties to even, in integer
// arithmetic so that every device rounds alike (a float16 conversion's rounding mode is the
// driver's choice). The results equal tensor.RoundBfloat16 and tensor.RoundFloat16 bit for bit.

// roundBfloat16 keeps float32's 8 exponent bits and the top 7 of its 23 fraction bits.
float roundBfloat16(float v) {
    uint u = floatBitsToUint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return v; // NaN: rounding the payload could carry it into an infinity
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return uintBitsToFloat(u & 0xffff0000u);
}

// roundFloat16 rounds to IEEE binary16: 10 fraction bits, subnormals below 2^-14 as multiples
// of 2^-24, 65520 and beyond to infinity.
float roundFloat16(float v) {
    uint u = floatBitsToUint(v);
    uint mag = u & 0x7fffffffu;
    uint sign = u & 0x80000000u;
    if (mag > 0x7f800000u) {
        return v;
    }
    if (mag >= 0x477ff000u) {
        return uintBitsToFloat(sign | 0x7f800000u);
    }
    if (mag < 0x38800000u) {
        // Scaling by 2^24 is exact, so roundEven sees the value in units of binary16's quantum.
        float q = roundEven(uintBitsToFloat(mag) * 16777216.0) * (1.0 / 16777216.0);
        return uintBitsToFloat(sign | floatBitsToUint(q));
    }
    u += 0xfffu + ((u >> 13) & 1u);
    return uintBitsToFloat(u & 0xffffe000u);
}
