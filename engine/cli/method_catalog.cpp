#include "engine/cli/method_catalog.h"

#include <sstream>

#include "engine/cli/command.h"
#include "engine/flags.h"

namespace sdc::engine {
namespace {

/// A fresh command tree: CLI11 binds flags to the command objects, so every parse needs new ones.
struct CommandTree {
  CLI::App root{"sdc", "sdc"};
  std::vector<std::unique_ptr<Command>> commands;
  std::vector<std::pair<CLI::App*, Command*>> subcommands;

  CommandTree() {
    commands = make_commands();
    for (auto& command : commands) subcommands.emplace_back(command->add_to(root), command.get());
  }

  /// The app of a method ("risk", "generate census") and the command that owns it; none for `run`
  /// (a job does not run jobs) and for a word that names no method.
  std::pair<CLI::App*, Command*> find(const std::string& method) {
    std::istringstream words(method);
    std::string word;
    CLI::App* app = &root;
    Command* owner = nullptr;
    while (words >> word) {
      CLI::App* next = nullptr;
      try {
        next = app->get_subcommand(word);
      } catch (const CLI::OptionNotFound&) {
        return {nullptr, nullptr};
      }
      if (owner == nullptr) {
        for (auto& [sub, command] : subcommands)
          if (sub == next) owner = command;
      }
      app = next;
    }
    if (app == &root || app->get_subcommands({}).size() > 0 || method == "run") return {nullptr, nullptr};
    return {app, owner};
  }
};

class CommandCatalog final : public MethodCatalog {
 public:
  bool knows(const std::string& method) const override { return tree_.find(method).first != nullptr; }

  std::string methods() const override {
    std::string out;
    for (const auto& [sub, command] : tree_.subcommands) {
      if (sub->get_name() == "run") continue;
      const auto children = sub->get_subcommands({});
      if (children.empty()) {
        out += (out.empty() ? "" : ", ") + sub->get_name();
      } else {
        for (const auto* child : children) out += (out.empty() ? "" : ", ") + sub->get_name() + " " + child->get_name();
      }
    }
    return out;
  }

  FlagKind flag(const std::string& method, const std::string& key) const override {
    CLI::App* app = tree_.find(method).first;
    const CLI::Option* option = app == nullptr ? nullptr : app->get_option_no_throw("--" + key);
    if (option == nullptr) return FlagKind::kUnknown;
    if (is_repeatable_list_option(*option)) return FlagKind::kRepeatedList;
    return option->get_expected_max() == 0 ? FlagKind::kSwitch : FlagKind::kValue;
  }

  std::string flags(const std::string& method) const override {
    CLI::App* app = tree_.find(method).first;
    std::string out;
    if (app == nullptr) return out;
    for (const CLI::Option* option : app->get_options()) {
      if (option->get_lnames().empty() || option->get_lnames().front() == "help") continue;
      out += (out.empty() ? "" : ", ") + option->get_lnames().front();
    }
    return out;
  }

  ParsedStep parse(const std::string& method, const std::vector<std::string>& argv) const override {
    auto tree = std::make_shared<CommandTree>();
    ParsedStep parsed;
    auto [app, command] = tree->find(method);
    std::vector<std::string> args{"sdc"};
    args.insert(args.end(), argv.begin(), argv.end());
    std::vector<char*> c_args;
    for (auto& arg : args) c_args.push_back(arg.data());
    try {
      tree->root.parse(static_cast<int>(c_args.size()), c_args.data());
    } catch (const CLI::ParseError& e) {
      parsed.error = e.what();
      parsed.bad_value = dynamic_cast<const CLI::ValidationError*>(&e) != nullptr ||
                         dynamic_cast<const CLI::ConversionError*>(&e) != nullptr ||
                         dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr;
      parsed.missing_flag = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
      return parsed;
    }
    if (command == nullptr) {
      parsed.error = "unknown method '" + method + "'";
      return parsed;
    }
    parsed.repeated = repeated_list_items(tree->root);
    parsed.paths = command->path_uses();
    parsed.step = &command->step();
    parsed.owner = std::move(tree);
    return parsed;
  }

 private:
  // Declarations only: every parse uses a tree of its own.
  mutable CommandTree tree_;
};

}  // namespace

std::shared_ptr<const MethodCatalog> make_method_catalog() { return std::make_shared<CommandCatalog>(); }

}  // namespace sdc::engine
