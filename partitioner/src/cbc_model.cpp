// lp_model's hand-over to CBC (cbc_model.hpp).
#include "cbc_model.hpp"

namespace banyan::partitioner::detail {

Cbc_Model* lp_model::load(bool relax) const {
  std::vector<CoinBigIndex> start{0};
  std::vector<int> index;
  std::vector<double> value;
  for (const auto& c : cols) {
    for (const auto& [r, v] : c) {
      index.push_back(r);
      value.push_back(v);
    }
    start.push_back(static_cast<CoinBigIndex>(index.size()));
  }
  Cbc_Model* model = Cbc_newModel();
  Cbc_loadProblem(model, columns(), rows(), start.data(), index.data(), value.data(), lb.data(), ub.data(), obj.data(),
                  row_lb.data(), row_ub.data());
  if (!relax) {
    for (int c = 0; c < columns(); ++c) {
      if (integer[c]) Cbc_setInteger(model, c);
    }
  }
  Cbc_setLogLevel(model, 0);
  return model;
}

}  // namespace banyan::partitioner::detail
