#include "engine/tables/disclosure_simulation_step.h"

// The exact-disclosure study of resampling (docs/tables.md, "Resampling protection"; docs/methods
// tabular.md §3 "Analytic reproduction"). Each (S, M) pair is one run of the kernel's simulation
// (kernels/tables/resampling.h simulate_exact_disclosure) on the threads of one rank; the pairs are
// dealt to the ranks in turn and their results gathered in pair order. Every pair draws from the same
// seed and its own parameters alone, so its figures do not depend on the number of ranks or threads,
// nor on the other pairs of the lists.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>
#include <utility>

#include "distributed/collective_error.h"
#include "distributed/comm.h"
#include "engine/report/run_report.h"
#include "engine/table_step.h"
#include "engine/tables/resampling_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/tables/resampling.h"

namespace sdc::engine {
namespace {

constexpr const char* kMethod = "perturb-table simulate";

/// One (S, M) pair of the lists, in the order of the results: M by M, each with every S.
struct SimulationPair {
  double s = 0.0;
  std::int64_t tables = 1;
};

class DisclosureSimulationStepImpl final : public DisclosureSimulationStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const tables::DisclosureMethod method = disclosure_method();
    const std::vector<SimulationPair> pairs = simulation_pairs(method);
    if (options.draws < 1 || options.draws > kMaxSimulationDraws)
      throw UsageError(fmt::format("--draws: give a whole number from 1 to {}", kMaxSimulationDraws));
    const io::Seed seed = io::require_seed(options.seed_file, kMethod);

    StepFrame frame(context, kMethod, parameters(pairs), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());

    nlohmann::json mine = nlohmann::json::object();  // this rank's pairs, by index
    distributed::agree_on_error(comm, [&] {
      for (std::size_t i = static_cast<std::size_t>(comm.rank()); i < pairs.size();
           i += static_cast<std::size_t>(comm.size()))
        mine[std::to_string(i)] = simulate(method, pairs[i], seed.value);
    });
    const std::string text = mine.dump();
    const auto parts = comm.all_gather_bytes(std::as_bytes(std::span(text.data(), text.size())));
    nlohmann::json all = nlohmann::json::object();
    for (const auto& part : parts)
      all.update(nlohmann::json::parse(std::string(reinterpret_cast<const char*>(part.data()), part.size())));
    nlohmann::json results_by_pair = nlohmann::json::array();
    for (std::size_t i = 0; i < pairs.size(); ++i) results_by_pair.push_back(all.at(std::to_string(i)));
    clock.lap("simulate");

    step.results = {{"method", options.method},
                    {"draws", options.draws},
                    {"prior_max_count", tables::kDisclosurePriorMax},
                    {"pairs", std::move(results_by_pair)}};
    timer.stop();
    if (comm.is_coordinator()) {
      for (const auto& pair : step.results["pairs"]) {
        const auto p = [&](const nlohmann::json& object, int k) {
          const auto& value = object[fmt::format("p_exact_{}", k)];
          return value.is_number() ? fmt::format("{:.3f}", value.get<double>()) : std::string("-");
        };
        spdlog::info(
            "{} {}: S = {}, M = {}: P(X = k | X' = k), k = 1, 2, 3: {} {} {} (analytic {} {} {}); "
            "acceptance rate {:.3f}",
            kMethod, options.method, pair["quality_s"].get<double>(), pair["average_m"].get<std::int64_t>(), p(pair, 1),
            p(pair, 2), p(pair, 3), p(pair["analytic"], 1), p(pair["analytic"], 2), p(pair["analytic"], 3),
            pair["acceptance_rate"].get<double>());
      }
    }
    report.write(comm, options.report);
  }

  bool needs_seed() const override { return true; }

 private:
  tables::DisclosureMethod disclosure_method() const {
    if (options.method == "bootstrap") return tables::DisclosureMethod::kBootstrap;
    if (options.method == "cell") return tables::DisclosureMethod::kCell;
    throw UsageError("--method: give bootstrap or cell");
  }

  /// The pairs of the lists, Table 1's where a list is not given.
  std::vector<SimulationPair> simulation_pairs(tables::DisclosureMethod method) const {
    const bool cell = method == tables::DisclosureMethod::kCell;
    std::vector<double> s_values = options.quality_s;
    if (s_values.empty()) s_values.assign(tables::kTable1S.begin(), tables::kTable1S.end());
    std::vector<std::int64_t> m_values = options.average_m;
    if (m_values.empty()) {
      if (cell)
        m_values = {1};
      else
        m_values.assign(tables::kTable1Tables.begin(), tables::kTable1Tables.end());
    }
    for (const double s : s_values)
      if (!(s > 0.0) || !std::isfinite(s))
        throw UsageError("--quality-s: give positive numbers, the S of the quality condition");
    for (const std::int64_t m : m_values) {
      if (m < 1 || m > kMaxAveragedTables)
        throw UsageError(fmt::format("--average-m: give whole numbers of tables from 1 to {}", kMaxAveragedTables));
      if (cell && m != 1)
        throw UsageError("--average-m: the cell method does not average tables: give 1 or leave the flag out");
    }
    std::vector<SimulationPair> pairs;
    for (const std::int64_t m : m_values)
      for (const double s : s_values) pairs.push_back({s, m});
    return pairs;
  }

  nlohmann::json parameters(const std::vector<SimulationPair>& pairs) const {
    // The lists as run, Table 1's where a flag was left out.
    std::vector<double> s_values;
    std::vector<std::int64_t> m_values;
    for (const SimulationPair& pair : pairs) {
      if (std::find(s_values.begin(), s_values.end(), pair.s) == s_values.end()) s_values.push_back(pair.s);
      if (std::find(m_values.begin(), m_values.end(), pair.tables) == m_values.end()) m_values.push_back(pair.tables);
    }
    return {{"resampling", options.method}, {"quality-s", s_values}, {"average-m", m_values}, {"draws", options.draws}};
  }

  nlohmann::json simulate(tables::DisclosureMethod method, const SimulationPair& pair, std::uint64_t seed) const {
    tables::ExactDisclosureSimulation simulation;
    try {
      simulation = tables::simulate_exact_disclosure(method, pair.s, pair.tables, options.draws, seed);
    } catch (const ParameterError& error) {
      throw ParameterError(
          fmt::format("{}: S = {}, M = {}: {} (--quality-s, --average-m)", kMethod, pair.s, pair.tables, error.what()));
    }
    const std::array<double, 3> analytic = tables::heer_exact_disclosure(pair.s, pair.tables);
    nlohmann::json out{{"quality_s", pair.s},
                       {"average_m", pair.tables},
                       {"released", simulation.released},
                       {"exact", simulation.exact},
                       {"trials", simulation.trials},
                       {"attempts", simulation.attempts},
                       {"acceptance_rate", simulation.acceptance_rate}};
    nlohmann::json analytic_values = nlohmann::json::object();
    for (std::size_t k = 0; k < 3; ++k) {
      const std::string name = fmt::format("p_exact_{}", k + 1);
      out[name] = number_or_null(simulation.probability[k]);
      analytic_values[name] = number_or_null(analytic[k]);
    }
    out["analytic"] = std::move(analytic_values);
    return out;
  }
};

}  // namespace

std::unique_ptr<DisclosureSimulationStep> make_disclosure_simulation_step() {
  return std::make_unique<DisclosureSimulationStepImpl>();
}

}  // namespace sdc::engine
