#pragma once
// The methods a job can run, as the commands declare them: a job step's keys are its command's
// flags, so the catalog parses them with the same CLI11 declarations as the command line.

#include <memory>

#include "engine/job_runner.h"

namespace sdc::engine {

/// The catalog of every command in the registry but `run`.
std::shared_ptr<const MethodCatalog> make_method_catalog();

}  // namespace sdc::engine
