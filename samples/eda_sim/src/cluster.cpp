#include <banyan/eda_sim/cluster.hpp>

#include <algorithm>
#include <cassert>
#include <numeric>
#include <tuple>

namespace banyan::eda {

merged_leaf merge_leaves(const design& d, const std::vector<int>& leaves) {
  merged_leaf out;
  out.slot_of.resize(d.leaves.size());
  std::vector<char> in_set(d.leaves.size(), 0);
  std::vector<std::size_t> base(d.leaves.size(), 0);
  std::size_t total = 0;
  for (int l : leaves) in_set[l] = 1, base[l] = total, total += d.leaves[l].slots;

  // Slots that hold the same value share one merged slot: the constants of every leaf, a net's
  // driver slot and its readers' slots inside the set, and the readers' slots of a net driven outside.
  std::vector<std::size_t> parent(total);
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto unite = [&](std::size_t a, std::size_t b) {
    a = find(a), b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the smallest index represents
  };
  for (int l : leaves)
    for (std::size_t c = 0; c < 3; ++c) unite(base[leaves[0]] + c, base[l] + c);
  for (std::size_t gi = 0; gi < d.groups.size(); ++gi) {
    const group& g = d.groups[gi];
    const bool driver_in = in_set[g.driver];
    std::size_t first_reader = g.readers.size();
    bool reader_out = false;
    for (std::size_t r = 0; r < g.readers.size(); ++r) {
      if (!in_set[g.readers[r]]) {
        reader_out = true;
        continue;
      }
      if (first_reader == g.readers.size()) first_reader = r;
      for (std::size_t i = 0; i < g.driver_slots.size(); ++i) {
        const std::size_t mine = base[g.readers[r]] + g.reader_slots[r][i];
        if (driver_in) unite(base[g.driver] + g.driver_slots[i], mine);
        else unite(base[g.readers[first_reader]] + g.reader_slots[first_reader][i], mine);
      }
    }
    if (!driver_in && first_reader < g.readers.size()) out.spec.in_groups.push_back(static_cast<int>(gi));
    if (driver_in && reader_out) out.spec.out_groups.push_back(static_cast<int>(gi));
  }
  std::vector<std::uint32_t> number(total, UINT32_MAX);
  std::uint32_t slots = 0;
  for (std::size_t i = 0; i < total; ++i)
    if (find(i) == i) number[i] = slots++;
  for (std::size_t i = 0; i < total; ++i) number[i] = number[find(i)];
  assert(slots >= 3 && number[0] == 0 && number[1] == 1 && number[2] == 2);

  leaf& m = out.spec;
  m.path = d.leaves[leaves[0]].path;
  m.instance = d.leaves[leaves[0]].instance;
  m.slots = slots;
  std::vector<op> ops;
  for (int l : leaves) {
    const leaf& src = d.leaves[l];
    auto& map = out.slot_of[l];
    map.resize(src.slots);
    for (std::uint32_t s = 0; s < src.slots; ++s) map[s] = number[base[l] + s];
    auto remap = [&](std::vector<std::uint32_t> v) {
      for (auto& s : v) s = map[s];
      return v;
    };
    const auto mem0 = static_cast<std::uint32_t>(m.memories.size());
    for (const memory& mem : src.memories) {
      memory c = mem;
      c.content = map[mem.content];
      for (auto& rp : c.reads) rp.addr = remap(rp.addr), rp.data = remap(rp.data);
      for (auto& wp : c.writes) wp.addr = remap(wp.addr), wp.data = remap(wp.data), wp.en = remap(wp.en);
      m.memories.push_back(std::move(c));
    }
    for (op o : src.program) {
      o.y = map[o.y];
      if (o.code == opcode::memrd) o.a += mem0;
      else o.a = map[o.a], o.b = map[o.b], o.s = map[o.s];
      ops.push_back(o);
    }
    for (flip_flop f : src.flops) {
      f.d = map[f.d], f.state = map[f.state];
      for (auto& t : f.async) t.ctrl = map[t.ctrl], t.value = map[t.value];
      m.flops.push_back(std::move(f));
    }
    m.cells += src.cells;
  }

  // Levelise the merged ops (Kahn over producers); within a level by opcode, then by position, so a
  // memory port's bit ops stay consecutive with bit 0 first (leaf_engine reads the address there).
  std::vector<int> producer(slots, -1);
  for (std::size_t i = 0; i < ops.size(); ++i) producer[ops[i].y] = static_cast<int>(i);
  std::vector<int> indeg(ops.size(), 0), depth(ops.size(), 0), order;
  std::vector<std::vector<int>> readers(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i)
    for_each_input(m, ops[i], [&](std::uint32_t s) {
      if (producer[s] >= 0) ++indeg[i], readers[producer[s]].push_back(static_cast<int>(i));
    });
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!indeg[i]) order.push_back(static_cast<int>(i));
  for (std::size_t h = 0; h < order.size(); ++h)
    for (int r : readers[order[h]]) {
      depth[r] = std::max(depth[r], depth[order[h]] + 1);
      if (--indeg[r] == 0) order.push_back(r);
    }
  assert(order.size() == ops.size() && "elaboration rejects combinational loops");
  std::sort(order.begin(), order.end(),
            [&](int x, int y) { return std::tuple(depth[x], ops[x].code, x) < std::tuple(depth[y], ops[y].code, y); });
  m.program.reserve(ops.size());
  for (int i : order) m.program.push_back(ops[i]);
  return out;
}

}  // namespace banyan::eda
