#include "banyan/nn/backend.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <thread>
#include <vector>

namespace banyan::nn {

// An actor runs on whichever scheduler thread takes its message, not the one that made its backend:
// the backend's thread count must hold on the thread its kernels run on.
TEST(CpuBackend, ThreadCountHoldsOnTheThreadThatRunsTheKernels) {
  const int wanted = omp_get_num_procs() + 1;  // differs from the OpenMP default on any machine
  auto be = make_backend({.name = "cpu", .threads = wanted});
  ASSERT_TRUE(be) << be.error().message;
  std::vector<float> x(64, 1.0f);
  int before = 0, after = 0;
  std::thread other([&] {
    before = omp_get_max_threads();
    (*be)->scale(x.data(), 2.0f, x.size());
    after = omp_get_max_threads();
  });
  other.join();
  EXPECT_NE(before, wanted);
  EXPECT_EQ(after, wanted);
  EXPECT_EQ(x[0], 2.0f);
}

}  // namespace banyan::nn
