//===- Schedule.cpp - schedule data model and its JSON form -----------------===//
#include "runtime/plan/Schedule.h"
#include "runtime/plan/ScheduleJson.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

namespace disagmoe::sched {

using json = nlohmann::json;

const char *toString(Stream s) {
  switch (s) {
  case Stream::Forward:
    return "forward";
  case Stream::Backward:
    return "backward";
  case Stream::Comm:
    return "comm";
  }
  return "?";
}
const char *toString(Phase p) {
  switch (p) {
  case Phase::Forward:
    return "forward";
  case Phase::Backward:
    return "backward";
  case Phase::Update:
    return "update";
  }
  return "?";
}
const char *toString(Kind k) {
  switch (k) {
  case Kind::Compute:
    return "compute";
  case Kind::Send:
    return "send";
  case Kind::Recv:
    return "recv";
  case Kind::AllToAll:
    return "all_to_all";
  case Kind::AllReduce:
    return "all_reduce";
  case Kind::ReduceScatter:
    return "reduce_scatter";
  case Kind::AllGather:
    return "all_gather";
  }
  return "?";
}
bool isCollective(Kind k) {
  return k == Kind::AllReduce || k == Kind::ReduceScatter || k == Kind::AllGather;
}
const char *toString(Peers p) { return p == Peers::All ? "all" : "same"; }

int Schedule::worldSize() const {
  int world = 0;
  for (const Group &g : groups)
    for (const auto &replica : g.ranks)
      for (int r : replica)
        world = std::max(world, r + 1);
  return world;
}

const Program *Schedule::program(const std::string &role) const {
  for (const Program &p : programs)
    if (p.role == role)
      return &p;
  return nullptr;
}

namespace {
std::string groupName(const Schedule &s, int g) {
  if (g < 0 || g >= static_cast<int>(s.groups.size()))
    return "group #" + std::to_string(g);
  return s.groups[g].role + " " + std::to_string(s.groups[g].index);
}
} // namespace

std::string describe(const Schedule &s, int program, int index) {
  const Program &p = s.programs[program];
  const Instr &i = p.instrs[index];
  std::ostringstream os;
  os << p.role << "[" << index << "] (group " << groupName(s, i.group) << "): " << toString(i.kind)
     << " " << i.op << " " << toString(i.phase);
  if (i.mb >= 0)
    os << " mb " << i.mb;
  if (i.layer >= 0)
    os << " layer " << i.layer;
  if (i.kind == Kind::Send)
    os << " to " << groupName(s, i.peer);
  if (i.kind == Kind::Recv)
    os << " from " << groupName(s, i.peer);
  return os.str();
}

// ---- JSON -----------------------------------------------------------------------------------

namespace {
json instrToJson(const Instr &i) {
  json o;
  o["kind"] = toString(i.kind);
  o["op"] = i.op;
  o["stream"] = toString(i.stream);
  o["phase"] = toString(i.phase);
  o["group"] = i.group;
  if (i.mb >= 0)
    o["mb"] = i.mb;
  if (i.layer >= 0)
    o["layer"] = i.layer;
  if (i.kind == Kind::Send || i.kind == Kind::Recv)
    o["peer"] = i.peer;
  if (i.kind == Kind::Send || i.kind == Kind::Recv || isCollective(i.kind))
    o["peers"] = toString(i.peers);
  if (i.flops != 0)
    o["flops"] = i.flops;
  if (i.memBytes != 0)
    o["mem_bytes"] = i.memBytes;
  if (i.kind != Kind::Compute)
    o["bytes"] = i.bytes;
  if (i.activationBytes != 0)
    o["activation_bytes"] = i.activationBytes;
  if (!i.after.empty())
    o["after"] = i.after;
  return o;
}

class Reader {
public:
  explicit Reader(std::string &error) : error_(error) {}
  bool failed() const { return !error_.empty(); }
  void fail(const std::string &path, const std::string &what) {
    if (error_.empty())
      error_ = path + ": " + what;
  }
  const json *field(const json &o, const std::string &path, const char *key, bool required = true) {
    if (!o.is_object()) {
      fail(path, "expected an object");
      return nullptr;
    }
    auto it = o.find(key);
    if (it == o.end()) {
      if (required)
        fail(path + "." + key, "missing");
      return nullptr;
    }
    return &*it;
  }
  double number(const json &o, const std::string &path, const char *key, double def, bool required,
                double lo = 0) {
    const json *v = field(o, path, key, required);
    if (!v)
      return def;
    if (!v->is_number()) {
      fail(path + "." + key, "expected a number");
      return def;
    }
    double d = v->get<double>();
    if (!std::isfinite(d) || d < lo) {
      fail(path + "." + key, "must be a finite number >= " + std::to_string(lo));
      return def;
    }
    return d;
  }
  int integer(const json &o, const std::string &path, const char *key, int def, bool required,
              int lo, int hi) {
    const json *v = field(o, path, key, required);
    if (!v)
      return def;
    if (!v->is_number_integer()) {
      fail(path + "." + key, "expected an integer");
      return def;
    }
    int64_t d = v->get<int64_t>();
    if (d < lo || d > hi) {
      fail(path + "." + key, std::to_string(d) + " is out of range [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + "]");
      return def;
    }
    return static_cast<int>(d);
  }
  std::string string(const json &o, const std::string &path, const char *key,
                     bool required = true) {
    const json *v = field(o, path, key, required);
    if (!v)
      return "";
    if (!v->is_string()) {
      fail(path + "." + key, "expected a string");
      return "";
    }
    return v->get<std::string>();
  }
  template <typename E, size_t N>
  E choice(const json &o, const std::string &path, const char *key, const E (&values)[N], E def,
           bool required = true) {
    std::string s = string(o, path, key, required);
    if (s.empty())
      return def;
    for (E e : values)
      if (s == toString(e))
        return e;
    std::string expected;
    for (E e : values)
      expected += std::string(expected.empty() ? "" : ", ") + toString(e);
    fail(path + "." + key, "\"" + s + "\" is not one of " + expected);
    return def;
  }

private:
  std::string &error_;
};
} // namespace

json scheduleToJsonValue(const Schedule &s) {
  json root;
  root["kind"] = s.kind;
  root["replicas"] = s.replicas;
  root["micro_batches"] = s.microBatches;
  root["virtual_stages"] = s.virtualStages;
  root["pipeline_stages"] = s.pipelineStages;
  root["capacity_bytes"] = s.capacityBytes;
  root["model_flops"] = s.modelFlops;
  root["compute_efficiency"] = s.computeEfficiency;
  root["gpu_sharing"] = s.sharing == Schedule::Sharing::Equal      ? "equal"
                        : s.sharing == Schedule::Sharing::Backward ? "backward"
                                                                   : "exclusive";
  root["hardware"] = json{{"name", s.hw.name},
                          {"peak_flops", s.hw.peakFlops},
                          {"hbm_bandwidth", s.hw.hbmBandwidth},
                          {"hbm_bytes", s.hw.hbmBytes},
                          {"nvlink_bandwidth", s.hw.nvlinkBandwidth},
                          {"nic_bandwidth", s.hw.nicBandwidth},
                          {"gpus_per_node", s.hw.gpusPerNode}};
  json groups = json::array();
  for (const Group &g : s.groups) {
    json o{
        {"role", g.role}, {"index", g.index}, {"ranks", g.ranks}, {"static_bytes", g.staticBytes}};
    if (g.nicBandwidth > 0)
      o["nic_bandwidth"] = g.nicBandwidth;
    if (g.headLogitsBytes > 0)
      o["head_logits_bytes"] = g.headLogitsBytes;
    groups.push_back(std::move(o));
  }
  root["groups"] = std::move(groups);
  json programs = json::object();
  for (const Program &p : s.programs) {
    json list = json::array();
    for (const Instr &i : p.instrs)
      list.push_back(instrToJson(i));
    programs[p.role] = std::move(list);
  }
  root["programs"] = std::move(programs);
  return root;
}

std::string scheduleToJson(const Schedule &s, int indent) {
  return scheduleToJsonValue(s).dump(indent);
}

bool parseScheduleJson(const json &root, Schedule &s, std::string &error) {
  error.clear();
  Reader r(error);
  const std::string top = "schedule";
  if (!root.is_object()) {
    r.fail(top, "expected an object");
    return false;
  }
  s = Schedule();
  s.kind = r.string(root, top, "kind");
  s.replicas = r.integer(root, top, "replicas", 1, true, 1, 1 << 20);
  s.microBatches = r.integer(root, top, "micro_batches", 0, true, 1, 1 << 24);
  s.virtualStages = r.integer(root, top, "virtual_stages", 1, true, 1, 1 << 20);
  s.pipelineStages = r.integer(root, top, "pipeline_stages", 0, true, 1, 1 << 20);
  s.capacityBytes = r.number(root, top, "capacity_bytes", 0, true);
  s.modelFlops = r.number(root, top, "model_flops", 0, true);
  s.computeEfficiency = r.number(root, top, "compute_efficiency", 1, false, 1e-6);
  if (s.computeEfficiency > 1)
    r.fail(top + ".compute_efficiency", "must be in (0, 1]");
  std::string sharing = r.string(root, top, "gpu_sharing", false);
  if (sharing == "equal")
    s.sharing = Schedule::Sharing::Equal;
  else if (sharing == "backward")
    s.sharing = Schedule::Sharing::Backward;
  else if (sharing == "exclusive")
    s.sharing = Schedule::Sharing::Exclusive;
  else if (sharing.empty())
    s.sharing = Schedule::Sharing::Equal;
  else
    r.fail(top + ".gpu_sharing", "\"" + sharing + "\" is not equal, backward or exclusive");
  if (const json *hw = r.field(root, top, "hardware")) {
    const std::string p = top + ".hardware";
    s.hw.name = r.string(*hw, p, "name");
    s.hw.peakFlops = r.number(*hw, p, "peak_flops", 0, true, 1);
    s.hw.hbmBandwidth = r.number(*hw, p, "hbm_bandwidth", 0, true, 1);
    s.hw.hbmBytes = r.number(*hw, p, "hbm_bytes", 0, true, 0);
    s.hw.nvlinkBandwidth = r.number(*hw, p, "nvlink_bandwidth", 0, true, 1);
    s.hw.nicBandwidth = r.number(*hw, p, "nic_bandwidth", 0, true, 1);
    s.hw.gpusPerNode = r.integer(*hw, p, "gpus_per_node", 8, true, 1, 1 << 16);
  }
  if (const json *groups = r.field(root, top, "groups")) {
    if (!groups->is_array())
      r.fail(top + ".groups", "expected an array");
    else
      for (size_t gi = 0; gi < groups->size() && !r.failed(); ++gi) {
        const json &go = (*groups)[gi];
        const std::string p = top + ".groups[" + std::to_string(gi) + "]";
        Group g;
        g.role = r.string(go, p, "role");
        g.index = r.integer(go, p, "index", 0, true, 0, 1 << 20);
        g.staticBytes = r.number(go, p, "static_bytes", 0, true);
        g.nicBandwidth = r.number(go, p, "nic_bandwidth", 0, false);
        g.headLogitsBytes = r.number(go, p, "head_logits_bytes", 0, false);
        const json *ranks = r.field(go, p, "ranks");
        if (ranks) {
          bool ok = ranks->is_array() && !ranks->empty();
          for (size_t k = 0; ok && k < ranks->size(); ++k) {
            const json &rep = (*ranks)[k];
            ok = rep.is_array() && !rep.empty();
            std::vector<int> list;
            for (size_t q = 0; ok && q < rep.size(); ++q) {
              ok = rep[q].is_number_integer() && rep[q].get<int64_t>() >= 0 &&
                   rep[q].get<int64_t>() < (int64_t(1) << 24);
              if (ok)
                list.push_back(static_cast<int>(rep[q].get<int64_t>()));
            }
            g.ranks.push_back(std::move(list));
          }
          if (!ok)
            r.fail(p + ".ranks",
                   "expected a non-empty array (one per replica) of non-empty arrays of ranks");
        }
        s.groups.push_back(std::move(g));
      }
  }
  if (const json *programs = r.field(root, top, "programs")) {
    if (!programs->is_object())
      r.fail(top + ".programs", "expected an object (role -> instruction list)");
    else
      for (auto it = programs->begin(); it != programs->end() && !r.failed(); ++it) {
        Program prog;
        prog.role = it.key();
        const std::string pp = top + ".programs." + it.key();
        if (!it->is_array()) {
          r.fail(pp, "expected an array of instructions");
          break;
        }
        for (size_t k = 0; k < it->size() && !r.failed(); ++k) {
          const json &io = (*it)[k];
          const std::string p = pp + "[" + std::to_string(k) + "]";
          Instr i;
          static const Kind kinds[] = {Kind::Compute,  Kind::Send,      Kind::Recv,
                                       Kind::AllToAll, Kind::AllReduce, Kind::ReduceScatter,
                                       Kind::AllGather};
          static const Stream streams[] = {Stream::Forward, Stream::Backward, Stream::Comm};
          static const Phase phases[] = {Phase::Forward, Phase::Backward, Phase::Update};
          static const Peers peers[] = {Peers::All, Peers::Same};
          i.kind = r.choice(io, p, "kind", kinds, Kind::Compute);
          i.op = r.string(io, p, "op");
          i.stream = r.choice(io, p, "stream", streams, Stream::Forward);
          i.phase = r.choice(io, p, "phase", phases, Phase::Forward);
          i.group = r.integer(io, p, "group", 0, true, 0, static_cast<int>(s.groups.size()) - 1);
          i.mb = r.integer(io, p, "mb", -1, false, 0, s.microBatches - 1);
          i.layer = r.integer(io, p, "layer", -1, false, 0, 1 << 20);
          bool exchange = i.kind != Kind::Compute;
          bool p2p = i.kind == Kind::Send || i.kind == Kind::Recv;
          if (p2p)
            i.peer = r.integer(io, p, "peer", -1, true, 0, static_cast<int>(s.groups.size()) - 1);
          if (p2p || isCollective(i.kind))
            i.peers = r.choice(io, p, "peers", peers, Peers::All);
          i.flops = r.number(io, p, "flops", 0, false);
          i.memBytes = r.number(io, p, "mem_bytes", 0, false);
          i.bytes = r.number(io, p, "bytes", 0, exchange);
          i.activationBytes = r.number(io, p, "activation_bytes", 0, false);
          if (const json *after = r.field(io, p, "after", false)) {
            bool ok = after->is_array();
            for (size_t q = 0; ok && q < after->size(); ++q) {
              ok = (*after)[q].is_number_integer() && (*after)[q].get<int64_t>() >= 0 &&
                   (*after)[q].get<int64_t>() < static_cast<int64_t>(it->size());
              if (ok)
                i.after.push_back(static_cast<int>((*after)[q].get<int64_t>()));
            }
            if (!ok)
              r.fail(p + ".after", "expected an array of instruction indices of this program");
          }
          prog.instrs.push_back(std::move(i));
        }
        s.programs.push_back(std::move(prog));
      }
  }
  return !r.failed();
}

bool scheduleFromJson(const std::string &text, Schedule &out, std::string &error) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    error = "schedule: invalid JSON";
    return false;
  }
  return parseScheduleJson(root, out, error);
}

} // namespace disagmoe::sched
