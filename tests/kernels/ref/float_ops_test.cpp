// (4) The reference float ops against straightforward double-precision loops.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ops.h"
#include "tests/kernels/test_util.h"

namespace runnel {
namespace {

using test::Rng;

constexpr double kPi = 3.14159265358979323846;

const FloatOps& ops() {
  return ref_float_ops();
}

std::vector<float> bell(uint64_t seed, int64_t n, float scale = 1.0f) {
  Rng rng(seed);
  return test::bell_row(rng, n, scale);
}

// |got - want| <= rel * |want| + abs, element by element.
void check_close(const std::vector<float>& got, const std::vector<double>& want, double rel,
                 double abs) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << " want " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + abs);
  }
}

TEST_CASE("rms_norm matches x / sqrt(mean(x^2) + eps) * w", "[kernels]") {
  for (int64_t n : {1, 7, 64, 4096, 5000}) {
    INFO("n = " << n);
    const auto x = bell(n, n, 3.0f);
    const auto w = bell(n + 1, n);
    double ss = 0.0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-5);
    std::vector<double> want(n), want_unweighted(n);
    for (int64_t i = 0; i < n; ++i) {
      want_unweighted[i] = x[i] * inv;
      want[i] = want_unweighted[i] * w[i];
    }
    std::vector<float> out(n);
    ops().rms_norm(x.data(), w.data(), out.data(), n, 1e-5f);
    check_close(out, want, 2e-6, 1e-7);
    ops().rms_norm(x.data(), nullptr, out.data(), n, 1e-5f);
    check_close(out, want_unweighted, 2e-6, 1e-7);
    std::vector<float> in_place(x);
    ops().rms_norm(in_place.data(), w.data(), in_place.data(), n, 1e-5f);
    check_close(in_place, want, 2e-6, 1e-7);
  }
  // eps dominates a zero row: output is exactly zero, not NaN.
  std::vector<float> zero(16, 0.0f), out(16, 1.0f);
  ops().rms_norm(zero.data(), nullptr, out.data(), 16, 1e-6f);
  for (float v : out) CHECK(v == 0.0f);
}

TEST_CASE("softmax matches exp(x - max) / sum", "[kernels]") {
  for (float scale : {1.0f, 30.0f}) {
    auto x = bell(9, 1000, scale);
    x[17] = 80.0f * scale;  // exp(x) alone would overflow float for scale 30
    double max = -1e300;
    for (float v : x) max = std::max(max, static_cast<double>(v));
    double sum = 0.0;
    for (float v : x) sum += std::exp(v - max);
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = std::exp(x[i] - max) / sum;
    ops().softmax(x.data(), static_cast<int64_t>(x.size()));
    check_close(x, want, 1e-5, 1e-12);
    double total = 0.0;
    for (float v : x) total += v;
    CHECK(total == Approx(1.0).epsilon(1e-6));
  }
  SECTION("masked entries") {
    const float ninf = -std::numeric_limits<float>::infinity();
    std::vector<float> x = {1.0f, ninf, 2.0f, ninf};
    ops().softmax(x.data(), 4);
    const double e = std::exp(-1.0);
    CHECK(x[0] == Approx(e / (1 + e)).epsilon(1e-6));
    CHECK(x[1] == 0.0f);
    CHECK(x[2] == Approx(1 / (1 + e)).epsilon(1e-6));
    CHECK(x[3] == 0.0f);
    std::vector<float> all_masked(5, ninf);
    ops().softmax(all_masked.data(), 5);
    for (float v : all_masked) CHECK(v == 0.0f);
  }
}

TEST_CASE("silu, swiglu, gelu, geglu, softcap match double formulas", "[kernels]") {
  const int64_t n = 2000;
  auto x = bell(21, n, 4.0f);
  x[0] = -100.0f;  // exp(100) overflows float: silu must still give -0, not NaN
  x[1] = 100.0f;
  x[2] = 0.0f;
  const auto up = bell(22, n);
  std::vector<double> want_silu(n), want_swiglu(n), want_gelu(n), want_geglu(n), want_cap(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    want_silu[i] = v / (1.0 + std::exp(-v));
    want_swiglu[i] = want_silu[i] * up[i];
    want_gelu[i] = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (v + 0.044715 * v * v * v)));
    want_geglu[i] = want_gelu[i] * up[i];
    want_cap[i] = 30.0 * std::tanh(v / 30.0);
  }
  std::vector<float> out(n);
  ops().silu(x.data(), out.data(), n);
  check_close(out, want_silu, 3e-6, 1e-30);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == 100.0f);
  ops().swiglu(x.data(), up.data(), out.data(), n);
  check_close(out, want_swiglu, 3e-6, 1e-30);
  ops().gelu(x.data(), out.data(), n);
  check_close(out, want_gelu, 3e-6, 1e-7);
  ops().geglu(x.data(), up.data(), out.data(), n);
  check_close(out, want_geglu, 3e-6, 1e-7);
  std::vector<float> capped(x);
  ops().softcap(capped.data(), n, 30.0f);
  check_close(capped, want_cap, 3e-6, 1e-7);
}

