// planToJson / writePlan (Plan.h): a Plan in memory -> plan.json, through the schema tables that
// parsePlan reads (PlanSchema.cpp), so the two directions cannot drift apart.
#include "runtime/io/FileKind.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/PlanSchema.h"
#include "runtime/plan/ScheduleJson.h"
#include "runtime/version/Version.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace disagmoe {
namespace {

using json = nlohmann::json;
using namespace schema;

bool layered(ComponentKind kind) {
  return kind != ComponentKind::Embedding && kind != ComponentKind::Head;
}

json componentJson(const ModelSpec &m, const Component &c) {
  json o;
  o["kind"] = kComponentKinds[static_cast<int>(c.kind)];
  if (layered(c.kind))
    o["layer"] = c.layer;
  writeFields(componentFields(), c, o);
  for (const WeightRef &ref : componentWeightRefs())
    if (ref.kind == c.kind && c.*ref.member >= 0)
      o[ref.key] = m.weights[static_cast<size_t>(c.*ref.member)].name;
  if (c.kind == ComponentKind::Experts) {
    json list = json::array();
    for (const ExpertWeights &ew : c.experts) {
      json x{{"expert", ew.expert}};
      for (const ExpertWeightRef &ref : expertWeightRefs())
        if (ew.*ref.member >= 0)
          x[ref.key] = m.weights[static_cast<size_t>(ew.*ref.member)].name;
      list.push_back(std::move(x));
    }
    o["experts"] = std::move(list);
  }
  return o;
}

// The informational summary of `model` (docs/plan-format.md, "Reported hyper-parameters"),
// derived from the components so that it cannot contradict them. Where layers differ the last
// component's value is reported, as the per-component fields are what the runtime reads.
void writeSummary(const ModelSpec &m, json &out) {
  json denseLayers = json::array(), slidingLayers = json::array();
  bool qkNorm = false, sinks = false, attnBias = false, routerBias = false, expertBias = false;
  for (const Component &c : m.components) {
    switch (c.kind) {
    case ComponentKind::Attention:
      qkNorm |= c.qNorm >= 0;
      sinks |= c.sinks >= 0;
      attnBias |= c.bq >= 0;
      if (c.slidingWindow > 0) {
        out["sliding_window"] = c.slidingWindow;
        slidingLayers.push_back(c.layer);
      }
      break;
    case ComponentKind::Router:
      routerBias |= c.bias >= 0;
      if (c.routedScalingFactor)
        out["routed_scaling_factor"] = *c.routedScalingFactor;
      break;
    case ComponentKind::Experts:
      if (c.activation != ExpertActivation::Swiglu)
        out["expert_activation"] = kActivations[static_cast<int>(c.activation)];
      if (c.activation == ExpertActivation::SwigluOai) {
        out["swiglu_limit"] = c.swigluLimit;
        out["swiglu_alpha"] = c.swigluAlpha;
      }
      for (const ExpertWeights &ew : c.experts)
        expertBias |= ew.b1 >= 0 || ew.b2 >= 0;
      break;
    case ComponentKind::DenseFfn:
      if (c.denseRole == DenseFfnRole::Dense) {
        denseLayers.push_back(c.layer);
        out["dense_hidden"] = c.ffnHidden;
      } else {
        out["shared_expert_hidden"] = c.ffnHidden;
      }
      break;
    default:
      break;
    }
  }
  out["dense_layers"] = std::move(denseLayers);
  if (!slidingLayers.empty())
    out["sliding_window_layers"] = std::move(slidingLayers);
  out["qk_norm"] = qkNorm;
  out["attention_sinks"] = sinks;
  out["attention_bias"] = attnBias;
  if (routerBias)
    out["router_bias"] = true;
  if (expertBias)
    out["expert_bias"] = true;
  if (m.kvLoraRank > 0)
    out["attention_type"] = "mla";
  // top-k on the logits then softmax always sums to 1: no renormalisation to report.
  if (m.routerScoring != RouterScoring::TopkSoftmax)
    out["norm_topk_prob"] = m.routerScoring == RouterScoring::SoftmaxTopkRenorm ||
                            m.routerScoring == RouterScoring::SigmoidGroupTopkRenorm;
}

json modelJson(const ModelSpec &m) {
  json out;
  writeFields(modelFields(), m, out);
  writeSummary(m, out);
  json components = json::array();
  for (const Component &c : m.components)
    components.push_back(componentJson(m, c));
  out["components"] = std::move(components);
  json weights = json::array();
  for (const WeightSpec &w : m.weights) {
    json o;
    writeFields(weightFields(), w, o);
    o["ranks"] = w.ranks;
    weights.push_back(std::move(o));
  }
  out["weights"] = std::move(weights);
  return out;
}

json placementJson(const Placement &p) {
  json groups = json::array();
  for (const Group &g : p.groups)
    groups.push_back(json{{"role", kGroupRoles[static_cast<int>(g.role)]},
                          {"index", g.index},
                          {"ranks", g.ranks},
                          {"layers", g.layers}});
  return json{{"world_size", p.worldSize},
              {"groups", std::move(groups)},
              {"expert_to_rank", p.expertToRank},
              {"embedding_group", p.embeddingGroup},
              {"head_group", p.headGroup},
              {"embedding_side", p.embeddingOnFfn ? "ffn" : "attention"},
              {"head_side", p.headOnFfn ? "ffn" : "attention"}};
}

json programJson(const std::vector<Instruction> &program) {
  json list = json::array();
  for (const Instruction &ins : program) {
    json o{{"op", kOpCodes[static_cast<int>(ins.op)]},
           {"stream", kStreams[static_cast<int>(ins.stream)]}};
    if (ins.layer >= 0)
      o["layer"] = ins.layer;
    if (ins.op == OpCode::RmsNorm)
      o["role"] = kNormRoles[static_cast<int>(ins.role)];
    list.push_back(std::move(o));
  }
  return list;
}

} // namespace

