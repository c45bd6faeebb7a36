// exp and log that give the same bits on every platform.
// The sampler's draws must not depend on the C library: glibc (native) and musl
// (Emscripten) round expf/logf differently in the last place, which can move a
// cumulative-probability boundary and change the sampled token for a given seed.
// These use only IEEE-754 double +, -, *, / and exponent bit manipulation, which
// are exactly rounded everywhere (x86-64 SSE2 and wasm have no x87 excess precision,
// and the build is ISO C++ so g++ does not contract a*b+c into an FMA).
#pragma once

namespace runnel {

// e^x for any double; relative error below 1e-15. Returns 0 below about -745.2,
// +inf above about 709.8, NaN for NaN.
double portable_exp(double x);

// Natural log for any double; relative error below 1e-15 away from x = 1 (absolute
// error below 1e-16 near it). log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf.
double portable_log(double x);

}  // namespace runnel