TEST_CASE("add, mul, scale, axpy", "[kernels]") {
  const int64_t n = 37;
  const auto a = bell(31, n);
  const auto b = bell(32, n);
  std::vector<float> out(n);
  ops().add(a.data(), b.data(), out.data(), n);
  for (int64_t i = 0; i < n; ++i) CHECK(out[i] == a[i] + b[i]);
  ops().mul(a.data(), b.data(), out.data(), n);
  for (int64_t i = 0; i < n; ++i) CHECK(out[i] == a[i] * b[i]);
  std::vector<float> s(a);
  ops().scale(s.data(), n, -0.25f);
  for (int64_t i = 0; i < n; ++i) CHECK(s[i] == a[i] * -0.25f);
  std::vector<float> y(b);
  ops().axpy(a.data(), y.data(), n, 3.0f);
  for (int64_t i = 0; i < n; ++i) CHECK(y[i] == b[i] + 3.0f * a[i]);
}

// ---- rope

// The rotation of pair (x0, x1) by theta, computed in double from first principles.
void rotate_double(double* x0, double* x1, double theta) {
  const double a = *x0, b = *x1;
  *x0 = a * std::cos(theta) - b * std::sin(theta);
  *x1 = a * std::sin(theta) + b * std::cos(theta);
}

std::vector<double> rope_double(const std::vector<float>& x, int64_t n_rot, int64_t pos,
                                double base, const float* factors, double freq_scale,
                                RopeStyle style) {
  std::vector<double> y(x.begin(), x.end());
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    double theta = static_cast<double>(pos) * freq_scale * std::pow(base, -2.0 * i / n_rot);
    if (factors) theta /= factors[i];
    if (style == RopeStyle::kNormal) {
      rotate_double(&y[2 * i], &y[2 * i + 1], theta);
    } else {
      rotate_double(&y[i], &y[i + n_rot / 2], theta);
    }
  }
  return y;
}

std::vector<float> rope_ref(std::vector<float> x, int64_t pos, const RopeParams& p,
                            RopeStyle style) {
  std::vector<float> cs(p.n_rot);
  ops().rope_cos_sin(pos, p, cs.data());
  ops().rope_apply(x.data(), p.n_rot, cs.data(), style);
  return x;
}

TEST_CASE("rope: normal pairs are adjacent, neox pairs are half a head apart", "[kernels]") {
  // A unit vector on element 0 at pos 1: pair 0 has frequency 1, so theta = 1 rad.
  std::vector<float> e0(8, 0.0f);
  e0[0] = 1.0f;
  RopeParams p;
  p.n_rot = 8;
  p.freq_base = 10000.0f;
  const auto normal = rope_ref(e0, 1, p, RopeStyle::kNormal);
  CHECK(normal[0] == Approx(std::cos(1.0)).epsilon(1e-6));
  CHECK(normal[1] == Approx(std::sin(1.0)).epsilon(1e-6));
  for (int i = 2; i < 8; ++i) CHECK(normal[i] == 0.0f);
  const auto neox = rope_ref(e0, 1, p, RopeStyle::kNeox);
  CHECK(neox[0] == Approx(std::cos(1.0)).epsilon(1e-6));
  CHECK(neox[4] == Approx(std::sin(1.0)).epsilon(1e-6));
  CHECK(neox[1] == 0.0f);
  // pos 0 is the identity.
  const auto x = bell(41, 8);
  const auto same = rope_ref(x, 0, p, RopeStyle::kNeox);
  for (int i = 0; i < 8; ++i) CHECK(same[i] == x[i]);
}

