#include "engine/risk/risk_measure.h"

namespace sdc::engine {

// One factory per measure, defined next to the measure.

std::vector<std::unique_ptr<RiskMeasure>> make_risk_measures() {
  std::vector<std::unique_ptr<RiskMeasure>> measures;
  measures.push_back(make_loglinear_measure());
  measures.push_back(make_suda2_measure());
  measures.push_back(make_bootstrap_measure());
  measures.push_back(make_nb_smoothing_measure());
  measures.push_back(make_marketer_measure());
  return measures;
}

}  // namespace sdc::engine
