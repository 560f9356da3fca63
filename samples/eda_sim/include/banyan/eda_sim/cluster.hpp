// Several leaves of a design merged into one leaf, so that the leaves one process hosts evaluate as
// one program (the component version's `--grain node`): a boundary net whose driver and readers are
// all in the set becomes one slot (no message), a net entering the set from outside is one slot for
// all its readers inside, and only groups crossing the set's border remain.
//
// The merged leaf is an ordinary `leaf` (design.hpp): its program levelised over every merged op (an
// op of one leaf may now read another's output in the same pass), its flip-flops and memories those
// of the merged leaves in order. leaf_engine runs it unchanged. Pure function of the design; cost
// linear in the merged leaves' ops and slots plus a sort.
#pragma once

#include <banyan/eda_sim/design.hpp>

#include <cstdint>
#include <vector>

namespace banyan::eda {

struct merged_leaf {
  leaf spec;  // in_groups: groups driven outside the set that a leaf of the set reads; out_groups:
              // groups driven inside the set that a leaf outside it reads (design order)
  // Per design leaf, per slot of that leaf: its slot in `spec` (empty for leaves not in the set).
  std::vector<std::vector<std::uint32_t>> slot_of;
  std::uint32_t at(int leaf, std::uint32_t s) const { return slot_of[leaf][s]; }
};

// `leaves`: distinct design leaf indices (the io leaf may be one of them), in any order.
merged_leaf merge_leaves(const design& d, const std::vector<int>& leaves);

}  // namespace banyan::eda
