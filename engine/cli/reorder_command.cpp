// `sdc reorder`: the flags of the block-angular reordering step (engine/tables/reorder_step.h,
// docs/tables.md).

#include "engine/cli/commands.h"
#include "engine/tables/reorder_step.h"

namespace sdc::engine {
namespace {

class ReorderCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "reorder",
        "a sparse matrix (a table's additivity equations in Matrix Market form) reordered into block-angular form: "
        "k diagonal blocks and the linking columns (dual) or rows (primal) last, by multilevel hypergraph "
        "bisection (docs/tables.md)");
    add_input_option(*app, paths_, options_.input);
    app->get_option("--input")->type_name("FILE.mtx");
    app->add_option("--output,-o", options_.output,
                    "the ordering as CSV: kind (row or column), position, original index (1-based) and block "
                    "(1-based, or linking), rows first (written under a temporary name, renamed when complete)")
        ->required()
        ->type_name("FILE.csv");
    paths_.writes("--output", options_.output);
    add_report_option(*app, paths_, options_.report);
    app->add_option("--svg", options_.svg, "the sparsity pattern before and after, with the blocks drawn")
        ->type_name("FILE.svg");
    paths_.writes("--svg", options_.svg);
    app->add_option("--permuted", options_.permuted, "the reordered matrix in Matrix Market form")
        ->type_name("FILE.mtx");
    paths_.writes("--permuted", options_.permuted);
    app->add_option("--blocks,-k", options_.blocks, "the number of diagonal blocks, at least 2 (default 2)")
        ->check(whole_number_in(2, kMaxCount))
        ->type_name("K");
    app->add_option("--form", options_.form,
                    "dual (rows in blocks, linking columns; the default) or primal (columns in blocks, linking rows)")
        ->check(CLI::IsMember({"dual", "primal"}))
        ->type_name("dual|primal");
    app->add_option("--algorithm", options_.algorithm,
                    "multilevel (coarsen, bisect, refine while uncoarsening; the default) or single-level "
                    "(Kernighan-Lin on the matrix itself)")
        ->check(CLI::IsMember({"multilevel", "single-level"}))
        ->type_name("ALGORITHM");
    app->add_option("--imbalance", options_.imbalance,
                    "the most a block may exceed the mean block size, as a fraction in (0, 1) (default 0.05)")
        ->type_name("EPS");
    app->add_option("--partition-seed", options_.partition_seed,
                    "the seed of the random matching orders and initial bisections (default 1); the ordering "
                    "depends on it and never on the thread count")
        ->check(whole_number_in(0, kMaxCount))
        ->type_name("N");
    app->add_option("--initial-partitions", options_.initial_partitions,
                    "initial bisections tried at the coarsest level, the best kept (default 4)")
        ->check(whole_number_in(1, 1024))
        ->type_name("N");
    app->add_option("--cycles", options_.cycles,
                    "independent multilevel bisections (each coarsened with its own matching), the best kept; "
                    "0, the default, runs 1 for the dual form and 4 for the primal")
        ->check(whole_number_in(0, 64))
        ->type_name("N");
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<ReorderStep> step_ = make_reorder_step();
  ReorderStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_reorder_command() { return std::make_unique<ReorderCommand>(); }

}  // namespace sdc::engine