TEST_CASE("rope matches double-precision rotation for long heads and far positions", "[kernels]") {
  std::vector<float> factors(64);
  for (int i = 0; i < 64; ++i)
    factors[i] = i < 20 ? 1.0f : (i < 40 ? 1.0f + 0.35f * (i - 20) : 8.0f);
  for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    for (int64_t pos : {1, 17, 4095, 131071}) {
      for (bool with_factors : {false, true}) {
        INFO("style " << static_cast<int>(style) << " pos " << pos << " factors " << with_factors);
        const auto x = bell(pos, 128);
        RopeParams p;
        p.n_rot = 128;
        p.freq_base = 500000.0f;
        p.freq_factors = with_factors ? factors.data() : nullptr;
        const auto want = rope_double(x, 128, pos, 500000.0, p.freq_factors, 1.0, style);
        // theta = pos * freq is formed in double and only cos/sin are rounded to float,
        // so the error does not grow with the position.
        check_close(rope_ref(x, pos, p, style), want, 0.0, 2e-6);
      }
    }
  }
}

TEST_CASE("rope: partial rotary, linear scaling and attn_factor", "[kernels]") {
  const auto x = bell(51, 96);
  RopeParams p;
  p.n_rot = 32;  // rotate the first 32 of 96 (phi-2 style)
  p.freq_base = 10000.0f;
  p.freq_scale = 0.25f;
  const auto got = rope_ref(x, 1000, p, RopeStyle::kNeox);
  const auto want = rope_double(x, 32, 1000, 10000.0, nullptr, 0.25, RopeStyle::kNeox);
  check_close(got, want, 0.0, 2e-6);
  for (int i = 32; i < 96; ++i) CHECK(got[i] == x[i]);  // untouched tail
  // Rotations preserve the norm of the rotated part.
  double n_in = 0.0, n_out = 0.0;
  for (int i = 0; i < 32; ++i) {
    n_in += static_cast<double>(x[i]) * x[i];
    n_out += static_cast<double>(got[i]) * got[i];
  }
  CHECK(n_out == Approx(n_in).epsilon(1e-6));
  // attn_factor scales cos and sin, hence the rotated part.
  p.attn_factor = 2.0f;
  const auto doubled = rope_ref(x, 1000, p, RopeStyle::kNeox);
  for (int i = 0; i < 32; ++i) CHECK(doubled[i] == Approx(2.0 * want[i]).margin(4e-6));
}

// YaRN from its definition (the paper's NTK-by-parts interpolation as llama.cpp's
// ggml_rope_yarn discretizes it): pair i has wavelength 2 pi base^(2i / n_rot) (times its
// factor); pairs that turn more than beta_fast times over the original context keep their
// angle, fewer than beta_slow times are scaled by freq_scale, with a linear ramp over the
// pair indices between (the floor / ceiling of where the turn counts cross the betas); the
// rotated part grows by 1 + 0.1 ln(1 / freq_scale), times attn_factor.
std::vector<double> rope_yarn_double(const std::vector<float>& x, int64_t n_rot, int64_t pos,
                                     double base, const float* factors, double freq_scale,
                                     double attn_factor, double n_ctx_orig, double beta_fast,
                                     double beta_slow, RopeStyle style) {
  // The (fractional) pair index that turns `turns` times over n_ctx_orig:
  // n_ctx_orig / (2 pi base^(2d / n_rot)) = turns.
  const auto pair_at = [&](double turns) {
    return 0.5 * static_cast<double>(n_rot) * std::log(n_ctx_orig / (2 * kPi * turns)) / std::log(base);
  };
  const double first_scaled = std::min(static_cast<double>(n_rot - 1), std::ceil(pair_at(beta_slow)));
  const double last_kept = std::max(0.0, std::floor(pair_at(beta_fast)));
  const double magnitude = attn_factor * (1.0 + 0.1 * std::log(1.0 / freq_scale));
  std::vector<double> y(x.begin(), x.end());
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    double wavelength = 2 * kPi * std::pow(base, 2.0 * i / n_rot);
    if (factors) wavelength *= factors[i];
    const double kept = static_cast<double>(pos) * 2 * kPi / wavelength;
    double weight_kept = 1.0;  // 1 up to last_kept, 0 from first_scaled on
    if (i >= first_scaled) {
      weight_kept = 0.0;
    } else if (i > last_kept) {
      weight_kept = 1.0 - (i - last_kept) / std::max(0.001, first_scaled - last_kept);
    }
    const double theta = kept * weight_kept + kept * freq_scale * (1.0 - weight_kept);
    double* a = style == RopeStyle::kNormal ? &y[2 * i] : &y[i];
    double* b = style == RopeStyle::kNormal ? &y[2 * i + 1] : &y[i + n_rot / 2];
    rotate_double(a, b, theta);
    *a *= magnitude;
    *b *= magnitude;
  }
  return y;
}

