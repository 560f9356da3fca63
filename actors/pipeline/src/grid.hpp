// A stages x microbatches array, the shape of most per-action bookkeeping.
#pragma once

#include <vector>

namespace banyan::pipeline::detail {

template <class T>
class grid {
 public:
  grid(int stages, int microbatches, T init = T{})
      : m_(microbatches), v_(static_cast<std::size_t>(stages) * microbatches, init) {}
  T& operator()(int s, int k) { return v_[static_cast<std::size_t>(s) * m_ + k]; }
  const T& operator()(int s, int k) const { return v_[static_cast<std::size_t>(s) * m_ + k]; }

 private:
  int m_;
  std::vector<T> v_;
};

}  // namespace banyan::pipeline::detail
