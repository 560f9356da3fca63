// A linear or mixed-integer program built column by column, and its hand-over to CBC. Shared by the
// partitioner's exact model (mip.cpp) and the periodic planner's (periodic_mip.cpp, which also
// solves its LP relaxation with it): one place that knows Cbc_loadProblem's column-major layout.
//
// Values only: an lp_model holds no CBC state. load() makes a Cbc_Model the caller owns
// (Cbc_deleteModel), so it can be solved in a forked child (run_bounded, exact_common.hpp).
#pragma once

#include <coin/Cbc_C_Interface.h>

#include <initializer_list>
#include <utility>
#include <vector>

namespace banyan::partitioner::detail {

struct lp_model {
  std::vector<double> lb, ub, obj;
  std::vector<char> integer;
  std::vector<std::vector<std::pair<int, double>>> cols;  // column-wise entries (row, value)
  std::vector<double> row_lb, row_ub;

  // A column with bounds [l, u] and objective coefficient c; its index.
  int col(double l, double u, double c, bool is_int) {
    lb.push_back(l);
    ub.push_back(u);
    obj.push_back(c);
    integer.push_back(is_int ? 1 : 0);
    cols.emplace_back();
    return static_cast<int>(lb.size() - 1);
  }
  // A row l <= sum entries <= u; its index.
  int row(double l, double u, std::initializer_list<std::pair<int, double>> entries) {
    const int r = static_cast<int>(row_lb.size());
    row_lb.push_back(l);
    row_ub.push_back(u);
    for (const auto& [c, v] : entries) cols[c].emplace_back(r, v);
    return r;
  }
  void entry(int r, int c, double v) { cols[c].emplace_back(r, v); }
  int columns() const { return static_cast<int>(lb.size()); }
  int rows() const { return static_cast<int>(row_lb.size()); }

  // A new CBC model holding this program, log level 0. With `relax`, no column is integer (CBC then
  // solves the LP relaxation with CLP). The caller deletes it.
  Cbc_Model* load(bool relax = false) const;
};

}  // namespace banyan::partitioner::detail
