// `sdc anonymize`: the flags of the anonymize step (engine/recoding/anonymize_step.h, docs/recoding.md).

#include "engine/cli/commands.h"
#include "engine/recoding/anonymize_step.h"
#include "engine/recoding/hierarchy_keys.h"

namespace sdc::engine {
namespace {

class AnonymizeCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "anonymize",
        "k-anonymity by full-domain generalisation: the recoding of the keys along their hierarchies with the least "
        "information loss whose classes below k hold at most the suppression limit, then those records suppressed "
        "(ARX's model; docs/recoding.md)");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--keys", options_.keys,
                             "key variables (quasi-identifiers), categorical or continuous, each with a hierarchy")
        ->required();
    app->add_option("--hierarchies", options_.hierarchies,
                    "a directory of hierarchy files, one <prefix>_<VAR>.csv (or <VAR>.csv) per key: one row per value, "
                    "one column per level (docs/recoding.md)")
        ->type_name("DIR");
    app->add_option("--hierarchy", options_.hierarchy,
                    "VAR=FILE: a key's hierarchy file, instead of the one in --hierarchies")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("VAR=FILE[,VAR=FILE...]");
    paths_.declare("--hierarchy", io::PathAccess::kRead, [this] {
      return declared_hierarchy_files(options_.keys, options_.hierarchies, options_.hierarchy);
    });
    app->add_option("--k-anonymity", options_.k, "k: the smallest class of records sharing their keys (default 2)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("K");
    app->add_option("--max-suppression-percent", options_.max_suppression_percent,
                    "the records that may stay in classes below k and be suppressed, in percent of all (0 to 100; "
                    "default 0)")
        ->check(CLI::Range(0.0, 100.0))
        ->type_name("PCT");
    app->add_option("--metric", options_.metric,
                    "the information loss to minimise: loss (Iyengar's, mean over keys; default), entropy "
                    "(non-uniform), discernibility, precision or suppressed (records)")
        ->type_name("METRIC");
    app->add_option("--suppression", options_.suppression,
                    "records: every key of a record below k set missing (ARX; default); cells: single values, by the "
                    "local suppression of `sdc suppress`")
        ->transform(
            CLI::CheckedTransformer(std::map<std::string, OutlierSuppression>{{"records", OutlierSuppression::kRecords},
                                                                              {"cells", OutlierSuppression::kCells}},
                                    CLI::ignore_case))
        ->type_name("records|cells");
    add_filters_option(*app, options_.filters);
    add_resume_flag(*app, paths_, options_.output, options_.resume, false);
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<AnonymizeStep> step_ = make_anonymize_step();
  AnonymizeStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_anonymize_command() { return std::make_unique<AnonymizeCommand>(); }

}  // namespace sdc::engine
