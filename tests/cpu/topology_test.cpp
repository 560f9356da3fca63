// Topology discovery and worker placement: synthetic machines (hwloc's syntax) for the shapes this
// 2-core machine lacks, the real one for binding.
#include "banyan/cpu/topology.hpp"

#include <gtest/gtest.h>

namespace banyan::cpu {
namespace {

TEST(Topology, SyntheticMachineCountsEveryLevel) {
  auto t = topology::synthetic("pack:2 numa:1 core:2 pu:2");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->packages(), 2);
  EXPECT_EQ(t->numa_domains(), 2);
  EXPECT_EQ(t->cores(), 4);
  EXPECT_EQ(t->pus(), 8);
  EXPECT_FALSE(t->this_system());
  EXPECT_EQ(t->summary(), "2 packages, 2 NUMA domains, 4 cores, 8 PUs");
  EXPECT_EQ(t->core_list()[2].numa, 1);
  EXPECT_EQ(t->core_list()[2].package, 1);
}

TEST(Topology, BadSyntheticDescriptionIsAnErrorNamingIt) {
  auto t = topology::synthetic("cores:banana");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("`cores:banana`"), std::string::npos) << t.error().message;
}

TEST(Topology, PerCoreGroupsWorkersByNumaDomain) {
  auto t = topology::synthetic("pack:1 numa:2 core:3 pu:2");
  ASSERT_TRUE(t);
  auto p = place(*t, {worker_request::kind::per_core, 0});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->size(), 6);
  ASSERT_EQ(p->domains.size(), 2u);
  EXPECT_EQ(p->domains[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p->domains[1], (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(p->workers[4].numa, 1);
  EXPECT_EQ(p->workers[4].pus.size(), 2u);  // bound to the whole core
  EXPECT_FALSE(p->oversubscribed);
  EXPECT_EQ(p->describe().substr(0, 32), "numa0 {w0 core0 [PUs 0,1], w1 co");
}

TEST(Topology, PerPuPlacesOneWorkerPerHardwareThread) {
  auto t = topology::synthetic("pack:1 numa:2 core:3 pu:2");
  ASSERT_TRUE(t);
  auto p = place(*t, {worker_request::kind::per_pu, 0});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->size(), 12);
  EXPECT_EQ(p->workers[1].pus, (std::vector<int>{1}));
  EXPECT_EQ(p->workers[1].core, 0);
}

TEST(Topology, CountFillsOneDomainFirstAndMayOversubscribe) {
  auto t = topology::synthetic("pack:1 numa:2 core:2 pu:1");
  ASSERT_TRUE(t);
  auto three = place(*t, {worker_request::kind::count, 3});
  ASSERT_TRUE(three);
  EXPECT_EQ(three->domains, (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_FALSE(three->oversubscribed);
  auto six = place(*t, {worker_request::kind::count, 6});
  ASSERT_TRUE(six);
  EXPECT_TRUE(six->oversubscribed);
  EXPECT_EQ(six->domains, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5}}));
}

TEST(Topology, WorkerRequestParsesAndNamesBadInput) {
  EXPECT_EQ(worker_request::parse("per-core")->what, worker_request::kind::per_core);
  EXPECT_EQ(worker_request::parse("per-pu")->what, worker_request::kind::per_pu);
  EXPECT_EQ(worker_request::parse("4")->count, 4);
  for (const char* bad : {"0", "-2", "four", "3x", ""}) {
    auto r = worker_request::parse(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(std::string("--workers `") + bad + "`"), std::string::npos) << r.error().message;
  }
}

TEST(Topology, ThisMachineBindsAThreadToItsFirstCore) {
  auto t = topology::discover();
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->this_system());
  ASSERT_GE(t->cores(), 1);
  EXPECT_TRUE(t->bind_current_thread(t->core_list()[0].pus)) << "binding to core 0";
  // Unbind again: later tests in this process should not all run on core 0.
  std::vector<int> all;
  for (const auto& c : t->core_list()) all.insert(all.end(), c.pus.begin(), c.pus.end());
  EXPECT_TRUE(t->bind_current_thread(all));
}

TEST(Topology, ASyntheticMachineCannotBind) {
  auto t = topology::synthetic("pack:1 core:2 pu:1");
  ASSERT_TRUE(t);
  auto b = t->bind_current_thread({0});
  ASSERT_FALSE(b);
  EXPECT_TRUE(b.error().code == errc::unsupported) << b.error().message;
}

}  // namespace
}  // namespace banyan::cpu