TEST_CASE("rope: YaRN matches its definition in double precision", "[kernels]") {
  // Qwen3 style: n_rot 128, base 1e6, a 32768-token original context stretched 4x:
  // pairs 0..23 keep their angles, 40.. are scaled, 24..39 ramp.
  std::vector<float> factors(64);
  for (int i = 0; i < 64; ++i) factors[i] = 1.0f + 0.05f * i;
  for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    for (int64_t pos : {1, 17, 4095, 131071}) {
      for (bool with_factors : {false, true}) {
        INFO("style " << static_cast<int>(style) << " pos " << pos << " factors " << with_factors);
        const auto x = bell(pos + 7, 128);
        RopeParams p;
        p.n_rot = 128;
        p.freq_base = 1e6f;
        p.freq_scale = 0.25f;
        p.attn_factor = 0.9f;
        p.freq_factors = with_factors ? factors.data() : nullptr;
        p.ext_factor = 1.0f;
        p.n_ctx_orig = 32768;
        const auto want =
            rope_yarn_double(x, 128, pos, 1e6, p.freq_factors, 0.25, 0.9, 32768, 32, 1, style);
        check_close(rope_ref(x, pos, p, style), want, 0.0, 3e-6);
      }
    }
  }
  // Other betas and a partial rotary part (rope.scaling.yarn_beta_fast / _slow).
  const auto x = bell(61, 96);
  RopeParams p;
  p.n_rot = 64;
  p.freq_base = 10000.0f;
  p.freq_scale = 0.125f;
  p.ext_factor = 1.0f;
  p.n_ctx_orig = 4096;
  p.beta_fast = 16.0f;
  p.beta_slow = 2.0f;
  const auto got = rope_ref(x, 3000, p, RopeStyle::kNeox);
  const auto want =
      rope_yarn_double(x, 64, 3000, 10000.0, nullptr, 0.125, 1.0, 4096, 16, 2, RopeStyle::kNeox);
  check_close(got, want, 0.0, 3e-6);
  for (int i = 64; i < 96; ++i) CHECK(got[i] == x[i]);  // untouched tail
}

TEST_CASE("rope: YaRN keeps the fast pairs' angles and scales the slow ones", "[kernels]") {
  // n_rot 16, base 10000, 4096 original positions: the ramp spans pairs 2..6.
  RopeParams yarn;
  yarn.n_rot = 16;
  yarn.freq_scale = 0.25f;
  yarn.ext_factor = 1.0f;
  yarn.n_ctx_orig = 4096;
  RopeParams plain = yarn;
  plain.ext_factor = 0.0f;
  plain.freq_scale = 1.0f;
  RopeParams linear = plain;
  linear.freq_scale = 0.25f;
  std::vector<float> y(16), p(16), l(16);
  ops().rope_cos_sin(1000, yarn, y.data());
  ops().rope_cos_sin(1000, plain, p.data());
  ops().rope_cos_sin(1000, linear, l.data());
  const double mscale = 1.0 + 0.1 * std::log(4.0);
  for (int i : {0, 1}) {  // turns > 32 times over 4096 positions: unscaled angle
    CHECK(y[2 * i] == Approx(p[2 * i] * mscale).margin(1e-6));
    CHECK(y[2 * i + 1] == Approx(p[2 * i + 1] * mscale).margin(1e-6));
  }
  for (int i : {6, 7}) {  // turns < once: the linear angle
    CHECK(y[2 * i] == Approx(l[2 * i] * mscale).margin(1e-6));
    CHECK(y[2 * i + 1] == Approx(l[2 * i + 1] * mscale).margin(1e-6));
  }
}

TEST_CASE("rope: ext_factor 0 ignores the YaRN fields, bit for bit", "[kernels]") {
  RopeParams p;
  p.n_rot = 64;
  p.freq_base = 500000.0f;
  p.freq_scale = 0.5f;
  p.attn_factor = 1.5f;
  RopeParams with_fields = p;
  with_fields.n_ctx_orig = 8192;
  with_fields.beta_fast = 8.0f;
  with_fields.beta_slow = 3.0f;
  std::vector<float> a(64), b(64);
  for (int64_t pos : {0, 5, 70000}) {
    ops().rope_cos_sin(pos, p, a.data());
    ops().rope_cos_sin(pos, with_fields, b.data());
    CHECK(a == b);
  }
}

}  // namespace
}  // namespace runnel
