#include "engine/step.h"

namespace sdc::engine {

std::string_view to_string(OutputKind kind) {
  switch (kind) {
    case OutputKind::kData:
      return "data";
    case OutputKind::kTable:
      return "table";
    case OutputKind::kMatrix:
      return "matrix";
    case OutputKind::kPlot:
      return "plot";
    case OutputKind::kCsv:
      return "csv";
    case OutputKind::kSchema:
      return "schema";
    case OutputKind::kSeed:
      return "seed";
    case OutputKind::kCheckpoint:
      return "checkpoint";
  }
  return "data";
}

}  // namespace sdc::engine