std::string planToJson(const Plan &plan) {
  json root;
  root["format"] = kPlanFormat;
  root["version"] = kPlanVersion;
  root["source"] = plan.source;
  root["producer"] = plan.producer.empty() ? versionLine("disagmoe") : plan.producer;
  if (!plan.files.empty()) {
    json files = json::array();
    for (const WeightFileStamp &f : plan.files)
      files.push_back(json{{"path", f.path}, {"size", f.size}, {"mtime_ns", f.mtimeNs}});
    root["files"] = std::move(files);
  }
  root["model"] = modelJson(plan.model);
  root["placement"] = placementJson(plan.placement);
  root["programs"] = json{{"attention", programJson(plan.programs.attention)},
                          {"ffn", programJson(plan.programs.ffn)}};
  json exchanges = json::array();
  for (const ExchangeSpec &e : plan.exchanges) {
    json o;
    writeFields(exchangeFields(), e, o);
    o["layer"] = e.layer;
    o["src_group"] = e.srcGroup;
    o["dst_group"] = e.dstGroup;
    exchanges.push_back(std::move(o));
  }
  root["exchanges"] = std::move(exchanges);
  json ranks = json::array();
  for (size_t r = 0; r < plan.memory.weightBytes.size(); ++r) {
    json o{{"rank", r}, {"weight_bytes", plan.memory.weightBytes[r]}};
    if (r < plan.memory.activationBytes.size() && plan.memory.activationBytes[r])
      o["activation_bytes"] = *plan.memory.activationBytes[r];
    ranks.push_back(std::move(o));
  }
  root["memory"] = json{{"ranks", std::move(ranks)}};
  if (plan.schedule)
    root["schedule"] = sched::scheduleToJsonValue(*plan.schedule);
  return root.dump(2) + "\n";
}

std::string writePlan(const Plan &plan, const std::string &dir) noexcept {
  namespace fs = std::filesystem;
  try {
    if (dir.empty())
      return "-o: the output directory name is empty";
    std::error_code ec;
    const bool existed = fs::exists(dir, ec);
    if (existed && !fs::is_directory(dir, ec))
      return dir + ": exists and is not a directory";
    // Only the last component is created: a misspelt parent is refused (issue 17).
    if (const std::string why = outputDirRefusal(dir); !why.empty())
      return dir + ": " + why;
    if (!existed && (fs::create_directory(dir, ec), ec))
      return dir + ": cannot create directory: " + ec.message();
    const fs::path path = fs::path(dir) / "plan.json", tmp = fs::path(dir) / "plan.json.tmp";
    // Renaming over a symbolic link or a device would replace it rather than write through it.
    const fs::file_status status = fs::symlink_status(path, ec);
    if (!ec && fs::exists(status) && !fs::is_regular_file(status))
      return path.string() + ": refusing to replace it: not a regular file";
    auto failWith = [&](std::string message) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      if (!existed)
        fs::remove(dir, ignored); // only the directory we created, and only if empty
      return message;
    };
    const std::string text = planToJson(plan);
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out)
        return failWith(tmp.string() + ": cannot write: " + std::generic_category().message(errno));
      out << text;
      out.flush();
      if (!out)
        return failWith(tmp.string() + ": write failed: " + std::generic_category().message(errno));
    }
    fs::rename(tmp, path, ec);
    if (ec)
      return failWith(path.string() + ": cannot rename into place: " + ec.message());
    return "";
  } catch (const std::exception &e) {
    return dir + ": cannot write the plan: " + e.what();
  }
}

} // namespace disagmoe
