// The GPT tensor layout shared by the whole model (gpt.cpp) and its pipeline-stage slices
// (gpt_stage.cpp): the per-block parameter and activation tensors, in arena order, and the
// initialisation rule. A stage declares the same tensors under the same names, so it can be compared
// with, and initialised exactly like, the whole model.
#pragma once

#include <cmath>
#include <string>

namespace banyan::nn::detail {

// Parameter tensors of one block, in arena order (after wte, wpe in the whole model).
enum block_param { LN1W, LN1B, QKVW, QKVB, PROJW, PROJB, LN2W, LN2B, FCW, FCB, FCPROJW, FCPROJB, NBP };
// Activation tensors of one block, in arena order.
enum block_act {
  LN1,
  LN1_MEAN,
  LN1_RSTD,
  QKV,
  PREATT,
  ATT,
  ATTY,
  ATTPROJ,
  RES2,
  LN2,
  LN2_MEAN,
  LN2_RSTD,
  FCH,
  FCH_GELU,
  FCPROJ,
  RES3,
  NBA
};
// Activation tensors after the last block, in arena order.
enum final_act { LNF, LNF_MEAN, LNF_RSTD, LOGITS, PROBS, LOSSES };

// The parameter names of block l's tensors, in block_param order ("h3.qkv_w").
inline std::string block_param_name(int l, int k) {
  static const char* const names[NBP] = {"ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w",   "proj_b",
                                         "ln2_w", "ln2_b", "fc_w",  "fc_b",  "fcproj_w", "fcproj_b"};
  return "h" + std::to_string(l) + "." + names[k];
}

// GPT-2 initialisation of the tensor `name` of a model with `num_layers` blocks: biases 0 (no random
// draws), layernorm weights 1 (none), weights N(0, std) with the returned std, one draw per element
// in arena order: residual projections (proj_w, fcproj_w) 0.02/sqrt(2L), the rest 0.02.
struct init_rule {
  enum kind_t { zeros, ones, normal } kind;
  float std = 0.0f;
};
inline init_rule init_rule_for(const std::string& n, int num_layers) {
  const bool is_bias = n.size() >= 2 && n.compare(n.size() - 2, 2, "_b") == 0;
  if (is_bias) return {init_rule::zeros};
  if (n.find("ln") != std::string::npos) return {init_rule::ones};
  const bool resid = n.find("proj_w") != std::string::npos;
  return {init_rule::normal, resid ? 0.02f / std::sqrt(2.0f * static_cast<float>(num_layers)) : 0.02f};
}

}  // namespace banyan::nn::detail
