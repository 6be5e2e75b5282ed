#include "kernels/risk/individual_risk.h"

#include <array>
#include <cmath>
#include <numbers>

#include "kernels/core/error.h"

namespace sdc {
namespace {

constexpr int kGaussPoints = 16;

struct GaussLegendreRule {
  std::array<double, kGaussPoints> nodes{};  // on [-1, 1]
  std::array<double, kGaussPoints> weights{};
};

// Nodes are the roots of the Legendre polynomial P_n, found by Newton's method from the usual
// cosine guesses; weights 2 / ((1 - x²) P_n'(x)²). Computed once, immutable afterwards.
GaussLegendreRule make_gauss_legendre_rule() {
  GaussLegendreRule rule;
  const double n = kGaussPoints;
  for (int i = 0; i < kGaussPoints; ++i) {
    double x = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
    double derivative = 0.0;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double p0 = 1.0;
      double p1 = x;
      for (int k = 2; k <= kGaussPoints; ++k) {
        const double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      derivative = n * (x * p1 - p0) / (x * x - 1.0);
      const double step = p1 / derivative;
      x -= step;
      if (std::fabs(step) < 1e-16) break;
    }
    const auto index = static_cast<std::size_t>(i);
    rule.nodes[index] = x;
    rule.weights[index] = 2.0 / ((1.0 - x * x) * derivative * derivative);
  }
  return rule;
}

const GaussLegendreRule& gauss_legendre_rule() {
  static const GaussLegendreRule rule = make_gauss_legendre_rule();
  return rule;
}

bool is_invalid(double f, double F, bool weighted) {
  if (!std::isfinite(f) || !(f > 0.0)) return true;
  return weighted && (!std::isfinite(F) || F < f);
}

}  // namespace

double benedetti_franconi_closed_form(double f, double p) {
  const double q = 1.0 - p;
  if (f == 1.0) return p / q * std::log(1.0 / p);
  if (f == 2.0) {
    const double ratio = p / q;
    return ratio - ratio * ratio * std::log(1.0 / p);
  }
  if (f > 2.0) return p / (f - q);
  return 0.0;
}

double benedetti_franconi_exact(double f, double p) {
  const double q = 1.0 - p;
  const GaussLegendreRule& rule = gauss_legendre_rule();
  // f·r >= p, and the tail of ∫ e^(-y) g beyond Y is at most e^(-Y): stop at e^(-Y) <= 1e-17·p.
  const double tail = 40.0 + (p < 1.0 ? std::log(1.0 / p) : 0.0);
  const int panels = static_cast<int>(std::ceil(tail));
  double total = 0.0;
  for (int panel = 0; panel < panels; ++panel) {
    double sum = 0.0;
    for (std::size_t i = 0; i < rule.nodes.size(); ++i) {
      const double y = panel + 0.5 + 0.5 * rule.nodes[i];
      const double g = p / (p + q * std::exp(-y / f));
      sum += rule.weights[i] * std::exp(-y) * g;
    }
    total += 0.5 * sum;
  }
  return total / f;
}

IndividualRiskResult individual_risk(std::span<const double> f, std::span<const double> F,
                                     const IndividualRiskOptions& options) {
  SDC_CHECK(!options.weighted || F.size() == f.size(), "one weighted count per class");
  const bool native = options.mode == RiskMode::kNative;
  IndividualRiskResult result;
  if (native) {
    for (std::size_t k = 0; k < f.size(); ++k) {
      if (is_invalid(f[k], options.weighted ? F[k] : 0.0, options.weighted)) {
        result.invalid_class = k;
        return result;
      }
    }
  }
  result.risk.resize(f.size());
  for (std::size_t k = 0; k < f.size(); ++k) {
    if (!options.weighted) {
      result.risk[k] = 1.0 / f[k];
      continue;
    }
    double r = 0.0;
    if (f[k] == F[k]) {
      r = 1.0 / f[k];
    } else if (f[k] > 2.0 && options.method == IndividualRiskMethod::kExact) {
      r = benedetti_franconi_exact(f[k], f[k] / F[k]);
    } else {
      // The reference's p carries no offset (risk.md §4, compat conventions).
      r = benedetti_franconi_closed_form(f[k], f[k] / F[k]);
      if (native && f[k] != 1.0 && f[k] != 2.0 && !(f[k] > 2.0)) {
        if (result.non_integer_zero_classes == 0) result.first_non_integer_zero_class = k;
        ++result.non_integer_zero_classes;
      }
    }
    result.risk[k] = r * options.qual;
  }
  return result;
}

}  // namespace sdc
