// `sdc risk --external FILE`: the file-level marketer risks of the input against an external
// identification file with the same key variables (docs/risk.md "## Marketer risk"; risk.md §6).

#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <unordered_map>

#include "distributed/compose/marketer_risk.h"
#include "engine/partitioned_table.h"
#include "engine/risk/risk_measure.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

constexpr const char* kExternalCount = "fk_external";

class MarketerMeasure final : public RiskMeasure {
 public:
  void add_options(CLI::App& app, PathFlags& paths) override {
    app.add_option("--external", external_,
                   "external identification file (sdc HDF5) holding the key variables: the marketer risks IM, CEM, "
                   "OREM and AREM of the input against it, and the column fk_external")
        ->type_name("FILE");
    paths.reads("--external", external_);
  }
  bool enabled() const override { return external_.has_value(); }
  /// The external file is identified by its content (inputs()), not by its path.
  nlohmann::json parameters() const override { return {{"external", true}}; }
  std::vector<NamedInput> inputs() const override { return {{"external", *external_}}; }
  std::string result_key() const override { return "marketer_risk"; }
  std::vector<VariableInfo> added_variables() const override {
    VariableInfo variable;
    variable.name = kExternalCount;
    variable.type = VariableType::kContinuous;
    return {variable};
  }

  void run(const RiskContext& context, RiskMeasureOutput& output) override {
    const auto& comm = context.comm;
    const TablePart external = read_partitioned(comm, *external_, std::nullopt);
    // E's codes in D's levels, matched by label; a record of E with a value D does not have cannot
    // match a class of D and is left out.
    std::vector<std::vector<std::int32_t>> codes(context.key_names.size());
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(external.table.row_count()), 1);
    for (std::size_t k = 0; k < context.key_names.size(); ++k) {
      const std::string& name = context.key_names[k];
      const Column* column = external.table.find(name);
      if (column == nullptr || column->info().type != VariableType::kCategorical)
        throw InvalidInput(external_->string() + ": variable '" + name +
                           (column == nullptr ? "' not found" : "' is not categorical") +
                           " (the external file must hold the step's key variables)");
      const auto& internal_levels = context.table.require(name).info().levels;
      std::unordered_map<std::string, std::int32_t> internal_code;
      for (std::size_t l = 0; l < internal_levels.size(); ++l)
        internal_code.emplace(internal_levels[l], static_cast<std::int32_t>(l));
      std::vector<std::int32_t> translate(column->info().levels.size(), -2);
      for (std::size_t l = 0; l < translate.size(); ++l)
        if (auto it = internal_code.find(column->info().levels[l]); it != internal_code.end())
          translate[l] = it->second;
      const auto source = column->codes();
      codes[k].resize(source.size());
      for (std::size_t i = 0; i < source.size(); ++i) {
        codes[k][i] = source[i] < 0 ? source[i] : translate[static_cast<std::size_t>(source[i])];
        if (codes[k][i] == -2) keep[i] = 0;
      }
    }
    std::int64_t unmatched = 0;
    for (auto& column : codes) {
      std::size_t out = 0;
      for (std::size_t i = 0; i < column.size(); ++i)
        if (keep[i]) column[out++] = column[i];
      column.resize(out);
    }
    for (std::uint8_t k : keep) unmatched += k ? 0 : 1;
    KeyColumns external_keys;
    for (std::size_t k = 0; k < codes.size(); ++k) {
      external_keys.codes.emplace_back(codes[k]);
      external_keys.level_counts.push_back(context.keys.level_counts[k]);
    }

    distributed::DistributedMarketerRisk result =
        distributed::distributed_marketer_risk(comm, context.keys, external_keys);
    output.results = {{"external_records", external.summary.row_count},
                      {"external_records_unmatched", comm.all_reduce_sum(unmatched)},
                      {"classes", result.totals.classes},
                      {"records", result.totals.records},
                      {"invalid_records", result.totals.invalid_records},
                      {"im", result.risk.im},
                      {"cem", result.risk.cem},
                      {"orem", result.risk.orem},
                      {"arem", result.risk.arem}};
    if (result.totals.invalid_records > 0)
      output.warnings.push_back(std::to_string(result.totals.invalid_records) +
                                " records are in classes larger in the input than in the external file (f > F): "
                                "OREM leaves them out");
    VariableInfo variable;
    variable.name = kExternalCount;
    variable.type = VariableType::kContinuous;
    output.columns.push_back(Column::continuous(variable, std::move(result.record_external)));
  }

 private:
  std::optional<std::filesystem::path> external_;
};

}  // namespace

std::unique_ptr<RiskMeasure> make_marketer_measure() { return std::make_unique<MarketerMeasure>(); }

}  // namespace sdc::engine
