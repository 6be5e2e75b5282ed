// `sdc risk --suda2`: SUDA2 special-uniques scores and DIS scores (sdcMicro suda2; docs/risk.md
// "## SUDA2"; the kernel is kernels/risk/suda2.h, its composition over ranks
// distributed/compose/suda2.h).

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "distributed/compose/suda2.h"
#include "engine/report/small_counts.h"
#include "engine/risk/risk_measure.h"
#include "kernels/core/error.h"
#include "kernels/risk/suda2.h"

namespace sdc::engine {
namespace {

/// The largest key subset searched: the lattice of subsets doubles with every key.
constexpr std::int64_t kMaxSuda2Size = 64;

constexpr const char* kSudaScore = "suda_score";
constexpr const char* kDisScore = "dis_score";

VariableInfo continuous_variable(const std::string& name) {
  VariableInfo variable;
  variable.name = name;
  variable.type = VariableType::kContinuous;
  return variable;
}

const char* weights_name(Suda2Weights weights) { return weights == Suda2Weights::kIhsn ? "ihsn" : "elliot"; }

/// C(n, k) as a double (the search's subset counts; exact far beyond what is allowed).
double binomial(std::size_t n, std::size_t k) {
  double result = 1.0;
  for (std::size_t i = 1; i <= k; ++i) result = result * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::round(result);
}

/// Accepts 0 < PHI <= 1, with a message that says so (CLI::Range prints its open bound as 0.000000).
CLI::Validator fraction_in_unit_interval() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0.0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || !(value > 0.0 && value <= 1.0))
          return "expected a fraction in (0, 1], got '" + text + "'";
        return {};
      },
      "(0,1]");
}

class Suda2Measure final : public RiskMeasure {
 public:
  void add_options(CLI::App& app, PathFlags&) override {
    auto* enable = app.add_flag("--suda2", enabled_,
                                "SUDA2: minimal sample uniques of the keys; adds the columns suda_score and dis_score");
    app.add_option("--suda2-max-size", max_size_,
                   "largest key subset searched for minimal sample uniques (default: the number of keys)")
        ->check(whole_number_in(1, kMaxSuda2Size))
        ->type_name("S")
        ->needs(enable);
    app.add_option("--dis-fraction", options_.dis_fraction,
                   "SUDA2's sampling fraction phi in the DIS score (sdcMicro DisFraction), in (0, 1]; default 0.01")
        ->check(fraction_in_unit_interval())
        ->type_name("PHI")
        ->needs(enable);
    const std::map<std::string, Suda2Weights> weights{{"elliot", Suda2Weights::kElliot}, {"ihsn", Suda2Weights::kIhsn}};
    app.add_option("--suda2-weights", options_.weights,
                   "weight of a minimal sample unique of size s among M keys: elliot = (M-s)! (Elliot et al., "
                   "sdcMicro's default) or ihsn = (2^(M-s) - 1) / C(M, s) (the IHSN implementation)")
        ->transform(CLI::CheckedTransformer(weights, CLI::ignore_case))
        ->type_name("elliot|ihsn")
        ->needs(enable);
    app.add_flag("--suda2-contributions", options_.contributions,
                 "SUDA2: the report gives each key's (and key level's) contribution to the scores, in percent")
        ->needs(enable);
  }

  bool enabled() const override { return enabled_; }

  nlohmann::json parameters() const override {
    return {{"suda2", true},
            {"suda2-max-size", max_size_ == 0 ? nlohmann::json(nullptr) : nlohmann::json(max_size_)},
            {"dis-fraction", options_.dis_fraction},
            {"suda2-weights", weights_name(options_.weights)},
            {"suda2-contributions", options_.contributions}};
  }

  std::string result_key() const override { return "suda2"; }

  std::size_t effective_max_size(std::size_t key_count) const {
    return max_size_ == 0 ? key_count : static_cast<std::size_t>(max_size_);
  }

