#include <banyan/eda_sim/vcd.hpp>

#include <functional>
#include <set>

namespace banyan::eda {
namespace {

std::string make_id(std::size_t n) {
  std::string id;
  do {
    id += static_cast<char>('!' + n % 94);
    n /= 94;
  } while (n);
  return id;
}

// A VCD reference name: no whitespace, and no absolute source paths. yosys names a function's or
// task's locals `fn$func$/abs/path/file.v:12$3.t`; the folder part is dropped (`fn$func$file.v:12$3.t`)
// so waveforms do not depend on where the sources were.
std::string vcd_name(std::string s) {
  for (std::size_t at = s.find("$func$"); at != std::string::npos; at = s.find("$func$", at + 1)) {
    const std::size_t from = at + 6, colon = s.find(':', from);
    if (colon == std::string::npos) break;
    const std::size_t slash = s.rfind('/', colon);
    if (slash != std::string::npos && slash >= from) s.erase(from, slash + 1 - from);
  }
  for (char& c : s)
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 127) c = '_';
  return s;
}

}  // namespace

result<std::unique_ptr<vcd_writer>> vcd_writer::open(const std::string& path, const design& d) {
  std::unique_ptr<vcd_writer> w(new vcd_writer);
  w->out_.open(path);
  if (!w->out_) return error{errc::io, path + ": cannot write the VCD file"};
  auto& o = w->out_;
  o << "$version banyan eda_sim $end\n$timescale 1ns $end\n";
  std::size_t next = 0;
  std::vector<std::vector<const probe*>> by_inst(d.instances.size());
  for (const auto& p : d.probes) by_inst[p.instance].push_back(&p);
  if (!d.clock.empty()) w->clock_id_ = make_id(next++);
  std::function<void(int)> scope = [&](int inst) {
    const auto& in = d.instances[inst];
    o << "$scope module " << vcd_name(in.path.substr(in.path.rfind('/') + 1)) << " $end\n";
    std::set<std::string> names;  // one variable per name in a scope
    auto unique = [&](std::string n) {
      for (int k = 2; !names.insert(n).second; ++k) n = vcd_name(n) + "_" + std::to_string(k);
      return n;
    };
    if (inst == 0 && !d.clock.empty())
      o << "$var wire 1 " << w->clock_id_ << " " << unique(vcd_name(d.clock)) << " $end\n";
    for (const probe* p : by_inst[inst]) {
      // The clock net under its own name in an instance is the clock's variable again (same id);
      // in the top scope it is the clock variable itself.
      if (p->bits.size() == 1 && p->bits[0].leaf == probe::clock_leaf) {
        if (inst != 0 || p->name != d.clock)
          o << "$var wire 1 " << w->clock_id_ << " " << unique(vcd_name(p->name)) << " $end\n";
        continue;
      }
      signal s{make_id(next++), p->bits, {}};
      o << "$var wire " << p->bits.size() << " " << s.id << " " << unique(vcd_name(p->name));
      if (p->bits.size() > 1) o << " [" << p->bits.size() - 1 << ":0]";
      o << " $end\n";
      w->signals_.push_back(std::move(s));
    }
    for (int ch : in.children) scope(ch);
    o << "$upscope $end\n";
  };
  scope(0);
  o << "$enddefinitions $end\n";
  return w;
}

void vcd_writer::sample(std::uint64_t cycle, const simulator& sim) {
  out_ << "#" << cycle * 10 << "\n";
  if (!clock_id_.empty()) out_ << "0" << clock_id_ << "\n";
  out_ << "#" << cycle * 10 + 1 << "\n";
  for (auto& s : signals_) {
    std::string v(s.bits.size(), 'x');
    for (std::size_t i = 0; i < s.bits.size(); ++i) {
      // A clock bit inside a wider net: the clock is low while values settle.
      const int b = s.bits[i].leaf == probe::clock_leaf ? 0 : sim.value(s.bits[i].leaf, s.bits[i].slot).get(0);
      v[s.bits.size() - 1 - i] = b == 2 ? 'x' : static_cast<char>('0' + b);
    }
    if (v == s.last) continue;
    s.last = v;
    if (v.size() == 1) out_ << v << s.id << "\n";
    else out_ << "b" << v << " " << s.id << "\n";
  }
  if (!clock_id_.empty()) out_ << "#" << cycle * 10 + 5 << "\n1" << clock_id_ << "\n";
}

void vcd_writer::finish(std::uint64_t cycles) {
  out_ << "#" << cycles * 10 << "\n";
  if (!clock_id_.empty()) out_ << "0" << clock_id_ << "\n";
  out_.flush();
}

}  // namespace banyan::eda
