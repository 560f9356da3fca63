// Seeded generators of the instance families the partitioner's quality is judged on:
// tree shapes other than gen-tree's, traffic and load distributions, tight and loose capacity,
// unequal nodes, link-cost matrices and shuffled component order. Used by partition_bench's sweep
// (docs/benchmarks.md) and by the quality tests, so both judge the same instances.
//
// Same options, same problem, on any machine (own PRNG). Every instance passes make_problem; it may
// still have no mapping within capacity (bin packing under slack 1.02): the exact solvers say so.
#pragma once

#include "banyan/partitioner/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace banyan::partitioner {

enum class family_shape { chain, chain_branches, star, caterpillar, binary, heavy_subtree, gen_tree };
enum class family_traffic { uniform, pareto, spiky };
enum class family_links { uniform, rack, irregular };

struct family_options {
  family_shape shape = family_shape::binary;
  std::size_t components = 20;  // star: 1 + this - 1 children
  family_traffic traffic = family_traffic::uniform;
  // Loads: integers 1..10 when 1, otherwise lognormal(0, 0.5) x load_scale (1e-3, 1e-6, 1e-12).
  double load_scale = 1;
  double slack = 1.25;   // total capacity / total load
  bool unequal = false;  // node capacities ~ uniform(0.5, 1.5), rescaled to the slack
  std::size_t nodes = 4;
  family_links links = family_links::uniform;  // rack: pairs of nodes, 1 within, 4 across;
                                               // irregular: symmetric integers 1..9
  bool shuffled = false;                       // a random top-down numbering instead of breadth-first
  std::uint64_t seed = 1;
};

const char* to_string(family_shape s);
const char* to_string(family_traffic t);
const char* to_string(family_links l);
std::vector<family_shape> all_family_shapes();  // gen_tree last

// Every other dimension drawn at random from the values (traffic; load scale 1, 1e-3, 1e-6,
// 1e-12; slack 1.02, 1.1, 1.25, 1.5; equal or unequal; k from `ks`; links; order), seeded by `seed`.
family_options random_family(std::uint64_t seed, family_shape shape, std::size_t components,
                             const std::vector<std::size_t>& ks = {2, 3, 4, 8});

// The instance; an error only where make_problem rejects it (never for the options above with
// components >= 2, as capacities are at least the heaviest component).
result<problem> generate_family(const family_options& o);

// One line naming every option, e.g. "binary n=20 pareto load=1e-06 slack=1.02 k=4 unequal rack
// shuffled seed=7", for reports and failing tests.
std::string describe(const family_options& o);

}  // namespace banyan::partitioner
