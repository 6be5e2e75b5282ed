// Placeholder: replaced by the real command.
#include "engine/cli/commands.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {
class Placeholder final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override { return parent.add_subcommand("import", "not yet implemented"); }
  void run(const RunContext&) override { throw InternalError("import is not implemented yet"); }
};
}  // namespace
std::unique_ptr<Command> make_import_command() { return std::make_unique<Placeholder>(); }
}  // namespace sdc::engine