  std::optional<std::string> size_problem(std::size_t key_count) const {
    const std::size_t max_size = effective_max_size(key_count);
    if (max_size > key_count)
      return "--suda2-max-size " + std::to_string(max_size_) + " exceeds the number of key variables (" +
             std::to_string(key_count) + " in --keys)";
    for (std::size_t k = 1; k <= max_size; ++k)
      if (binomial(key_count, k - 1) + binomial(key_count, k) > static_cast<double>(kMaxSubsetsPerLevelPair))
        return "--suda2-max-size " + std::to_string(max_size) + " with " + std::to_string(key_count) +
               " key variables needs more than " + std::to_string(kMaxSubsetsPerLevelPair) +
               " key subsets in two adjacent sizes; give a smaller --suda2-max-size";
    return std::nullopt;
  }

  std::vector<VariableInfo> added_variables() const override {
    return {continuous_variable(kSudaScore), continuous_variable(kDisScore)};
  }

  void check_parameters(std::size_t key_count, std::vector<std::string>& problems) const override {
    if (auto problem = size_problem(key_count)) problems.push_back(std::move(*problem));
  }

  void run(const RiskContext& context, RiskMeasureOutput& output) override {
    const std::size_t m = context.keys.key_count();
    // The risk command checked the parameters before reading; the same options are on every rank.
    if (auto problem = size_problem(m)) throw UsageError(*problem);
    const std::size_t max_size = effective_max_size(m);
    Suda2Options options = options_;
    options.max_size = max_size;

    distributed::DistributedSuda2 suda = distributed::distributed_suda2(context.comm, context.keys, options);
    const Suda2Partial& total = suda.total;

    nlohmann::json msus_by_size = nlohmann::json::array();
    for (std::size_t s = 0; s < total.msus_by_size.size(); ++s)
      msus_by_size.push_back({{"size", s + 1}, {"msus", total.msus_by_size[s]}});
    output.results = {{"max_size", max_size},
                      {"dis_fraction", options.dis_fraction},
                      {"weights", weights_name(options.weights)},
                      {"U", total.unique_records},
                      {"D", total.pair_records},
                      {"msus", total.msu_count},
                      {"msus_by_size", msus_by_size},
                      {"records_with_msu", total.scored_records},
                      {"score_sum", total.score_sum.value()},
                      {"score_max", suda.score_max},
                      {"dis_max", suda.dis_max}};
    if (suda.contributions) output.results["contributions"] = contributions_json(context, total, *suda.contributions);
    if (total.scored_records == 0)
      output.warnings.push_back("suda2: no record has a minimal sample unique up to size " + std::to_string(max_size) +
                                "; every SUDA and DIS score is 0");

    output.columns.push_back(Column::continuous(continuous_variable(kSudaScore), std::move(suda.score)));
    output.columns.push_back(Column::continuous(continuous_variable(kDisScore), std::move(suda.dis)));
  }

 private:
  /// Collective. Per key in --keys order: its percent of the score total, and its levels with a
  /// positive share (in level order) with their percent of the key's total. A level carried by fewer
  /// records than the report's small-count rule allows is not named; `levels_withheld` counts them.
  static nlohmann::json contributions_json(const RiskContext& context, const Suda2Partial& total,
                                           const Suda2AttributeContributions& contributions) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t j = 0; j < context.key_names.size(); ++j) {
      const auto& labels = context.table.require(context.key_names[j]).info().levels;
      std::vector<std::int64_t> carried(labels.size(), 0);
      for (const std::int32_t code : context.keys.codes[j])
        if (code >= 0) ++carried[static_cast<std::size_t>(code)];
      context.comm.all_reduce_sum(std::span<std::int64_t>(carried));
      nlohmann::json levels = nlohmann::json::array();
      std::int64_t withheld = 0;
      for (std::size_t c = 0; c < labels.size(); ++c) {
        const double percent = contributions.level_percent[total.level_offsets[j] + c];
        if (percent <= 0.0) continue;
        if (label_may_be_printed(carried[c], context.report_min_count))
          levels.push_back({{"level", labels[c]}, {"percent", percent}});
        else
          ++withheld;
      }
      out.push_back({{"variable", context.key_names[j]},
                     {"percent", contributions.key_percent[j]},
                     {"levels", levels},
                     {"levels_withheld", withheld}});
    }
    return out;
  }

  bool enabled_ = false;
  std::int64_t max_size_ = 0;  ///< 0: all keys
  Suda2Options options_;
};

}  // namespace

std::unique_ptr<RiskMeasure> make_suda2_measure() { return std::make_unique<Suda2Measure>(); }

}  // namespace sdc::engine
