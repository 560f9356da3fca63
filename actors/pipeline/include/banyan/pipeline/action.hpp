// The action table: what every rank of a pipeline does, in order. It is the one format shared by the
// DSL compiler, the CSV reader, the validator, the simulator, the search and (later) the executor:
// an executor walks ranks[r] front to back, running each action once its inputs are there.
//
// Vocabulary: a *stage* is one contiguous slice of the model (stages 0..S-1, forward goes up);
// a *rank* is one device that runs one or more stages (its *chunks*); stage_rank maps stage -> rank.
// Kinds: F forward, B full backward, I backward-input (activation grad), W backward-weight.
// Lowered communication uses torch.distributed.pipelining's names: SEND_F/RECV_F carry activations
// from stage s to s+1 (RECV_F is named by the receiving stage), SEND_B/RECV_B carry gradients from
// stage s to s-1 (RECV_B is named by the receiving stage). `peer` is the other rank, or -1 for compute.
#pragma once

#include <banyan/pipeline/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::pipeline {

enum class kind : std::uint8_t { F, B, I, W, send_f, recv_f, send_b, recv_b };

constexpr bool is_compute(kind k) { return k == kind::F || k == kind::B || k == kind::I || k == kind::W; }
constexpr bool is_backward(kind k) { return k == kind::B || k == kind::I; }
std::string_view kind_name(kind k);  // "F", "B", "I", "W", "SEND_F", ...

struct action {
  int stage = 0;
  int microbatch = 0;
  kind op = kind::F;
  int peer = -1;
  friend bool operator==(const action&, const action&) = default;
};

// "2F0" for stage 2, forward, microbatch 0; "1SEND_F3"; the peer is not part of the text.
std::string to_string(const action& a);
// Parses the text form above (surrounding blanks allowed). The error names `text`.
result<action> parse_action(std::string_view text);

struct table {
  int stages = 0;                          // S
  int microbatches = 0;                    // m
  std::vector<int> stage_rank;             // size S
  std::vector<std::vector<action>> ranks;  // ranks[r] = ordered actions of rank r
  int num_ranks() const { return static_cast<int>(ranks.size()); }
  bool has_comms() const;
  friend bool operator==(const table&, const table&) = default;
};

// Fills stages, microbatches and stage_rank from the compute actions (a stage must live on one rank).
// Used for tables read from CSV, which carry no placement. Errors name the rank and step.
result<table> infer_shape(std::vector<std::vector<action>> ranks);

// A human-readable grid, one line per rank ("rank 0: 0F0 0F1 0B0 ..."), for `banyan pipeline show`.
std::string format_table(const table& t);

}  // namespace banyan::pipeline
